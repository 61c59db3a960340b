"""Which engine releases run a prompt's steps outside CUDA graphs, so that every operator of a prefill step is
launched by the host while the device waits for it where the launches outrun its work.

- ``sglang-0.4``, ``sglang-0.5``: SGLang replays CUDA graphs of decode batches only: ``model_runner.py`` runs a
  graph where ``ForwardMode.is_cuda_graph()`` (``model_executor/forward_batch_info.py``: DECODE, TARGET_VERIFY,
  IDLE) holds and the graph runner can run the batch; an EXTEND (prefill) or MIXED batch runs the model's modules
  eagerly. Up to 0.5.9, capturing prefill is the experimental ``--enable-piecewise-cuda-graph`` (SGLang docs,
  ``advanced_features/piecewise_cuda_graph.md``), off unless launched with it; no row priced here names it.

From 0.5.10 SGLang captures prefill by default on NVIDIA GPUs (read in the 0.5.10 and 0.5.11 wheels from PyPI):
``server_args.py`` turns ``enable_piecewise_cuda_graph: bool = False`` (0.5.6-0.5.9) into
``disable_piecewise_cuda_graph: bool = False``, and ``_handle_piecewise_cuda_graph`` turns it off again for, of what
mha expresses (``graphs_off``): pp > 1; DP attention; an MoE all-to-all backend (``--moe-a2a-backend`` not none);
a multimodal model (a vision tower); the hierarchical cache (``--kv-offload-gib``: ``enable_hierarchical_cache``);
the architectures of ``configs/model_config.py`` ``piecewise_cuda_graph_disabled_model_archs``
(``DISABLED_FAMILIES``); a non-CUDA device (``is_hip()``: AMD); and in 0.5.10 speculative decoding. 0.5.11 drops
speculative decoding from that list (PR #22128), but an EAGLE-family target's prompt asks for every hidden state,
which ``piecewise_cuda_graph_runner.py`` ``can_run`` refuses (``SPECULATIVE_GRAPHED_FROM``), and the drafter's
prompt never runs in them (``model_runner.py`` ``init_piecewise_cuda_graphs``: "Draft models use decode CUDA
graphs"): only a separate draft model's target is graphed there. Not expressed, so not priced: torch compile, LoRA,
GGUF, ``--cpu-offload-gb``, deterministic inference, symmetric memory, the expert distribution recorder, context
parallelism; PD disaggregation (also on the list) is priced by ``core.cost.disaggregated``, which never asks.
``can_run`` then graphs a prefill batch of at most ``piecewise_cuda_graph_max_tokens`` tokens: the chunked prefill
size, 2048 for an MLA model (``MLA_GRAPH_TOKENS``); a prompt step of more runs eagerly, priced per step here.
0.5.3 has no piecewise graphs at all. A plan that names no release (``--engine sglang`` or ``sglang-0.5``) is
priced as the latest release read (``LATEST_READ``), as ``--engine vllm`` is its latest generation; a measured row
naming none (``benchmarks/fit_priors.py``) keeps the eager pricing it had (``UNDATED_MEASUREMENT``). Later releases
(0.5.23 rewrote the graphs as ``model_executor/cuda_graph_config.py``) are priced with 0.5.11's rules.

A prefill step on such an engine costs max(its device work and kernels' fixed costs, the operators SGLang's model
code launches one by one x the host's time per operator) (``core.cost.step.step_time``'s ``launch_s``; the operators
counted from the model source in ``core.engine.sglang_eager_ops``). The time per operator is the generation's
``prefill_dispatch_overhead_s`` (``benchmarks/fit_priors.py --set 2025 --prefill``: fitted on the mean TTFT of the
generation's `fit` sources' one-user rows alone), else the constants' ``dispatch_overhead_s`` (an operator dispatched
eagerly by torch). vLLM V1 captures piecewise graphs of mixed and prefill batches up to its largest capture size, and
TensorRT-LLM's PyTorch backend runs its own; neither is priced this way. Pure Python.
"""

