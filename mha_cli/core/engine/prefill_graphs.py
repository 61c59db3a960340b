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
0.5.3 has no piecewise graphs at all. 0.5.12 and 0.5.13 keep these rules; 0.5.13's architecture list drops
DeepseekV32 and GlmMoeDsa (``DISABLED_FAMILIES_UNTIL``). 0.5.14 moves them into ``model_executor/cuda_graph_config.py``
(prefill backend ``tc_piecewise``, the same torch.compile piecewise graphs and rules); from 0.5.15 the prefill
backend on CUDA is ``breakable`` (``default_prefill_backend``, ``BREAKABLE_PREFILL_FROM``), with its own, shorter
list (``_breakable_off``): the hierarchical cache, an EAGLE-family target and its drafter no longer turn the graphs
off, DP attention from 0.5.17, an MLA model from 0.5.18, Qwen3.5's vision models from 0.5.16; pp > 1 does again
from 0.5.19, and DeepSeek-V3 on an SM100 GPU does (``DEEPSEEK_TRTLLM_MLA``). Its token limit is the same prefill
``max_bs`` (``graph_tokens``: the chunked prefill size, 2048 for MLA, from 0.5.23 up to 8192; 4096 for Llama-2).
A plan that names no release (``--engine sglang`` or ``sglang-0.5``) is priced as the newest release read
(``LATEST_READ``, which ``core.engine.releases_read.NEWEST_READ`` names too: the release the flags table stops at),
as ``--engine vllm`` is its latest generation; a measured row naming none (``benchmarks/fit_priors.py``) keeps the
eager pricing it had (``UNDATED_MEASUREMENT``). A later release is priced with ``LATEST_READ``'s rules.

A prefill step on such an engine costs max(its device work and kernels' fixed costs, the operators SGLang's model
code launches one by one x the host's time per operator) (``core.cost.step.step_time``'s ``launch_s``; the operators
counted from the model source in ``core.engine.sglang_eager_ops``). The time per operator is the generation's
``prefill_dispatch_overhead_s`` (``benchmarks/fit_priors.py --set 2025 --prefill``: fitted on the mean TTFT of the
generation's `fit` sources' one-user rows alone) unless it carries a measured one for the GPU's vendor
(``core.engine.eager_launch``, held fixed by the fit), else the constants' ``dispatch_overhead_s`` (an operator dispatched
eagerly by torch). vLLM V1 captures piecewise graphs of mixed and prefill batches up to its largest capture size, and
TensorRT-LLM's PyTorch backend runs its own; neither is priced this way. Pure Python.
"""

import re
from typing import Any, Protocol

from mha_cli.core.engine.eager_launch import measured_launch


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

LATEST_READ = "0.5.23"
"""The newest SGLang release read, the one constant for it: its server arguments (the flags table), its prefill-graph
rules (read in every wheel from 0.5.10 to it) and its step defaults (``core.engine.settings``); what ``--engine
sglang`` without a release is priced as, and what ``core.engine.releases_read.NEWEST_READ`` names for SGLang."""

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
"""The model types of ``configs/model_config.py`` ``piecewise_cuda_graph_disabled_model_archs`` (0.5.10-0.5.14)
that mha has a family for -> the architecture SGLang lists (BailingMoeV2_5, LLaDA and, from 0.5.12, DeepseekV4 have
none here)."""

DISABLED_FAMILIES_UNTIL: dict[str, tuple[int, int, int]] = {"deepseek_v32": (0, 5, 13), "glm_moe_dsa": (0, 5, 13)}
"""The listed families 0.5.13's ``piecewise_cuda_graph_disabled_model_archs`` no longer lists (0.5.12 still does)."""

BREAKABLE_PREFILL_FROM = (0, 5, 15)
"""The first release whose prefill backend on CUDA is ``breakable`` (``model_executor/cuda_graph_config.py``
``default_prefill_backend``, 0.5.15; 0.5.14's ``CudaGraphConfig`` defaults to ``tc_piecewise``)."""

