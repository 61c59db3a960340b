"""Which engine generations run a prompt's steps outside CUDA graphs, so that every kernel of a prefill step is
launched by the host while the device waits for it where the launches outrun its work.

- ``sglang-0.4``, ``sglang-0.5``: SGLang replays CUDA graphs of decode batches only: ``model_runner.py`` runs a
  graph where ``ForwardMode.is_cuda_graph()`` (``model_executor/forward_batch_info.py``: DECODE, TARGET_VERIFY,
  IDLE) holds and the graph runner can run the batch; an EXTEND (prefill) or MIXED batch runs the model's modules
  eagerly. Capturing prefill is the
  experimental ``--enable-piecewise-cuda-graph`` (SGLang docs, ``advanced_features/piecewise_cuda_graph.md``:
  "SGLang's regular CUDA graph optimization only captures the decoding step ... This is an experimental
  feature"), off unless launched with it; no row priced here names it.

A prefill step on such an engine costs max(its device work and kernels' fixed costs, its kernels x the host's
launch time per kernel) (``core.cost.step.step_time``'s ``launch_s``). The launch time per kernel is the
generation's ``prefill_dispatch_overhead_s`` (``benchmarks/fit_priors.py --set 2025``: fitted on the mean TTFT of
the generation's `fit` sources alone), else the constants' ``dispatch_overhead_s`` (an operator dispatched eagerly
by torch). vLLM V1 captures piecewise graphs of mixed and prefill batches up to its largest capture size, and
TensorRT-LLM's PyTorch backend runs its own; neither is priced this way. Pure Python.
"""

GRAPHLESS_PREFILL: dict[str, str] = {
    "sglang-0.4": "SGLang graphs decode batches only (forward_batch_info.py ForwardMode.is_cuda_graph)",
    "sglang-0.5": "SGLang graphs decode batches only (forward_batch_info.py ForwardMode.is_cuda_graph); piecewise"
    " prefill graphs are the experimental --enable-piecewise-cuda-graph (docs advanced_features/"
    "piecewise_cuda_graph.md)",
}
"""The generations whose prefill steps launch their kernels from the host, and where that was read."""


def prefill_launch_s(generation: str | None, constants: dict[str, float]) -> float:
    """The host's launch time per kernel of a prefill step (seconds) for ``generation`` with ``constants``: the
    fitted ``prefill_dispatch_overhead_s`` where the constants hold one, else their ``dispatch_overhead_s``; 0 for a
    generation whose prefill runs in graphs, or without a generation (the default constants' fit priced none)."""
    if generation not in GRAPHLESS_PREFILL:
        return 0.0
    return constants.get("prefill_dispatch_overhead_s", constants["dispatch_overhead_s"])
