"""The KV-cache format a ModelOpt checkpoint declares (``kv_cache_quant_algo`` FP8, or an fp8 ``kv_cache_scheme``), as
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

Other quantization methods (compressed-tensors' ``kv_cache_scheme``) keep the model's dtype on vLLM and SGLang.
Pure Python.
"""

from __future__ import annotations

from mha_cli.core.engine.release_numbers import release_key

FIRST_READING: dict[str, str | None] = {"vllm": "0.14.0", "sglang": "0.5.3rc2", "trtllm": None}
"""The first release of each engine that runs a ModelOpt checkpoint's fp8 KV cache by itself (None: every one)."""


def engine_runs_checkpoint_kv(engine: str | None, generation_id: str | None, typed: str | None) -> bool:
    """Whether ``engine``'s release meant (the one typed, else the generation's latest: ``flags.release_meant``)
    allocates a ModelOpt checkpoint's declared fp8 KV cache when its format is left at auto."""
    from mha_cli.core.engine.flags import release_meant
    from mha_cli.core.engine.generations import generation

    engine = engine or "vllm"
    if engine not in FIRST_READING:
        return False
    first = FIRST_READING[engine]
    chosen = generation(generation_id, engine)  # type: ignore[arg-type]
    return first is None or release_meant(chosen, typed) >= release_key(first)