import re
from typing import Any, Protocol


class PrefillCase(Protocol):
    """What the graph rules read of a serving case (``core.cost.stepper.ServingCase`` has it; named here, not
    imported, so that the engine rules do not import the cost model that imports them)."""

    model: Any
    speculative: Any
    experts: Any
    pp: int
    tp: int
    host_kv_cache: bool
    drafts_for: Any
    chunk_tokens: int


GRAPHLESS_PREFILL: dict[str, str] = {
    "sglang-0.4": "SGLang graphs decode batches only (forward_batch_info.py ForwardMode.is_cuda_graph)",
    "sglang-0.5": "SGLang graphs decode batches only (forward_batch_info.py ForwardMode.is_cuda_graph) before 0.5.10;"
    " piecewise prefill graphs are the experimental --enable-piecewise-cuda-graph (server_args.py 0.5.6-0.5.9)",
}
"""The generations whose prefill steps can launch their operators from the host, and where that was read."""

PIECEWISE_PREFILL_FROM = (0, 5, 10)
"""The first SGLang release whose prefill runs in piecewise CUDA graphs by default on NVIDIA GPUs (server_args.py
0.5.10 ``disable_piecewise_cuda_graph: bool = False``; 0.5.9: ``enable_piecewise_cuda_graph: bool = False``)."""

LATEST_READ = "0.5.11"
"""The latest SGLang release whose piecewise-graph rules were read (the 0.5.11 wheel): what ``--engine sglang``
without a release is priced as."""

UNDATED_MEASUREMENT = "0.5.9"
"""What a measured row naming no SGLang release is priced as (``benchmarks/fit_priors.py``): eager, as every such
row was priced before a plan naming no release meant ``LATEST_READ``."""

SPECULATIVE_GRAPHED_FROM = (0, 5, 11)
"""From 0.5.11 speculative decoding no longer turns the graphs off (PR #22128, ``_handle_piecewise_cuda_graph``);
an EAGLE-family target's prompt still runs eager: ``eagle_worker.py`` ``forward_target_extend`` asks for
``CaptureHiddenMode.FULL`` and ``piecewise_cuda_graph_runner.py`` ``can_run`` refuses a batch whose mode is not the
runner's (NULL)."""

DISABLED_FAMILIES: dict[str, str] = {
    "deepseek_v32": "DeepseekV32ForCausalLM",
    "qwen3_next": "Qwen3NextForCausalLM",
    "glm_moe_dsa": "GlmMoeDsaForCausalLM",
}
"""The model types of ``configs/model_config.py`` ``piecewise_cuda_graph_disabled_model_archs`` (0.5.10, 0.5.11)
that mha has a family for -> the architecture SGLang lists (BailingMoeV2_5 and LLaDA have none here)."""

MLA_GRAPH_TOKENS = 2048
"""``server_args.py`` (0.5.10) ``piecewise_cuda_graph_max_tokens`` for an MLA model; others: the chunked prefill
size."""

_RELEASE = re.compile(r"v?(\d+)\.(\d+)\.(\d+)")


def release_triple(release: str | None) -> tuple[int, int, int] | None:
    """``0.5.10.post1`` -> (0, 5, 10); None for no release, a commit or a dev build (``0.0.0.dev1+g93fca0b``)."""
    match = _RELEASE.match(release.strip()) if release else None
    if match is None:
        return None
    triple = (int(match.group(1)), int(match.group(2)), int(match.group(3)))
    return None if triple == (0, 0, 0) else triple


def graphed_release(generation: str | None, release: str | None = None, vendor: str | None = None) -> str | None:
    """The SGLang release whose piecewise prefill graphs price ``generation`` typed as ``release`` on a ``vendor``
    GPU: ``release`` itself from 0.5.10, ``LATEST_READ`` where none is named; None where its prefill runs eagerly
    (not an SGLang generation, an earlier release or a commit, sglang-0.4, a GPU other than NVIDIA's)."""
    if generation not in GRAPHLESS_PREFILL or vendor is None or vendor.lower() != "nvidia":
        return None
    if release is None:
        return LATEST_READ if generation == "sglang-0.5" else None
    triple = release_triple(release)
    return release if triple is not None and triple >= PIECEWISE_PREFILL_FROM else None