BREAKABLE_MULTIMODAL: dict[str, tuple[int, int, int]] = {
    family: (0, 5, 16) for family in ("qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text")
}
"""The families whose vision models keep the breakable prefill graphs -> the first release that lists them in
``configs/model_config.py`` ``multimodal_breakable_cuda_graph_supported_model_archs`` (Qwen3_5ForConditionalGeneration
and Qwen3_5MoeForConditionalGeneration from 0.5.16 to 0.5.23; 0.5.15's list is empty; the others listed have no
family here)."""

DEEPSEEK_TRTLLM_MLA = "deepseek_v3"
"""From 0.5.15 a DeepseekV3ForCausalLM model on an SM100 GPU (compute capability 10.x) runs its prefill eagerly:
``arg_groups/overrides.py`` (0.5.15-0.5.18; ``model_overrides/deepseek_v2.py`` from 0.5.19) picks ``trtllm_mla``
there when no attention backend is given, and ``_disable_prefill_cuda_graph_for_deepseek_trtllm_mla``
(``server_args.py``; ``arg_groups/cuda_graph_hook.py`` from 0.5.19) then turns the prefill graphs off. SGLang's
``is_sm100_supported`` is not in the wheel; read here as a compute capability of 10.x (B200, B300)."""

DSA_FAMILIES = ("deepseek_v32", "glm_moe_dsa")
"""The MLA families with DSA (sparse) attention, which 0.5.17's breakable list exempts ("MLA attention (non-DSA)")."""

MLA_GRAPH_TOKENS = 2048
"""``server_args.py`` (0.5.10-0.5.18; ``arg_groups/memory_hook.py`` 0.5.19-0.5.22) ``piecewise_cuda_graph_max_tokens``,
then the prefill ``max_bs``, for an MLA model ("To avoid the performance regression, we set max_bs to 2048"); others:
the chunked prefill size."""

MLA_GRAPH_TOKENS_FROM = ((0, 5, 23), 8192)
"""From 0.5.23 an MLA model's prefill graphs take up to min(8192, the chunked prefill size) tokens
(``arg_groups/memory_hook.py``: "cap MLA capture at 8192 tokens")."""

LLAMA_2_GRAPH_TOKENS = 4096
"""A model whose path names Llama-2 captures at most 4096 prompt tokens (``"llama-2" in model_path.lower()``:
``server_args.py`` 0.5.10-0.5.18, ``arg_groups/memory_hook.py`` 0.5.19-0.5.23)."""

_RELEASE = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+))?(.*)$", re.DOTALL)

LINE_NEWEST = 10**6
"""The patch a release line stands for (``sglang@0.5``: its newest patch, past every number read), as the launch
lines' ``core.engine.release_numbers.release_key`` takes a minor alone."""


def release_triple(release: str | None) -> tuple[int, int, int] | None:
    """``0.5.10.post1`` -> (0, 5, 10); a line, ``0.5``, -> (0, 5, ``LINE_NEWEST``): its newest patch; None for no
    release, a commit or a dev build (``0.0.0.dev1+g93fca0b``)."""
    match = _RELEASE.match(release.strip()) if release else None
    if match is None:
        return None
    if match.group(3) is not None:
        patch = int(match.group(3))
    else:  # 0.5 alone is the line (its newest patch); 0.5rc1 or 0.5.post1 is a release of 0.5.0
        patch = LINE_NEWEST if match.group(4).strip().lower() in ("", ".x") else 0
    triple = (int(match.group(1)), int(match.group(2)), patch)
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


def prefill_launch_s(generation: str | None, constants: dict[str, float], vendor: str | None = None) -> float:
    """The host's time per eagerly launched operator of a prefill step (seconds) for ``generation`` on ``vendor``'s
    GPUs with ``constants``: the measured one the generation carries for the vendor
    (``core.engine.eager_launch.measured_launch``), else the fitted ``prefill_dispatch_overhead_s`` where the
    constants hold one, else their ``dispatch_overhead_s``, for every SGLang generation (a graphed release still runs
    some steps eagerly, ``graphs_off``); 0 for any other engine, or without a generation (the default constants' fit
    priced none)."""
    if generation not in GRAPHLESS_PREFILL:
        return 0.0
    measured = measured_launch(generation, vendor)
    if measured is not None:
        return measured.seconds
    return constants.get("prefill_dispatch_overhead_s", constants["dispatch_overhead_s"])


