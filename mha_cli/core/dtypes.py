"""Storage formats for weights and the KV cache, with the quantisation overhead each one assumes.

A quantised cache stores scales beside the values. What we assume, per format:

- ``fp32``, ``fp16``, ``bf16``: no scales.
- ``fp8`` (e4m3): plain fp8, one byte per value and one scale per tensor (vLLM's ``kv_cache_dtype="fp8"``),
  so nothing per token, for every variant: DeepSeek-V3's MLA latent + RoPE key is 576 B per token per layer.
- ``fp8_ds_mla`` (alias ``fp8-ds-mla``; KV cache only, sparse MLA only: ``core.kv.check_kv_dtype_fits``):
  DeepSeek's sparse FlashMLA layout (V3.2 and later, vLLM's ``fp8_ds_mla``): the latent in fp8 with one fp32 scale
  per 128 values, the RoPE key kept in bf16: 512 + 4 * 4 + 64 * 2 = 656 B per token per layer for DeepSeek-V3's
  geometry. A lightning-indexer key (V3.2) is stored beside it in fp8 with one fp32 scale per 128 values (128 + 4 =
  132 B).
- ``nvfp4`` (KV cache only, not MLA): vLLM's ``--kv-cache-dtype nvfp4`` (run from 0.21.0; 0.20.0's ``CacheDType``
  takes it, but its FlashInfer metadata builder raises "nvfp4 KV cache is not yet supported"; absent from 0.19.0): each head's key and value as packed fp4 values and an fp8 scale per 16 of them, head_dim / 2 +
  head_dim / 16 bytes apiece (``vllm/utils/torch_utils.py`` ``nvfp4_kv_cache_full_dim``; FlashInfer's
  ``customize_spec`` gives K and V a slot each, 0.32.0): 72 B per head for head_dim 128, 2 x 8 x 72 x 32 = 36,864 B
  per token for Llama-3-8B. vLLM refuses it with MLA (``validate_nvfp4_kv_cache_with_mla``).
- ``int8``: symmetric, one fp16 scale per cached vector (per token, per KV head, for K and V).
- ``int4``: asymmetric, an fp16 scale and an fp16 zero point per group of 32 values (KIVI-style).
"""

from typing import Literal, NamedTuple, get_args

from mha_cli.core.errors import BadInputError
from mha_cli.core.suggest import close_names

DtypeName = Literal["fp32", "fp16", "bf16", "fp8", "int8", "int4"]
"""Storage formats for weights and the KV cache (the same names serve both)."""

KvDtypeName = Literal["fp32", "fp16", "bf16", "fp8", "fp8_ds_mla", "nvfp4", "int8", "int4"]
"""Storage formats for the KV cache: ``DtypeName`` plus the cache-only ``fp8_ds_mla`` (MLA only) and ``nvfp4``
(not MLA) layouts."""

DTYPE_ALIASES = {
    "float32": "fp32",
    "float": "fp32",
    "float16": "fp16",
    "half": "fp16",
    "bfloat16": "bf16",
    "float8": "fp8",
    "fp8_e4m3": "fp8",
    "e4m3": "fp8",
    "fp8_e4m3fn": "fp8",  # torch's name (float8_e4m3fn): trial 333 #8
    "float8_e4m3fn": "fp8",
    "fp8-ds-mla": "fp8_ds_mla",
}
KV_DTYPE_ALIASES = {"fp8_e5m2": "fp8", "float8_e5m2": "fp8", "auto": "bf16"}
"""vLLM's ``--kv-cache-dtype`` values beyond ours: e5m2 is a byte a value as e4m3 is; ``auto`` (vLLM's default) is the
model's dtype, bf16 for today's checkpoints (an fp16 one's is the same two bytes), where a name alone is read; a
deployment reads ``auto`` as the format left out (``is_engine_default_kv``), which a ModelOpt checkpoint's declared fp8
cache can fill."""
VLLM_KV_NAMES = ("auto", "fp8_e4m3", "fp8_e5m2")
"""vLLM's ``--kv-cache-dtype`` values (``CacheDType``, vllm/config/cache.py) taken besides ours, named in a refusal."""

FP4_KV_NAMES = ("fp4", "nvfp4_4over6", "nvfp4_ds_mla", "fp4_e2m1", "mxfp4")
"""fp4 KV caches the engines offer beside vLLM's plain ``nvfp4`` (priced) that mha does not price: vLLM's
``nvfp4_4over6`` and sparse-MLA ``nvfp4_ds_mla``, SGLang's ``fp4_e2m1``: refused by name, never offered fp8 as a
spelling."""

