"""Whether the latest SGLang starts an sglang launch line written beside another engine's plan.

Priced on vLLM or TensorRT-LLM, a plan still writes SGLang's line for its layout (``core.cost.search``) and, for a
disaggregated split, SGLang's workers (``core.cost.disaggregated_launch``). Such a line copies the plan's step budget
into ``--chunked-prefill-size``: under DP attention the ranks' budgets summed, which SGLang divides over its ranks
only after it has sized its default ``--mem-fraction-static`` reserve from the whole chunk (1.5 MiB a token: 0.5.9
``server_args.py``, ``_handle_gpu_memory_settings`` before ``_handle_data_parallelism``). The line is priced here as
SGLang would run it (its default fraction, vLLM's own settings cleared) and left out, with SGLang's words, where
SGLang would not start it (trial 365 #1, reviews 370 and 373). Pure Python.
"""

from __future__ import annotations

from mha_cli.core.errors import MhaError
from mha_cli.core.schemas import DeploymentSpec, ModelSpec

VLLM_ONLY_UNSET = {
    "kv_cache_memory_bytes": None, "kv_connector": None, "vllm_sampler": None, "vllm_awq_kernel": None,
    "vllm_mxfp4_kernel": None, "vllm_fp8_linear_kernel": None, "async_scheduling": None,
}  # fmt: skip
"""Deployment settings vLLM's line alone carries (``--kv-cache-memory-bytes``, its connector, kernels and async
scheduling), unset where the sglang line beside a vLLM plan is priced (review 370 #2)."""


def sglang_line_stops(
    model: ModelSpec, deployment: DeploymentSpec, target_id: str, gpus: int, tp: int, dp: int | None,
    max_running: int | None, chunk: int, context: int,
) -> str | None:  # fmt: skip
    """Why the latest SGLang would not start a line of ``gpus`` GPUs of ``target_id`` at ``tp`` (``dp``: its
    DP-attention ranks, None for the deployment's own), ``--context-length`` ``context``, ``max_running`` requests a
    replica (None: SGLang's default) and ``--chunked-prefill-size`` ``chunk`` (the ranks' summed), at its default
    fraction, in its own words; None where it starts, or where the plan cannot be made (the line is then kept
    unchecked)."""
    from mha_cli.core.engine.settings import SGLANG_RESERVE_EXHAUSTED
    from mha_cli.core.kv import footprint_for
    from mha_cli.core.memory import plan_memory
    from mha_cli.core.targets import resolve_target

    line = deployment.model_copy(
        update={"engine": "sglang", "engine_generation": None, "engine_version": None, "tp": tp,
                "dp": dp if dp is not None else deployment.dp, "gpu_memory_utilization": None,
                "max_num_seqs": max_running, "max_num_batched_tokens": chunk, "seq_len": context,
                "max_model_len": None, **VLLM_ONLY_UNSET},  # the engine at its context, as the plan prices it
    )  # fmt: skip
    try:
        memory = plan_memory(
            resolve_target(f"{gpus}x{target_id}"), model=model, weight_dtype=line.weight_dtype,
            kv=footprint_for(model, line, tp), deployment=line,
        )  # fmt: skip
    except MhaError as exc:  # review 370 #1: a reserve larger than the GPU is SGLang refusing to start too
        if str(exc).startswith(SGLANG_RESERVE_EXHAUSTED):  # its own words, less the way out for a line not written
            return f"SGLang would not start it as written: {str(exc).split(': give')[0]}"
        return None
    if memory.engine.starts or memory.engine.refused_outright:  # a KV format SGLang lacks: the format notes say it
        return None
    return (
        f"SGLang would not start it as written (--context-length {context}, --chunked-prefill-size {chunk},"
        f" its default --mem-fraction-static: {memory.engine.refusal}); --engine sglang prices an SGLang deployment"
        " with SGLang's own settings"
    )
