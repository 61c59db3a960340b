"""The lines vLLM V0 logs once it has sized its KV cache, as each release words them, read in the released wheels
(``pip download vllm==X --no-deps``):

- 0.6.2 and before: ``# GPU blocks: N, # CPU blocks: M`` (``executor/gpu_executor.py`` ``initialize_cache``);
- 0.6.3 adds ``Maximum concurrency for L tokens per request: C.CCx`` (vllm-project/vllm#8831: N x block size / L,
  L written as ``%s``, without a thousands separator); 0.6.4.post1 and 0.6.6.post1 as 0.6.3;
- 0.7.0-0.7.2 name the platform's dispatch key (``executor/executor_base.py``: ``# CUDA blocks``, on ROCm too);
- 0.7.3 its device name (``# cuda blocks``, ``# rocm blocks``).

M is ``swap_space`` (4 GiB by default: ``engine/arg_utils.py`` ``swap_space: float = 4``) over the bytes of one
block, the GPU pool's own (``worker/worker.py`` ``determine_num_available_blocks``). Pure Python."""

from __future__ import annotations

from mha_cli.core.engine.release_numbers import release_key

SWAP_SPACE_BYTES = 4 * 2**30
"""V0's default ``--swap-space`` (4 GiB), the CPU blocks' memory."""
CONCURRENCY_LOGGED_FROM = release_key("0.6.3")
PLATFORM_NAMED_FROM = release_key("0.7.0")
DEVICE_NAMED_FROM = release_key("0.7.3")


def v0_cache_lines(
    release: str | None, vendor: str, gpu_blocks: int, block_bytes: int, max_model_len: int, concurrency: float
) -> list[str]:
    """The KV-cache lines vLLM V0 ``release`` (as typed; None: the generation's last, 0.7.3) logs on a ``vendor``
    device: its blocks of ``block_bytes`` (0: a model with nothing to cache), and from 0.6.3 its concurrency."""
    key = release_key(release or "0.7.3")
    amd = vendor.upper() == "AMD"
    if key >= DEVICE_NAMED_FROM:
        device = "rocm" if amd else "cuda"
    else:
        device = "CUDA" if key >= PLATFORM_NAMED_FROM else "GPU"
    cpu_blocks = SWAP_SPACE_BYTES // block_bytes if block_bytes else 0
    lines = [f"# {device} blocks: {gpu_blocks}, # CPU blocks: {cpu_blocks}"]
    if key >= CONCURRENCY_LOGGED_FROM:
        lines.append(f"Maximum concurrency for {max_model_len} tokens per request: {concurrency:.2f}x")
    return lines
