"""vLLM's host-side token tables, which its memory measure counts on an integrated (unified-memory) GPU.

On an integrated GPU (GB10, Jetson: ``core.unified_memory``) vLLM reads free memory as the OS's available memory
(``utils/mem_utils.py`` ``MemorySnapshot.measure``: psutil's ``virtual_memory().available``, under
``get_device_capability() in ((8, 7), (11, 0), (12, 1))`` in 0.13.0, ``is_integrated_gpu`` in 0.20.2, 0.27.1 and
0.29.0). What the KV budget loses is what that measure falls by from the worker's start-up snapshot to the end of
profiling: ``non_torch_increase``, (total - free) less torch's reserve, in 0.13.0 and 0.20.2, and ``total_consumed``,
the fall in free memory itself, in 0.27.1 and 0.29.0 (``memory_profiling``). The start-up snapshot is taken in
``v1/worker/gpu_worker.py`` ``init_device`` before the model runner is built, so host memory the runner allocates
in its constructor counts there, as it does not on a discrete GPU, whose free memory host RAM does not enter.

Of that host memory the source sizes the per-request token tables, max_num_seqs rows of max_model_len:

- the V1 runner (``v1/worker/gpu_model_runner.py`` ``__init__`` builds ``InputBatch``;
  ``v1/worker/gpu_input_batch.py`` ``InputBatch.__init__``): ``token_ids_cpu_tensor`` (int32) and
  ``is_token_ids_tensor`` (bool), both ``torch.zeros`` on the CPU, 5 B a cell (read in 0.13.0, 0.20.2, 0.27.1,
  0.29.0; the source's own note: "This buffer could be too large if max_model_len is big");
- Model Runner V2 (``v1/worker/gpu/model_runner.py`` ``__init__`` builds ``RequestState``; ``v1/worker/gpu/states.py``):
  ``all_token_ids``, a ``StagedWriteTensor`` with ``uva_instead_of_gpu=True``, i.e. a pinned CPU
  ``torch.zeros`` int32 table (``buffer_utils.py`` ``UvaBuffer``), 4 B a cell (read in 0.20.2, 0.27.1 and 0.29.0).

The rest of the host memory that measure takes in (the worker's Python heap, torch.compile's work, other processes)
no source read here sizes; it stays unpriced, as ``core.unified_memory`` says. Before 0.13.0 nothing is charged:
0.10.0's ``MemorySnapshot.measure`` has no integrated-GPU branch (torch's cudaMemGetInfo alone) and its
``InputBatch`` holds the int32 table without the bool one; 0.11-0.12 were not read. Pure Python.
"""

from mha_cli.core.engine.generations import Version

READ_FROM: Version = (0, 13)
"""The first vLLM release read for this rule (0.13.0, NVIDIA's DGX Spark container 26.01)."""
V1_BYTES_PER_CELL = 4 + 1
"""V1 ``InputBatch``: an int32 token id and a bool is-token flag per (request slot, position)."""
V2_BYTES_PER_CELL = 4
"""Model Runner V2 ``RequestState.all_token_ids``: an int32 token id per (request slot, position), pinned."""


def uma_token_table_bytes(
    *, integrated: bool, release: Version | None, max_num_seqs: int, max_model_len: int, v2_runner: bool
) -> int:
    """Bytes of host token tables vLLM ``release`` (None: the latest) counts in its budget on an ``integrated`` GPU:
    max_num_seqs x max_model_len cells of 5 B (V1 runner) or 4 B (``v2_runner``); 0 on a discrete GPU or before
    ``READ_FROM``."""
    if not integrated or (release is not None and release < READ_FROM):
        return 0
    return max_num_seqs * max_model_len * (V2_BYTES_PER_CELL if v2_runner else V1_BYTES_PER_CELL)


def uma_token_table_how(max_num_seqs: int, max_model_len: int, v2_runner: bool) -> str:
    """The budget line's words for ``uma_token_table_bytes``."""
    runner, cell = ("Model Runner V2's pinned all_token_ids", "4 B") if v2_runner else ("V1 InputBatch's", "5 B")
    return (
        f"plus the host token tables vLLM measures on unified memory ({runner}: {max_num_seqs:,} x"
        f" {max_model_len:,} x {cell})"
    )
