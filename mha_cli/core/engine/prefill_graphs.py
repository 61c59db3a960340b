"""Which engine releases run a prompt's steps outside CUDA graphs, so that every operator of a prefill step is
launched by the host while the device waits for it where the launches outrun its work.

- ``sglang-0.4``, ``sglang-0.5``: SGLang replays CUDA graphs of decode batches only: ``model_runner.py`` runs a
  graph where ``ForwardMode.is_cuda_graph()`` (``model_executor/forward_batch_info.py``: DECODE, TARGET_VERIFY,
  IDLE) holds and the graph runner can run the batch; an EXTEND (prefill) or MIXED batch runs the model's modules
  eagerly. Up to 0.5.9, capturing prefill is the experimental ``--enable-piecewise-cuda-graph`` (SGLang docs,
  ``advanced_features/piecewise_cuda_graph.md``: "SGLang's regular CUDA graph optimization only captures the
  decoding step ... This is an experimental feature"), off unless launched with it; no row priced here names it.

From 0.5.10 SGLang captures prefill by default: ``server_args.py`` (0.5.10) turns
``enable_piecewise_cuda_graph: bool = False`` (0.5.6-0.5.9) into ``disable_piecewise_cuda_graph: bool = False``, and
``_handle_piecewise_cuda_graph`` turns it off only for some cases: speculative decoding, DP attention, pp > 1, torch
compile, a non-CUDA device (``is_hip()``: AMD), an MoE all-to-all backend, LoRA, multimodal models, GGUF, CPU
offload, PD disaggregation, and the architectures of ``configs/model_config.py``
``piecewise_cuda_graph_disabled_model_archs`` (DeepSeek-V3.2, Qwen3-Next, GLM-5's MoE DSA, ...).
``model_runner.py`` ``init_piecewise_cuda_graphs``
then runs a prefill batch of at most ``piecewise_cuda_graph_max_tokens`` tokens in graphs
(``piecewise_cuda_graph_runner.py`` ``can_run``): the chunked prefill size, 2048 for an MLA model. 0.5.3 has no
piecewise graphs at all. Priced here: a release from 0.5.10 on an NVIDIA GPU graphs its prefill; the exceptions
above and an MLA chunk over 2048 tokens are not modelled. A plan that names only the generation (``--engine sglang``
or ``sglang-0.5``) is priced eager, as 0.5.0-0.5.9 run.

A prefill step on such an engine costs max(its device work and kernels' fixed costs, the operators SGLang's model
code launches one by one x the host's time per operator) (``core.cost.step.step_time``'s ``launch_s``; the operators
counted from the model source in ``core.engine.sglang_eager_ops``). The time per operator is the generation's
``prefill_dispatch_overhead_s`` (``benchmarks/fit_priors.py --set 2025 --prefill``: fitted on the mean TTFT of the
generation's `fit` sources' one-user rows alone), else the constants' ``dispatch_overhead_s`` (an operator dispatched
eagerly by torch). vLLM V1 captures piecewise graphs of mixed and prefill batches up to its largest capture size, and
TensorRT-LLM's PyTorch backend runs its own; neither is priced this way. Pure Python.
"""

import re

GRAPHLESS_PREFILL: dict[str, str] = {
    "sglang-0.4": "SGLang graphs decode batches only (forward_batch_info.py ForwardMode.is_cuda_graph)",
    "sglang-0.5": "SGLang graphs decode batches only (forward_batch_info.py ForwardMode.is_cuda_graph) before 0.5.10;"
    " piecewise prefill graphs are the experimental --enable-piecewise-cuda-graph (server_args.py 0.5.6-0.5.9)",
}
"""The generations whose prefill steps launch their operators from the host, and where that was read."""

PIECEWISE_PREFILL_FROM = (0, 5, 10)
"""The first SGLang release whose prefill runs in piecewise CUDA graphs by default on NVIDIA GPUs (server_args.py
0.5.10 ``disable_piecewise_cuda_graph: bool = False``; 0.5.9: ``enable_piecewise_cuda_graph: bool = False``)."""

_RELEASE = re.compile(r"v?(\d+)\.(\d+)\.(\d+)")


def release_triple(release: str | None) -> tuple[int, int, int] | None:
    """``0.5.10.post1`` -> (0, 5, 10); None for no release, a commit or a dev build (``0.0.0.dev1+g93fca0b``)."""
    match = _RELEASE.match(release.strip()) if release else None
    if match is None:
        return None
    triple = (int(match.group(1)), int(match.group(2)), int(match.group(3)))
    return None if triple == (0, 0, 0) else triple


def graphless_prefill(generation: str | None, release: str | None = None, vendor: str | None = None) -> bool:
    """Whether ``generation``'s prefill steps run eagerly: its generation is in ``GRAPHLESS_PREFILL`` and, on an
    NVIDIA GPU (``vendor``), its ``release`` (as typed, ``0.5.10``) is before ``PIECEWISE_PREFILL_FROM``; a release
    not given or not read is priced eager."""
    if generation not in GRAPHLESS_PREFILL:
        return False
    triple = release_triple(release)
    nvidia = vendor is not None and vendor.lower() == "nvidia"
    return not (nvidia and triple is not None and triple >= PIECEWISE_PREFILL_FROM)


def prefill_launch_s(
    generation: str | None, constants: dict[str, float], release: str | None = None, vendor: str | None = None
) -> float:
    """The host's time per eagerly launched operator of a prefill step (seconds) for ``generation`` (``release`` on
    a ``vendor`` GPU) with ``constants``: the fitted ``prefill_dispatch_overhead_s`` where the constants hold one,
    else their ``dispatch_overhead_s``; 0 where the prefill runs in graphs, or without a generation (the default
    constants' fit priced none)."""
    if not graphless_prefill(generation, release, vendor):
        return 0.0
    return constants.get("prefill_dispatch_overhead_s", constants["dispatch_overhead_s"])
