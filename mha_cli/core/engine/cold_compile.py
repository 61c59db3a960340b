"""A vLLM first start with an empty compile cache: why its pool can be smaller than the plan's, said in a note.

vLLM V1 sizes its pool on a CUDA GPU from the torch peak of one profiling forward
(``gpu_worker.determine_available_memory``: ``profile_run`` inside ``memory_profiling``). With ``torch.compile`` on
(the default), that first forward is also where the model is compiled, and with the compile cache empty
(``VLLM_CACHE_ROOT``) Inductor's compilation and autotuning allocate temporaries there. They are freed before
serving, but the window's high-water mark keeps them: where they exceed the forward's own peak they count as
activation and the pool shrinks, until a restart finds the cache warm. Read in vLLM 0.27.0's, 0.31.0's and
0.33.0's (the latest read) ``gpu_worker.py`` and 0.33.0's ``utils/mem_utils.py`` (one peak reset, before the
window); reported as vllm-project/vllm#54122 (2026-08-27, open, "tens of GiB"
on RTX PRO 6000), with fixes proposed in vllm-project/vllm#54209 and #54479 (open, unmerged).

Its size is not priced: no source sizes Inductor's temporaries, and they count only above the forward's peak. The
logs mha checked show both: a cold and a warm start of one configuration differ by 0.99 GiB (Qwen3-8B, RTX 4090,
vLLM 0.27.1: ``benchmarks/engine_logs.py`` 1702 and 1703) and 0.98 GiB (gemma-2-9b, RTX PRO 6000, vLLM 0.20.1: 2101
and 2102), where two cold starts on that card land within 1.1% of the plan (Llama-3.1-8B 2103, Mistral-7B 2104);
vllm-project/vllm#54479's thread measures 0.47 GiB a GPU (Qwen3-32B-AWQ, two RTX 4090, vLLM 0.28.0). The plan is a
warm start's: this note says so. Pure Python.
"""

COLD_COMPILE_NOTE = (
    "a first start with an empty compile cache (VLLM_CACHE_ROOT) can size a smaller pool than this: vLLM counts"
    " torch.compile's temporaries in its profiling forward as activation where they exceed the forward's peak"
    " (vllm-project/vllm#54122, open; 0.5-1 GiB on the cold starts mha checked against warm ones, not priced); a"
    " restart with the cache kept gets this figure"
)
"""The note of a vLLM V1 plan on a GPU whose pool is sized from the memory left (``cold_compile_note``)."""


GPU_WORKER_VENDORS = ("NVIDIA", "AMD")
"""The vendors whose GPUs run vLLM's ``gpu_worker`` (CUDA and ROCm), where torch.compile runs in its profiling
forward; a TPU (XLA), a Gaudi (its HPU worker), an Intel or Apple GPU and the CPU backend size their pools otherwise."""


def cold_compile_note(vendor: str, pool_set_outright: bool) -> str | None:
    """``COLD_COMPILE_NOTE`` where vLLM sizes its pool from a profiling forward on a CUDA or ROCm GPU
    (``GPU_WORKER_VENDORS``); None elsewhere, as on the CPU backend (its pool is ``VLLM_CPU_KVCACHE_SPACE``), or where
    ``kv_cache_memory_bytes`` sets the pool (``pool_set_outright``: vLLM compiles without measuring)."""
    return COLD_COMPILE_NOTE if vendor in GPU_WORKER_VENDORS and not pool_set_outright else None