def graphs_off(case: PrefillCase, release: str, compute_capability: float | None = None) -> str | None:
    """Why SGLang ``release`` (0.5.10 or later, NVIDIA) runs every prefill step of ``case`` eagerly on a GPU of
    ``compute_capability`` (None: not known), in one line naming where that was read; None: its prompt steps up to
    ``graph_tokens`` run in CUDA graphs."""
    triple = release_triple(release) or PIECEWISE_PREFILL_FROM
    if triple >= BREAKABLE_PREFILL_FROM:
        return _breakable_off(case, release, triple, compute_capability)
    return _piecewise_off(case, release, triple)


def _piecewise_off(case: PrefillCase, release: str, triple: tuple[int, int, int]) -> str | None:
    """``graphs_off`` for 0.5.10-0.5.14's torch.compile piecewise graphs (``_handle_piecewise_cuda_graph``; 0.5.14:
    ``_disable_tc_piecewise_cudagraph_if_incompatible``, the same list)."""
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
    if model.family in DISABLED_FAMILIES and triple < DISABLED_FAMILIES_UNTIL.get(model.family, (9, 9, 9)):
        return (
            f"{DISABLED_FAMILIES[model.family]} is in piecewise_cuda_graph_disabled_model_archs"
            f" (SGLang {release} configs/model_config.py): no piecewise CUDA graphs"
        )
    if case.host_kv_cache:
        return f"the hierarchical cache (--kv-offload-gib) turns the piecewise CUDA graphs off ({where})"
    if case.drafts_for is not None:
        return f"the drafter's prompt runs outside the piecewise CUDA graphs (SGLang {release} model_runner.py)"
    if spec is not None:
        if triple < SPECULATIVE_GRAPHED_FROM:
            return f"speculative decoding turns the piecewise CUDA graphs off ({where})"
        if spec.method != "draft_model":
            return (
                f"{spec.method}'s target prompt captures every hidden state, which SGLang {release}'s piecewise"
                " CUDA graphs do not run (piecewise_cuda_graph_runner.py can_run)"
            )
    return None