def graphless_prefill(generation: str | None, release: str | None = None, vendor: str | None = None) -> bool:
    """Whether every prefill step of ``generation`` (``release`` on a ``vendor`` GPU) runs eagerly, whatever the
    deployment: an SGLang generation with no piecewise prefill graphs (``graphed_release`` None)."""
    return generation in GRAPHLESS_PREFILL and graphed_release(generation, release, vendor) is None


def prefill_launch_s(generation: str | None, constants: dict[str, float]) -> float:
    """The host's time per eagerly launched operator of a prefill step (seconds) for ``generation`` with
    ``constants``: the fitted ``prefill_dispatch_overhead_s`` where the constants hold one, else their
    ``dispatch_overhead_s``, for every SGLang generation (a graphed release still runs some steps eagerly,
    ``graphs_off``); 0 for any other engine, or without a generation (the default constants' fit priced none)."""
    if generation not in GRAPHLESS_PREFILL:
        return 0.0
    return constants.get("prefill_dispatch_overhead_s", constants["dispatch_overhead_s"])


def graphs_off(case: PrefillCase, release: str) -> str | None:
    """Why SGLang ``release`` (0.5.10 or later, NVIDIA) runs every prefill step of ``case`` eagerly, in one line
    naming where that was read; None: its prompt steps up to ``graph_tokens`` run in piecewise CUDA graphs."""
    where = f"SGLang {release} server_args.py _handle_piecewise_cuda_graph"
    spec, model = case.speculative, case.model
    if case.pp > 1:
        return f"pp {case.pp} > 1 turns the piecewise CUDA graphs off ({where})"
    experts = case.experts
    if experts is not None and experts.a2a_backend != "none":
        return f"the MoE all-to-all backend {experts.a2a_backend} turns the piecewise CUDA graphs off ({where})"
    if experts is not None and (experts.dp_attention or experts.ranks > case.tp):
        return f"DP attention turns the piecewise CUDA graphs off ({where})"
    if model.vision is not None:
        return f"a multimodal model (vision tower) turns the piecewise CUDA graphs off ({where}: is_multimodal)"
    if model.family in DISABLED_FAMILIES:
        return (
            f"{DISABLED_FAMILIES[model.family]} is in piecewise_cuda_graph_disabled_model_archs"
            f" (SGLang {release} configs/model_config.py): no piecewise CUDA graphs"
        )
    if case.host_kv_cache:
        return f"the hierarchical cache (--kv-offload-gib) turns the piecewise CUDA graphs off ({where})"
    if case.drafts_for is not None:
        return f"the drafter's prompt runs outside the piecewise CUDA graphs (SGLang {release} model_runner.py)"
    if spec is not None:
        triple = release_triple(release) or PIECEWISE_PREFILL_FROM
        if triple < SPECULATIVE_GRAPHED_FROM:
            return f"speculative decoding turns the piecewise CUDA graphs off ({where})"
        if spec.method != "draft_model":
            return (
                f"{spec.method}'s target prompt captures every hidden state, which SGLang {release}'s piecewise"
                " CUDA graphs do not run (piecewise_cuda_graph_runner.py can_run)"
            )
    return None


def graph_tokens(case: PrefillCase) -> int:
    """The most prompt tokens one step runs in SGLang's piecewise CUDA graphs (``piecewise_cuda_graph_runner.py``
    ``can_run``): ``piecewise_cuda_graph_max_tokens``, the chunked prefill size, 2048 for an MLA model."""
    mla = case.model.attention.mla is not None
    return min(case.chunk_tokens, MLA_GRAPH_TOKENS) if mla else case.chunk_tokens