FLOAT16_REFUSED = ("gemma2", "gemma3", "gemma3_text", "glm4")
"""Model types vLLM never runs in float16 (0.32.0 vllm/config/model.py ``_FLOAT16_NOT_SUPPORTED_MODELS``: numerical
instability): `--dtype auto` gives them bf16 even from a float16 checkpoint, and float32 on a device without bf16."""

Fp8Variant = Literal["e4m3", "e5m2"]
"""An fp8 cache's encoding, priced alike (a byte a value): e4m3 (vLLM's ``fp8``, SGLang's ``fp8_e4m3``) or e5m2."""
FP8_VARIANT_NAMES: dict[str, Fp8Variant] = {
    "fp8_e4m3": "e4m3", "e4m3": "e4m3", "fp8_e4m3fn": "e4m3", "float8_e4m3fn": "e4m3", "fp8_e5m2": "e5m2",
    "float8_e5m2": "e5m2",
}  # fmt: skip
"""The KV dtype names that say which fp8 encoding they mean (plain ``fp8`` says none: the engines' e4m3)."""


def is_engine_default_kv(name: object) -> bool:
    """Whether a KV dtype name is ``auto``, the engines' default: the same as leaving the format out (the model's
    dtype, or the fp8 a ModelOpt checkpoint declares where the engine runs it: ``core.engine.checkpoint_kv``)."""
    return isinstance(name, str) and name.strip().lower() == "auto"


CACHE_FOLLOWS_WEIGHTS = ("vllm", "sglang")
"""Engines whose default (``auto``) KV cache is the model's dtype, so fp32 weights run an fp32 cache
(``core.engine.plan.fp32_cache_note``); TensorRT-LLM's is priced as asked."""


def default_kv_for_weights(engine: str, weight_dtype: str) -> str | None:
    """The cache ``engine``'s ``auto`` runs beside ``weight_dtype`` where it is not the plain default (bf16): fp16
    beside fp16 weights (a float16 checkpoint's, as ``core.sources`` prices it), fp32 beside fp32 weights on vLLM and
    SGLang; None otherwise (reviews 360 #1, 363 #1, 364 #6; trial 366 #1-#2)."""
    if weight_dtype == "fp16":
        return "fp16"
    return "fp32" if weight_dtype == "fp32" and engine in CACHE_FOLLOWS_WEIGHTS else None


def fp8_variant_named(name: object) -> Fp8Variant | None:
    """The fp8 encoding a KV dtype name says (``fp8_e5m2`` -> ``e5m2``); None for a name that says none."""
    return FP8_VARIANT_NAMES.get(name.strip().lower()) if isinstance(name, str) else None


def with_fp8_variant(fields: object) -> object:
    """A model's input ``fields`` with ``kv_fp8_variant`` set where its ``kv_dtype`` names an fp8 encoding
    (``fp8_e5m2``), which the format alone (fp8) loses, and without ``kv_dtype`` where it is ``auto``
    (``is_engine_default_kv``: as left out); anything else as it is."""
    if isinstance(fields, dict) and is_engine_default_kv(fields.get("kv_dtype")):
        return {key: value for key, value in fields.items() if key != "kv_dtype"}
    variant = fp8_variant_named(fields.get("kv_dtype")) if isinstance(fields, dict) else None
    return fields if variant is None else {**fields, "kv_fp8_variant": variant}  # type: ignore[dict-item]