def _breakable_off(
    case: PrefillCase, release: str, triple: tuple[int, int, int], compute_capability: float | None
) -> str | None:
    """``graphs_off`` for the breakable prefill graphs of 0.5.15 on (``_disable_breakable_cudagraph_if_incompatible``:
    ``server_args.py`` 0.5.15-0.5.18, ``arg_groups/cuda_graph_hook.py`` 0.5.19-0.5.23). Of what mha expresses: DP
    attention (0.5.15-0.5.16), an all-to-all backend (0.5.15-0.5.16; from 0.5.17 only one outside none, deepep,
    megamoe, flashinfer), an MLA model (0.5.15-0.5.16; 0.5.17 unless DSA), NemotronH (0.5.17), a multimodal model
    but those of ``configs/model_config.py`` ``multimodal_breakable_cuda_graph_supported_model_archs``
    (``BREAKABLE_MULTIMODAL``), KDA linear attention (0.5.20 on), pp > 1 (0.5.19 on:
    ``apply_cuda_graph_compatibility``), DeepSeek-V3 on an SM100 GPU (``DEEPSEEK_TRTLLM_MLA``). An EAGLE-family
    target and its drafter run their prompts in these graphs (``prefill_cuda_graph_runner.py``:
    ``CaptureHiddenMode.FULL`` for a breakable EAGLE target, LAST for its draft worker, whose prefill graph
    ``eagle_worker_v2.py`` ``init_cuda_graphs`` captures when the backend is breakable);
    a separate draft model's own prompt stays eager here (its runner captures no hidden state: not read further)."""
    where = f"SGLang {release} _disable_breakable_cudagraph_if_incompatible"
    model, experts = case.model, case.experts
    if case.pp > 1 and triple >= (0, 5, 19):
        return (
            f"pp {case.pp} > 1 turns the breakable prefill CUDA graphs off"
            f" (SGLang {release} arg_groups/cuda_graph_hook.py apply_cuda_graph_compatibility)"
        )
    early = triple < (0, 5, 17)
    if early and experts is not None and experts.a2a_backend != "none":
        return f"the MoE all-to-all backend {experts.a2a_backend} turns the breakable prefill CUDA graphs off ({where})"
    if early and experts is not None and (experts.dp_attention or experts.ranks > case.tp):
        return f"DP attention turns the breakable prefill CUDA graphs off ({where})"
    mla = model.attention.mla is not None
    if mla and (early or (triple < (0, 5, 18) and model.family not in DSA_FAMILIES)):
        return f"an MLA model turns the breakable prefill CUDA graphs off ({where})"
    if model.family == "nemotron_h" and triple == (0, 5, 17):
        return f"NemotronH turns the breakable prefill CUDA graphs off ({where})"
    allowed_from = BREAKABLE_MULTIMODAL.get(model.family or "")
    if model.vision is not None and (allowed_from is None or triple < allowed_from):
        return f"a multimodal model (vision tower) turns the breakable prefill CUDA graphs off ({where})"
    if model.family == DEEPSEEK_TRTLLM_MLA and compute_capability is not None and int(compute_capability) == 10:
        return (
            f"DeepSeek-V3 on an SM100 GPU attends with trtllm_mla, which turns the prefill CUDA graphs off"
            f" (SGLang {release} _disable_prefill_cuda_graph_for_deepseek_trtllm_mla)"
        )
    if model.family == "kimi_linear" and triple >= (0, 5, 20):
        return f"KDA linear attention turns the breakable prefill CUDA graphs off ({where})"
    if case.drafts_for == "draft_model":
        return f"a separate draft model's prompt is priced outside the prefill CUDA graphs (SGLang {release}: not read)"
    return None


def graph_kind(release: str) -> str:
    """``piecewise`` (0.5.10-0.5.14, torch.compile) or ``breakable`` (0.5.15 on): how SGLang ``release`` captures
    prefill on NVIDIA GPUs (``BREAKABLE_PREFILL_FROM``)."""
    triple = release_triple(release) or PIECEWISE_PREFILL_FROM
    return "breakable" if triple >= BREAKABLE_PREFILL_FROM else "piecewise"


def graph_tokens(case: PrefillCase, release: str | None = None) -> int:
    """The most prompt tokens one step of ``case`` runs in SGLang ``release``'s prefill CUDA graphs (None: 0.5.10's
    rules): ``can_run`` refuses a batch over ``piecewise_cuda_graph_max_tokens`` (0.5.10-0.5.13), the prefill
    ``max_bs`` of ``cuda_graph_config`` from 0.5.14, both set in ``_handle_gpu_memory_settings`` (0.5.19 on
    ``arg_groups/memory_hook.py``): the chunked prefill size; for an MLA model 2048 (``MLA_GRAPH_TOKENS``), from 0.5.23
    at most 8192 (``MLA_GRAPH_TOKENS_FROM``); at most 4096 where the model's path names Llama-2
    (``LLAMA_2_GRAPH_TOKENS``)."""
    tokens = case.chunk_tokens
    if case.model.attention.mla is not None:
        triple = release_triple(release) if release else None
        newer = triple is not None and triple >= MLA_GRAPH_TOKENS_FROM[0]
        tokens = min(tokens, MLA_GRAPH_TOKENS_FROM[1] if newer else MLA_GRAPH_TOKENS)
    if "llama-2" in f"{case.model.name} {case.model.source or ''}".lower():
        tokens = min(tokens, LLAMA_2_GRAPH_TOKENS)
    return tokens
