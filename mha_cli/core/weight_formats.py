"""Weight formats with the bytes they really store: values, scales, zero points and group indices.

What a quantised checkpoint quantises is its linear layers (attention projections, MLPs, experts); the token
embedding, the LM head, norms, biases and MoE routers stay in bf16, as vLLM loads public fp8, GPTQ, AWQ and
bitsandbytes checkpoints (``lm_head`` is left out of every one of them by default). mxfp4 covers only the routed
experts (gpt-oss: attention, router, embeddings and head stay bf16; vLLM has no mxfp4 linear layer, so a model
without experts is refused). Per matrix of ``out`` x ``in`` values:

- ``fp32``, ``fp16``, ``bf16``: every weight in that format, no scales.
- ``fp8`` (e4m3, per tensor): 1 B per value + one fp32 weight scale per matrix.
- ``fp8-block`` (DeepSeek-V3's layout): 1 B per value + one fp32 ``weight_scale_inv`` per 128 x 128 block.
- ``int8`` (W8, per channel): 1 B per value + one fp16 scale per output row.
- ``int4`` / ``awq`` (group 128): 4 bits per value (int32 words of 8) + per group of 128 inputs an fp16 scale per
  output and 4-bit zeros packed 8 to an int32 (AWQ's ``qweight``, ``qzeros``, ``scales``).
- ``gptq-int4`` (group 128): the same plus GPTQ's ``g_idx``, one int32 per input row.
- ``nf4`` (bitsandbytes NF4, QLoRA's data type, without double quantisation): 4 bits per value + one fp32 absmax
  per 64 values, over the flattened matrix, + its 16-entry fp32 code.
- ``nf4-dq`` (bitsandbytes double quantisation, QLoRA's recipe): the absmax in 8 bits, one fp32 absmax per 256 of
  those, an fp32 offset, and both codes (16 + 256 fp32).
- ``mxfp4`` (OCP MX, gpt-oss): 4 bits per value + one e8m0 byte per 32 inputs: 17 B per 32 weights.
"""

from typing import Literal, NamedTuple, get_args

from mha_cli.core.errors import BadInputError
from mha_cli.core.suggest import close_names
from mha_cli.core.vllm_quantization import vllm_quantization_refusal

WeightFormatName = Literal[
    "fp32", "fp16", "bf16", "fp8", "fp8-block", "int8", "int4", "awq", "gptq-int4", "nf4", "nf4-dq", "mxfp4"
]
Scope = Literal["all", "linear", "experts"]

WEIGHT_ALIASES = {
    "float32": "fp32", "float": "fp32", "float16": "fp16", "half": "fp16", "bfloat16": "bf16", "float8": "fp8",
    "fp8_e4m3": "fp8", "e4m3": "fp8", "fp8-dynamic": "fp8", "fp8_block": "fp8-block", "fp8-block-128": "fp8-block",
    "awq-int4": "awq", "w4a16": "awq", "gptq": "gptq-int4", "gptq-g128": "gptq-int4", "gptq_int4": "gptq-int4",
    "bnb-nf4": "nf4", "bnb-4bit": "nf4", "nf4-double-quant": "nf4-dq", "nf4_dq": "nf4-dq", "mx-fp4": "mxfp4",
}  # fmt: skip

GROUP = 128
"""Inputs per quantisation group of the int4 formats (GPTQ and AWQ's default) and per fp8 block side."""


# A NamedTuple rather than a frozen dataclass, for start-up time (see ``core.record``).
class WeightFormat(NamedTuple):
    """One weight format: which weights it covers (the rest stays bf16) and its nominal bits per weight."""

    name: str
    nominal_bits: float
    """Bits per covered weight at large sizes, scales included (orders formats; the bytes are exact)."""
    scope: Scope
    description: str

    def matrix_bytes(self, out_features: int, in_features: int) -> int:
        """Bytes of one ``out_features`` x ``in_features`` weight matrix in this format, metadata included."""
        n = out_features * in_features
        groups = -(-in_features // GROUP)
        packed4 = -(-n // 2)
        if self.name in ("fp32", "fp16", "bf16"):
            return n * int(self.nominal_bits) // 8
        if self.name == "fp8":
            return n + 4
        if self.name == "fp8-block":
            return n + 4 * -(-out_features // GROUP) * groups
        if self.name == "int8":
            return n + 2 * out_features
        if self.name in ("int4", "awq", "gptq-int4"):
            zeros = groups * -(-out_features // 8) * 4
            scales = groups * out_features * 2
            g_idx = 4 * in_features if self.name == "gptq-int4" else 0
            return packed4 + zeros + scales + g_idx
        if self.name == "nf4":
            return packed4 + 4 * -(-n // 64) + 16 * 4
        if self.name == "nf4-dq":
            absmax = -(-n // 64)
            return packed4 + absmax + 4 * -(-absmax // 256) + 4 + (16 + 256) * 4
        if self.name == "mxfp4":
            return packed4 + out_features * -(-in_features // 32)
        raise AssertionError(self.name)


FORMATS: dict[str, WeightFormat] = {
    f.name: f
    for f in (
        WeightFormat("fp32", 32, "all", "float32, every weight"),
        WeightFormat("fp16", 16, "all", "float16, every weight"),
        WeightFormat("bf16", 16, "all", "bfloat16, every weight"),
        WeightFormat("fp8", 8, "linear", "fp8 e4m3 linear layers, an fp32 scale per matrix; embeddings, head in bf16"),
        WeightFormat("fp8-block", 8 + 32 / GROUP**2, "linear", "fp8 linear layers, an fp32 scale per 128 x 128 block"),
        WeightFormat("int8", 8, "linear", "int8 linear layers, an fp16 scale per output channel"),
        WeightFormat("int4", 4 + 20 / GROUP, "linear", "int4 linear layers, group 128: fp16 scale, 4-bit zero"),
        WeightFormat("awq", 4 + 20 / GROUP, "linear", "AWQ int4, group 128: qweight, qzeros, fp16 scales"),
        WeightFormat("gptq-int4", 4 + 20 / GROUP, "linear", "GPTQ int4, group 128: qweight, qzeros, scales, g_idx"),
        WeightFormat("nf4", 4.5, "linear", "bitsandbytes NF4, an fp32 absmax per 64 weights"),  # not fp4, its default
        WeightFormat("nf4-dq", 4.127, "linear", "bitsandbytes NF4 with double quantisation (QLoRA)"),
        WeightFormat("mxfp4", 4.25, "experts", "OCP MXFP4 routed experts, an e8m0 scale per 32; the rest in bf16"),
    )
}


def normalise_weight_format(name: str) -> str:
    """``bfloat16`` -> ``bf16``, ``gptq`` -> ``gptq-int4``, ...; unknown names refused with the close ones."""
    key = str(name).strip().lower()
    key = WEIGHT_ALIASES.get(key, key)
    if key in FORMATS:
        return key
    if key == "fp8_ds_mla":
        raise BadInputError(f"{key} is a KV-cache layout, not a weight format: use one of {', '.join(FORMATS)}")
    if (refusal := vllm_quantization_refusal(key)) is not None:
        raise BadInputError(refusal)
    close = close_names(key, [*FORMATS, *WEIGHT_ALIASES])
    guess = f"did you mean {', '.join(close)}? " if close else ""
    raise BadInputError(f"unknown weight format {name!r}: {guess}use one of {', '.join(get_args(WeightFormatName))}")


def weight_format(name: str) -> WeightFormat:
    """The ``WeightFormat`` for a name or alias."""
    return FORMATS[normalise_weight_format(name)]
