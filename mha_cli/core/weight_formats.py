"""Weight formats with the bytes they really store: values, scales, zero points and group indices.

What a quantised checkpoint quantises is its linear layers (attention projections, MLPs, experts); the token
embedding, the LM head, norms, biases and MoE routers stay in bf16, as vLLM loads public fp8, GPTQ, AWQ and
bitsandbytes checkpoints (``lm_head`` is left out of every one of them by default). ``mxfp4`` covers only the routed
experts (gpt-oss: attention, router, embeddings and head stay bf16; a model without experts is refused);
``mxfp4-linear`` is the same encoding on every linear layer, as AMD Quark stores dense models. A checkpoint whose
config keeps more modules unquantised (``modules_to_not_convert``, ``ignored_layers``, ...) is priced module by module
instead (``core.named_exclusions``). Per matrix of ``out`` x ``in`` values:

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
- ``mxfp4`` (OCP MX, gpt-oss) and ``mxfp4-linear`` (AMD Quark, vLLM's ``QuarkOCP_MX``: ``weight`` uint8 (out, in/2),
  ``weight_scale`` uint8 (out, in/32), activations scaled on the fly): 4 bits per value + one e8m0 byte per 32
  inputs, 17 B per 32 weights.
- ``nvfp4`` (NVIDIA ModelOpt, vLLM's ``ModelOptNvFp4LinearMethod``): e2m1 values two to a byte (``weight`` uint8
  (out, in/2)), one fp8 e4m3 ``weight_scale`` per 16 inputs (out, in/16), and per matrix an fp32 ``weight_scale_2``
  (the global scale) and an fp32 ``input_scale``: a 4096 x 4096 matrix is 8,388,608 + 1,048,576 + 8 B.
- ``nvfp4-w4a16`` (compressed-tensors NVFP4 without ``input_activations``, vLLM 0.19.1's
  ``CompressedTensorsW4A16Fp4``): the same values and scales, one fp32 ``weight_global_scale`` and no input scale
  (8,388,608 + 1,048,576 + 4 B); its activations stay bf16 (Marlin, ``core.compute_dtype``).
- ``mxfp4-w4a16`` (compressed-tensors MXFP4, vLLM 0.19.1's ``CompressedTensorsW4A16Mxfp4``: ``weight_packed`` uint8
  (out, in/2), ``weight_scale`` uint8 (out, in/32)): ``mxfp4-linear``'s bytes, run by Marlin on bf16 activations.

Every format but the bitsandbytes ones is a ``MatrixLayout``: packed values, one scale per block of weights, zero
points, group indices and per-matrix scalars; ``core.weight_scheme`` builds the same layouts from a checkpoint's
``quantization_config`` (compressed-tensors groups of any size), so a named format and a checkpoint's group price
alike.
"""

from typing import Literal, NamedTuple, get_args

from mha_cli.core.errors import BadInputError
from mha_cli.core.suggest import close_names
from mha_cli.core.vllm_quantization import vllm_quantization_refusal

WeightFormatName = Literal[
    "fp32", "fp16", "bf16", "fp8", "fp8-block", "int8", "int4", "awq", "gptq-int4", "nf4", "nf4-dq", "mxfp4",
    "mxfp4-linear", "mxfp4-w4a16", "nvfp4", "nvfp4-w4a16",
]  # fmt: skip
Scope = Literal["all", "linear", "experts"]

WEIGHT_ALIASES = {
    "float32": "fp32", "float": "fp32", "float16": "fp16", "half": "fp16", "bfloat16": "bf16", "float8": "fp8",
    "fp8_e4m3": "fp8", "e4m3": "fp8", "fp8-dynamic": "fp8", "fp8_block": "fp8-block", "fp8-block-128": "fp8-block",
    "awq-int4": "awq", "w4a16": "awq", "gptq": "gptq-int4", "gptq-g128": "gptq-int4", "gptq_int4": "gptq-int4",
    "bnb-nf4": "nf4", "bnb-4bit": "nf4", "nf4-double-quant": "nf4-dq", "nf4_dq": "nf4-dq", "mx-fp4": "mxfp4",
    "mxfp4-dense": "mxfp4-linear", "quark-mxfp4": "mxfp4-linear", "w4a4-mxfp4": "mxfp4-linear",
    "modelopt-fp4": "nvfp4", "modelopt_fp4": "nvfp4", "nv-fp4": "nvfp4",
    # vLLM 0.20-0.24's own --quantization names for these formats (core.vllm_quantization.AUTO_KERNELS)
    "fp8_per_tensor": "fp8", "fp8_per_block": "fp8-block", "auto_awq": "awq", "auto_gptq": "gptq-int4",
}  # fmt: skip

