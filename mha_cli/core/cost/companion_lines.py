"""Whether an engine starts the launch line written for it beside another engine's plan.

A plan priced on one engine still writes the others' lines for its layout (``core.cost.search``) and, for a
disaggregated split, SGLang's workers (``core.cost.disaggregated_launch``). Such a line copies the plan's caps and
step budget, which the other engine may not start with: vLLM's pool at its default utilisation (trial 347 #1), or
SGLang's ``--chunked-prefill-size`` under DP attention, the ranks' budgets summed, which SGLang divides over its ranks
only after it has sized its default ``--mem-fraction-static`` reserve from the whole chunk (1.5 MiB a token: 0.5.9
``server_args.py``, ``_handle_gpu_memory_settings`` before ``_handle_data_parallelism``; trial 365 #1, reviews 370
and 373). Each line is priced here as its engine would run it and left out, with that engine's words, where it would
not start. Pure Python.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mha_cli.core.errors import MhaError
from mha_cli.core.schemas import DeploymentSpec, ModelSpec

if TYPE_CHECKING:
    from mha_cli.core.memory import MemoryPlan

VLLM_ONLY_UNSET = {
    "kv_cache_memory_bytes": None, "kv_connector": None, "vllm_sampler": None, "vllm_awq_kernel": None,
    "vllm_mxfp4_kernel": None, "vllm_fp8_linear_kernel": None, "async_scheduling": None,
}  # fmt: skip
"""Deployment settings vLLM's line alone carries (``--kv-cache-memory-bytes``, its connector, kernels and async
scheduling), unset where the sglang line beside a vLLM plan is priced (review 370 #2)."""


def _priced(model: ModelSpec, line: DeploymentSpec, target_id: str, gpus: int, tp: int) -> MemoryPlan:
    """The memory plan of ``line`` on ``gpus`` GPUs of ``target_id`` at ``tp``, at its engine's context."""
    from mha_cli.core.kv import footprint_for
    from mha_cli.core.memory import plan_memory
    from mha_cli.core.targets import resolve_target

    return plan_memory(
        resolve_target(f"{gpus}x{target_id}"), model=model, weight_dtype=line.weight_dtype,
        kv=footprint_for(model, line, tp), deployment=line,
    )  # fmt: skip


def vllm_line_stops(
    model: ModelSpec, deployment: DeploymentSpec, target_id: str, gpus: int, tp: int, max_num_seqs: int, budget: int,
    context: int,
) -> str | None:  # fmt: skip
    """Why the latest vLLM would not start a line of ``gpus`` GPUs of ``target_id`` at ``tp``, ``--max-model-len``
    ``context``, ``--max-num-seqs`` and ``--max-num-batched-tokens`` ``budget``, at its default utilisation, in its own
    words; None where it starts, or the plan cannot be made (the line is then kept unchecked)."""
    line = deployment.model_copy(
        update={"engine": "vllm", "engine_generation": None, "engine_version": None, "tp": tp, "dp": None,
                "gpu_memory_utilization": None, "max_num_seqs": max_num_seqs, "max_num_batched_tokens": budget,
                "seq_len": context, "max_model_len": None},  # the engine at its context, as the plan prices it
    )  # fmt: skip
    try:
        memory = _priced(model, line, target_id, gpus, tp)
    except MhaError:
        return None
    if memory.engine.starts or memory.engine.refused_outright:  # a KV format vLLM lacks: the format notes say it
        return None
    return (
        f"vLLM would not start it as written (--max-model-len {context}, --max-num-seqs {max_num_seqs},"
        f" --max-num-batched-tokens {budget}, utilisation 0.9: {memory.engine.refusal}); --engine vllm prices a vLLM"
        " deployment with vLLM's own settings"
    )


def sglang_line_stops(
    model: ModelSpec, deployment: DeploymentSpec, target_id: str, gpus: int, tp: int, dp: int | None,
    max_running: int | None, chunk: int, context: int, *, reserve_only: bool = False,
) -> str | None:  # fmt: skip
    """Why the latest SGLang would not start a line of ``gpus`` GPUs of ``target_id`` at ``tp`` (``dp``: its
    DP-attention ranks, None for the deployment's own), ``--context-length`` ``context``, ``max_running`` requests a
    replica (None: SGLang's default) and ``--chunked-prefill-size`` ``chunk`` (the ranks' summed), at its default
    fraction, in its own words; None where it starts, or where the plan cannot be made (the line is then kept
    unchecked). ``reserve_only``: only where its default reserve, sized from the chunk and the GPU alone, leaves
    nothing (a line of pipeline stages, whose pool is not priced alike here: trial 385 #1)."""
    from mha_cli.core.engine.settings import SGLANG_RESERVE_EXHAUSTED

    line = deployment.model_copy(
        update={"engine": "sglang", "engine_generation": None, "engine_version": None, "tp": tp,
                "dp": dp if dp is not None else deployment.dp, "gpu_memory_utilization": None,
                "max_num_seqs": max_running, "max_num_batched_tokens": chunk, "seq_len": context,
                "max_model_len": None, **VLLM_ONLY_UNSET},  # the engine at its context, as the plan prices it
    )  # fmt: skip
    try:
        memory = _priced(model, line, target_id, gpus, tp)
    except MhaError as exc:  # review 370 #1: a reserve larger than the GPU is SGLang refusing to start too
        if str(exc).startswith(SGLANG_RESERVE_EXHAUSTED):  # its own words, less the way out for a line not written
            return f"SGLang would not start it as written: {str(exc).split(': give')[0]}"
        return None
    if reserve_only or memory.engine.starts or memory.engine.refused_outright:  # a KV format SGLang lacks: notes
        return None
    return (
        f"SGLang would not start it as written (--context-length {context}, --chunked-prefill-size {chunk},"
        f" its default --mem-fraction-static: {memory.engine.refusal}); --engine sglang prices an SGLang deployment"
        " with SGLang's own settings"
    )