# A NamedTuple rather than a frozen dataclass, for start-up time (see ``core.record``).
class StorageFormat(NamedTuple):
    """How one value is stored and what the format adds per group of values."""

    name: str
    bits: int
    scale_bytes_per_group: int = 0
    """Bytes of scale/zero-point metadata stored per quantisation group (0: per-tensor or none)."""
    group_size: int | None = None
    """Values per group; ``None`` means one group per cached vector."""
    description: str = ""

    def vector_bytes(self, n_values: int) -> int:
        """Bytes to store one cached vector of ``n_values`` values, scales included."""
        value_bytes = -(-n_values * self.bits // 8)
        if not self.scale_bytes_per_group:
            return value_bytes
        groups = 1 if self.group_size is None else -(-n_values // self.group_size)
        return value_bytes + groups * self.scale_bytes_per_group


FORMATS: dict[str, StorageFormat] = {
    "fp32": StorageFormat("fp32", 32, description="IEEE float32, no scales"),
    "fp16": StorageFormat("fp16", 16, description="IEEE float16, no scales"),
    "bf16": StorageFormat("bf16", 16, description="bfloat16, no scales"),
    "fp8": StorageFormat("fp8", 8, description="fp8 e4m3, one byte per value, one scale per tensor"),
    "int8": StorageFormat("int8", 8, scale_bytes_per_group=2, description="int8 with one fp16 scale per cached vector"),
    "int4": StorageFormat(
        "int4", 4, scale_bytes_per_group=4, group_size=32, description="int4 with fp16 scale + zero point per 32 values"
    ),
}

FP8_DS_MLA = "fp8_ds_mla"
NVFP4_KV = "nvfp4"
KV_ONLY_FORMATS: dict[str, StorageFormat] = {
    FP8_DS_MLA: StorageFormat(
        FP8_DS_MLA, 8, description="DeepSeek sparse FlashMLA: fp8 latent + fp32 scale per 128, bf16 RoPE key (MLA only)"
    ),
    NVFP4_KV: StorageFormat(
        NVFP4_KV,
        4,
        scale_bytes_per_group=1,
        group_size=16,
        description="vLLM 0.21.0+ NVFP4: fp4 values + an fp8 scale per 16, K and V apart (not MLA)",
    ),
}
"""Formats that exist only for the KV cache (never for weights)."""

BUILDABLE: tuple[str, ...] = ("fp32", "fp16", "bf16")
"""Formats the torch modules build (``mha verify``, ``mha bench``): no scales, so one value is ``bits // 8`` bytes.
The quantised ones are priced here but their scale layouts are not implemented in torch."""

DS_MLA_SCALE_GROUP = 128
"""``fp8_ds_mla``: one fp32 scale per 128 fp8 values (latent and indexer key); the RoPE key stays bf16."""
DS_MLA_SCALE_BYTES = 4


def normalise_dtype_name(name: str, *, kv: bool = False) -> str:
    """Map ``bfloat16`` -> ``bf16`` and friends; reject unknown names with the list of known ones.
    ``kv=True`` also accepts the cache-only formats (``fp8_ds_mla``)."""
    key = str(name).strip().lower()
    key = DTYPE_ALIASES.get(key, (KV_DTYPE_ALIASES if kv else {}).get(key, key))
    if key in FORMATS or (kv and key in KV_ONLY_FORMATS):
        return key
    if key in KV_ONLY_FORMATS:
        raise BadInputError(f"{key} is a KV-cache layout, not a weight format: use one of {', '.join(FORMATS)}")
    names = get_args(KvDtypeName if kv else DtypeName)
    if kv and key.replace("-", "_") in FP4_KV_NAMES:  # no "did you mean fp8": twice the bytes is another cache
        others = ", ".join(other for other in FP4_KV_NAMES if other != key.replace("-", "_"))
        raise BadInputError(
            f"{name!r} is an fp4 KV cache mha does not price yet (nor {others}; vLLM's plain nvfp4 cache it does):"
            f" use one of {', '.join(names)}"
        )
    vllm_names = VLLM_KV_NAMES if kv else ()
    other = {"e4m3": "e5m2", "e5m2": "e4m3"}  # never offer the other fp8 encoding (trial 333 #8: fp8e4m3 -> fp8_e5m2)
    close = [
        known for known in close_names(key, names + vllm_names)
        if not any(typed in key and other[typed] in known for typed in other)
    ]  # fmt: skip
    guess = f"did you mean {', '.join(close)}? " if close else ""
    vllm = f" (or vLLM's {', '.join(vllm_names)})" if vllm_names else ""
    raise BadInputError(f"unknown dtype {name!r}: {guess}use one of {', '.join(names)}{vllm}")


def storage_format(name: str) -> StorageFormat:
    """The ``StorageFormat`` for a dtype name or alias, the cache-only ones included."""
    key = normalise_dtype_name(name, kv=True)
    return FORMATS.get(key) or KV_ONLY_FORMATS[key]


def kv_named(kv_dtype: str, variant: Fp8Variant) -> str:
    """The KV format as vLLM names it, its fp8 encoding kept: ``fp8_e5m2`` for fp8 in e5m2, else ``kv_dtype``."""
    return "fp8_e5m2" if kv_dtype == "fp8" and variant == "e5m2" else kv_dtype