GROUP = 128
"""Inputs per quantisation group of the int4 formats (GPTQ and AWQ's default) and per fp8 block side."""


# NamedTuples rather than frozen dataclasses, for start-up time (see ``core.record``).
class MatrixLayout(NamedTuple):
    """How one quantised ``out`` x ``in`` weight matrix is stored: its values packed ``value_bits`` each, one scale of
    ``scale_bytes`` per block of ``scale_rows`` x ``scale_cols`` weights (0: the whole dimension, so (0, 0) is one
    scale per matrix, (1, 0) one per output row, (1, 128) one per 128 inputs of a row), zero points
    ``zero_bits`` wide packed into int32 words along the output rows (asymmetric formats), an int32 group index per
    input (GPTQ's act-order ``g_idx``) and ``extra_bytes`` of per-matrix scalars (global and input scales, a stored
    shape)."""

    value_bits: int
    scale_bytes: int = 0
    scale_rows: int = 0
    scale_cols: int = 0
    zero_bits: int = 0
    group_index: bool = False
    extra_bytes: int = 0

    def matrix_bytes(self, out_features: int, in_features: int) -> int:
        """Bytes of one ``out_features`` x ``in_features`` matrix in this layout, metadata included."""
        values = -(-out_features * in_features * self.value_bits // 8)
        scale_rows = -(-out_features // (self.scale_rows or out_features))
        scale_cols = -(-in_features // (self.scale_cols or in_features))
        scales = self.scale_bytes * scale_rows * scale_cols if self.scale_bytes else 0
        zeros = scale_cols * 4 * -(-scale_rows * self.zero_bits // 32)
        group_index = 4 * in_features if self.group_index else 0
        return values + scales + zeros + group_index + self.extra_bytes

    def value_bytes(self, out_features: int, in_features: int) -> int:
        """Bytes of the matrix's packed values alone (``matrix_bytes`` less its scales, zeros and indices)."""
        return -(-out_features * in_features * self.value_bits // 8)


class WeightFormat(NamedTuple):
    """One weight format: which weights it covers (the rest stays bf16), its nominal bits per weight and how it
    stores a matrix (``layout``; None for the bitsandbytes formats, which quantise the flattened matrix)."""

    name: str
    nominal_bits: float
    """Bits per covered weight at large sizes, scales included (orders formats; the bytes are exact)."""
    scope: Scope
    description: str
    layout: MatrixLayout | None = None

    def matrix_bytes(self, out_features: int, in_features: int) -> int:
        """Bytes of one ``out_features`` x ``in_features`` weight matrix in this format, metadata included."""
        if self.layout is not None:
            return self.layout.matrix_bytes(out_features, in_features)
        n = out_features * in_features
        packed4 = -(-n // 2)
        if self.name == "nf4":
            return packed4 + 4 * -(-n // 64) + 16 * 4
        if self.name == "nf4-dq":
            absmax = -(-n // 64)
            return packed4 + absmax + 4 * -(-absmax // 256) + 4 + (16 + 256) * 4
        raise AssertionError(self.name)

    def value_bytes(self, out_features: int, in_features: int) -> int:
        """Bytes of the matrix's packed values alone (the bitsandbytes formats: 4 bits each)."""
        if self.layout is not None:
            return self.layout.value_bytes(out_features, in_features)
        return -(-out_features * in_features // 2)


NVFP4_GROUP = 16
"""Inputs per fp8 scale of NVFP4 (ModelOpt's ``group_size``; vLLM accepts no other)."""
MX_GROUP = 32
"""Inputs per e8m0 scale of the OCP MX formats (vLLM's ``OCP_MX_BLOCK_SIZE``)."""
INT4_GROUP = MatrixLayout(4, 2, 1, GROUP, zero_bits=4)
"""AWQ's and GPTQ's int4 at group 128: fp16 scales, 4-bit zero points packed 8 to an int32."""
MXFP4 = MatrixLayout(4, 1, 1, MX_GROUP)
NVFP4 = MatrixLayout(4, 1, 1, NVFP4_GROUP, extra_bytes=8)
"""e2m1 values, an fp8 scale per 16 inputs, the fp32 ``weight_scale_2`` and ``input_scale`` of the matrix."""


FORMATS: dict[str, WeightFormat] = {
    f.name: f
    for f in (
        WeightFormat("fp32", 32, "all", "float32, every weight", MatrixLayout(32)),
        WeightFormat("fp16", 16, "all", "float16, every weight", MatrixLayout(16)),
        WeightFormat("bf16", 16, "all", "bfloat16, every weight", MatrixLayout(16)),
        WeightFormat("fp8", 8, "linear", "fp8 e4m3 linear layers, an fp32 scale per matrix; embeddings, head in bf16",
                     MatrixLayout(8, 4)),
        WeightFormat("fp8-block", 8 + 32 / GROUP**2, "linear", "fp8 linear layers, an fp32 scale per 128 x 128 block",
                     MatrixLayout(8, 4, GROUP, GROUP)),
        WeightFormat("int8", 8, "linear", "int8 linear layers (W8A16 or W8A8), an fp16 scale per output channel",
                     MatrixLayout(8, 2, 1)),
        WeightFormat("int4", 4 + 20 / GROUP, "linear", "int4 linear layers, group 128: fp16 scale, 4-bit zero",
                     INT4_GROUP),
        WeightFormat("awq", 4 + 20 / GROUP, "linear", "AWQ int4, group 128: qweight, qzeros, fp16 scales", INT4_GROUP),
        WeightFormat("gptq-int4", 4 + 20 / GROUP, "linear", "GPTQ int4, group 128: qweight, qzeros, scales, g_idx",
                     INT4_GROUP._replace(group_index=True)),
        WeightFormat("nf4", 4.5, "linear", "bitsandbytes NF4, an fp32 absmax per 64 weights"),  # not fp4, its default
        WeightFormat("nf4-dq", 4.127, "linear", "bitsandbytes NF4 with double quantisation (QLoRA)"),
        WeightFormat("mxfp4", 4.25, "experts", "OCP MXFP4 routed experts, an e8m0 scale per 32; the rest in bf16",
                     MXFP4),
        WeightFormat("mxfp4-linear", 4.25, "linear", "OCP MXFP4 linear layers (AMD Quark), an e8m0 scale per 32",
                     MXFP4),
        WeightFormat("mxfp4-w4a16", 4.25, "linear", "OCP MXFP4 linear layers, bf16 activations (compressed-tensors)",
                     MXFP4),
        WeightFormat("nvfp4", 4.5, "linear", "NVFP4 linear layers (ModelOpt): e2m1, an fp8 scale per 16, fp32 globals",
                     NVFP4),
        WeightFormat("nvfp4-w4a16", 4.5, "linear", "NVFP4 weights, bf16 activations (compressed-tensors W4A16)",
                     NVFP4._replace(extra_bytes=4)),
    )
}  # fmt: skip


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
    # an alias close to the name is offered as the format it means (trial 367 #3: nv-fp4, not in the list below)
    close = list(dict.fromkeys(WEIGHT_ALIASES.get(n, n) for n in close_names(key, [*FORMATS, *WEIGHT_ALIASES])))
    guess = f"did you mean {', '.join(close)}? " if close else ""
    raise BadInputError(f"unknown weight format {name!r}: {guess}use one of {', '.join(get_args(WeightFormatName))}")


def weight_format(name: str) -> WeightFormat:
    """The ``WeightFormat`` for a name or alias."""
    return FORMATS[normalise_weight_format(name)]
