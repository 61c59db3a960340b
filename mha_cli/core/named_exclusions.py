"""A named weight format's exclusion lists, read as vLLM reads them, into the per-module ``WeightScheme``.

fp8, fbgemm fp8, AWQ, GPTQ and bitsandbytes checkpoints name a format that stores every linear layer alike
(``core.weight_formats``), but their configs may keep modules unquantised: a checkpoint whose list keeps the
attention, a layer's MLP or its experts in bf16 is then a scheme of one rule (the format's layout on every linear
layer) and an ``ignore`` list, priced module by module as compressed-tensors' are (``core.weight_scheme``). Read in
vLLM 0.19.1 (``model_executor/layers/quantization``, the wheel ``pip download vllm==0.19.1 --no-deps``):

- ``fp8`` (``fp8.py`` ``Fp8Config.from_config``): ``ignored_layers``, else ``modules_to_not_convert``; ``fbgemm_fp8``
  (``fbgemm_fp8.py`` ``FBGEMMFp8Config.from_config``): ``modules_to_not_convert``. Both skip a layer by
  ``quant_utils.is_layer_skipped``: its whole name in the list (a ``FusedMoE`` when an entry holding ``experts``
  holds its name).
- ``awq`` (``awq.py`` ``AWQConfig.from_config`` and ``awq_marlin.py`` ``AWQMarlinConfig.get_quant_method``, linear
  layers and ``FusedMoE`` alike): ``modules_to_not_convert``, an entry anywhere in the name (``is_layer_skipped(...,
  skip_with_substr=True)``).
- ``gptq`` (``gptq.py`` / ``gptq_marlin.py`` ``from_config``, ``utils/gptq_utils.py``): ``modules_in_block_to_quantize``
  (a list, or lists to flatten) quantises only the linear layers whose name holds an entry
  (``is_layer_gptq_quantized``), never read for a ``FusedMoE`` (``gptq_marlin.py`` ``get_moe_quant_method``);
  ``dynamic`` ``-:<regex>`` keeps what the regex matches from the name's start unquantised, linear or ``FusedMoE``
  (``get_dynamic_override``); a ``+:`` (or unprefixed) rule that changes ``bits`` or ``group_size`` is refused, as are
  keys of it that are not read here.
- ``bitsandbytes`` (``bitsandbytes.py`` ``BitsAndBytesConfig.from_config``): ``llm_int8_skip_modules``, an entry that
  is one of the name's parts or its first parts (``is_layer_skipped_bnb``), for linear layers only: a ``FusedMoE`` is
  always quantised (``get_quant_method``).
- ``mxfp4`` (``mxfp4.py``): ``Mxfp4Config.from_config`` reads nothing; every linear layer is unquantised and every
  ``FusedMoE`` MXFP4, what ``mxfp4`` prices. Its ``modules_to_not_convert`` (gpt-oss: attention, router, embeddings,
  ``lm_head``) changes no figure; an entry that keeps a layer's experts unquantised, as transformers 5.24's
  ``integrations/mxfp4.py`` ``replace_with_mxfp4_linear`` matches ``model.layers.N.mlp.experts``
  (``quantizers/quantizers_utils.py`` ``should_convert_module``), stores bf16 experts vLLM would load as MXFP4, and is
  refused.

An fbgemm fp8 checkpoint's routed experts are not fp8 in vLLM: ``FBGEMMFp8Config.get_quant_method`` returns a
method for ``LinearBase`` layers only and None for a ``FusedMoE`` (``fbgemm_fp8.py``, read in 0.10.1, 0.19.1 and
0.29.0), which ``fused_moe/layer.py`` (``routed_experts.py`` in 0.29.0) then loads with ``UnquantizedFusedMoEMethod``,
in the model dtype (bf16), from 0.11.1 (read in 0.11.1-0.14.0, 0.19.1, 0.29.0); every release read before it (0.5.5
to 0.11.0) ``assert quant_method is not None`` there, so such a checkpoint does not load at all, and a plan priced on
one is refused (``core.engine.fbgemm_moe``, with Mixtral's own path to 0.10.1). A MoE fbgemm fp8 checkpoint is a scheme
with its experts in bf16 (``WeightScheme.experts_unquantised``), list or no list; a dense one with no list is the
named format.

Every loader but bitsandbytes' maps a fused layer (``qkv_proj``, ``gate_up_proj``) back to the checkpoint's
shards and refuses to load a list that keeps some shards unquantised and not the others (``is_layer_skipped``:
"Detected some but not all shards"): refused here too (``refuse_split_shards``). bitsandbytes compares the fused name
itself, which mha does not spell: an entry naming a shard or a fused layer is refused. A layer's routed experts are
one ``FusedMoE`` module to each loader, matched as ``model.layers.N.mlp.experts`` (``WeightScheme.fused_experts``).
A list that keeps only what the format leaves in bf16 anyway (``lm_head``, routers) costs the same bytes: the
checkpoint is then priced as the named format, and says so (``excludes_nothing``).

Where a list is empty, vLLM 0.19.1 reads the checkpoint's safetensors headers instead (AWQ's and GPTQ's
``maybe_update_config``); mha's own header reading (``core.header_weights``) prices such a checkpoint. Any other of
the exclusion fields (``EXCLUSION_FIELDS``) a format's loader does not read is refused in one line naming it. Pure
Python.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, NamedTuple

from mha_cli.core.errors import BadInputError
from mha_cli.core.weight_formats import FORMATS, MatrixLayout

if TYPE_CHECKING:
    from mha_cli.core.schemas import ModelSpec
    from mha_cli.core.weight_scheme import SchemeRule, WeightScheme

EXCLUSION_FIELDS = (
    "modules_to_not_convert", "ignored_layers", "llm_int8_skip_modules", "modules_in_block_to_quantize", "dynamic",
    "ignore", "exclude_modules", "exclude",
)  # fmt: skip
"""Fields of a quantization_config that keep modules out of (or put them into) the format."""

READ_FIELDS = {
    "fp8": ("ignored_layers", "modules_to_not_convert"),
    "fbgemm_fp8": ("modules_to_not_convert",),
    "awq": ("modules_to_not_convert",),
    "gptq": ("modules_in_block_to_quantize", "dynamic"),
    "bitsandbytes": ("llm_int8_skip_modules",),
    "mxfp4": ("modules_to_not_convert",),
}
"""The exclusion fields each named format's vLLM 0.19.1 loader reads (``from_config``)."""

NAMED_METHODS = frozenset({"fp8", "awq", "gptq", "bitsandbytes"})
"""The ``WeightScheme.method`` of the schemes read here (fbgemm fp8 matched as fp8)."""

FUSED_SHARDS = (("q_proj", "k_proj", "v_proj"), ("gate_proj", "up_proj"), ("in_proj_qkv", "in_proj_z"),
                ("in_proj_b", "in_proj_a"))  # fmt: skip
"""The checkpoint modules vLLM loads into one fused layer (``packed_modules_mapping`` of ``models/llama.py``,
``qwen2.py``, ``qwen3.py`` and, for Qwen3.5's split Gated DeltaNet, ``qwen3_5.py``)."""


BNB_UNREAD = frozenset({"qkv_proj", "gate_up_proj", *(shard for group in FUSED_SHARDS for shard in group)})
"""Names a bitsandbytes list cannot be matched on here: vLLM compares the fused layer's name (``qkv_proj``), which mha
does not spell (it names the checkpoint's ``q_proj``, ``k_proj``, ``v_proj``)."""


DYNAMIC_KEYS = frozenset({"bits", "group_size", "desc_act", "sym"})
"""What a GPTQ ``dynamic`` rule may override (``gptq_utils.override_config``); ``desc_act`` and ``sym`` store the same
bytes (a GPTQ checkpoint holds ``qzeros`` and ``g_idx`` either way)."""


def named_scheme(
    method: str, fmt: str, quant: dict[str, Any], config: dict[str, Any], origin: str
) -> WeightScheme | None:
    """The scheme of a named format ``fmt`` (read from ``quant_method`` ``method``) whose ``quant`` keeps modules
    unquantised, and of every fbgemm fp8 config (its routed experts bf16); None when it keeps none (the named format
    prices it). ``config``: the whole config.json (mxfp4's check reads its layer count)."""
    _refuse_unread(method, quant, origin)
    if method == "mxfp4":
        _mxfp4_keeps_experts(_names(quant, "modules_to_not_convert", origin), config, origin)
        return None
    layout = group_layout(method, quant) if fmt in ("int4", "int8") else None  # not 4 bits at group 128
    if method == "fbgemm_fp8":
        layout = FBGEMM_FP8
    if method == "fp8":
        layout = fp8_activation_layout(fmt, quant, origin)
    if method == "gptq":
        return _gptq(fmt, quant, origin, layout)
    if method == "fp8":  # Fp8Config: ignored_layers, and modules_to_not_convert only when that is empty
        field = "ignored_layers" if quant.get("ignored_layers") else "modules_to_not_convert"
    else:
        field = READ_FIELDS[method][0]
    ignore = _names(quant, field, origin)
    if not ignore and method != "fbgemm_fp8" and layout is None:  # fbgemm: its experts bf16 (sources: excludes_nothing)
        return None
    matching = "fp8" if method == "fbgemm_fp8" else method
    if matching == "bitsandbytes" and (shard := next((e for e in ignore if e.rpartition(".")[2] in BNB_UNREAD), None)):
        raise BadInputError(
            f"{origin}: quantization_config {field} entry {shard!r} names a layer vLLM 0.19.1 fuses (qkv_proj,"
            " gate_up_proj), whose fused name is_layer_skipped_bnb compares and mha does not spell: name its parent"
            " (self_attn, mlp) in a copy of the file"
        )
    if matching != "gptq" and (regex := next((e for e in ignore if e.startswith("re:")), None)):
        raise BadInputError(
            f"{origin}: quantization_config {field} entry {regex!r}: vLLM 0.19.1's {method} loader compares names, not"
            " regular expressions; remove the entry from a copy of the file"
        )
    return _scheme(
        matching, fmt, ignore, experts_ignore=method != "bitsandbytes", experts_unquantised=method == "fbgemm_fp8",
        layout=layout,
    )  # fmt: skip


def gptq_awq_bits_group(config: dict[str, Any]) -> tuple[Any, Any]:
    """A GPTQ or AWQ config's bits and group size (AutoAWQ spells them ``w_bit`` and ``q_group_size``)."""
    return config.get("bits", config.get("w_bit")), config.get("group_size", config.get("q_group_size"))


def group_layout(method: str, quant: dict[str, Any]) -> GroupLayout:
    """How a GPTQ or AWQ checkpoint of another width or group than 4 bits at 128 stores a matrix (vLLM's
    ``GPTQLinearMethod`` / ``AWQLinearMethod`` weights): ``qweight`` packed ``bits`` each, an fp16 scale and a
    ``bits``-bit zero point per group of a row (one per row at group -1), GPTQ's int32 ``g_idx`` per input."""
    bits, group = gptq_awq_bits_group(quant)
    per = f"group {group}" if group > 0 else "per channel"
    gptq = method == "gptq"
    parts = "qweight, qzeros, fp16 scales" + (", g_idx" if gptq else "")
    layout = MatrixLayout(bits, 2, 1, max(group, 0), zero_bits=bits, group_index=gptq)
    return GroupLayout(layout, f"{'GPTQ' if gptq else 'AWQ'} int{bits}, {per}: {parts}")


class GroupLayout(NamedTuple):
    """A GPTQ or AWQ layout other than the named formats' (``group_layout``) and its description."""

    layout: MatrixLayout
    description: str


FBGEMM_FP8 = GroupLayout(
    MatrixLayout(8, 4, 1, 0), "fbgemm fp8 linear layers, an fp32 scale per output channel; embeddings, head in bf16"
)
"""An fbgemm fp8 matrix: fp8 values and a ``weight_scale`` of (out, 1) fp32 (``FBGEMMFp8LinearMethod.create_weights``'s
``ChannelQuantScaleParameter``, vLLM 0.32.0; Meta's Llama-3.1-405B-FP8 stores them so), not fp8's one scale a matrix.
vLLM also makes a one-value fp32 ``input_scale_ub`` a layer (from the config's ``activation_scale_ub``, not a
checkpoint tensor): 4 B a fused layer, not priced."""


STATIC_FP8 = GroupLayout(
    MatrixLayout(8, 4, extra_bytes=4),
    "fp8 e4m3 linear layers, an fp32 weight scale and a static fp32 input scale per matrix; embeddings, head in bf16",
)
"""An fp8 matrix of a checkpoint with ``activation_scheme: static``: its fp8 values, the fp32 ``weight_scale`` and
the fp32 ``input_scale`` of each checkpoint matrix (``Fp8LinearMethod.create_weights``: both ``PerTensorScaleParameter``
of ``len(output_partition_sizes)``, one a shard). A fused expert's gate and up share one ``w13_input_scale``
(``Fp8MoEMethod``): 4 B an expert fewer in vLLM than counted here."""

FP8_ACTIVATION_SCHEMES = ("dynamic", "static")
"""What vLLM's ``Fp8Config`` accepts (``ACTIVATION_SCHEMES``; anything else raises "Unsupported activation scheme")."""


def fp8_activation_layout(fmt: str, quant: dict[str, Any], origin: str) -> GroupLayout | None:
    """The layout of an fp8 checkpoint's matrices by its ``activation_scheme`` (absent: dynamic, transformers'
    ``FineGrainedFP8Config`` default): None for dynamic (the named format's), ``STATIC_FP8`` for static per-tensor
    scales. Another value, or static with ``weight_block_size``, is refused as ``Fp8Config.__init__`` refuses it
    (vLLM 0.10: "The block-wise quantization only supports dynamic activation scheme")."""
    scheme = quant.get("activation_scheme", "dynamic")
    if scheme not in FP8_ACTIVATION_SCHEMES:
        raise BadInputError(
            f"{origin}: quantization_config activation_scheme {scheme!r} is not one vLLM's fp8 loader accepts"
            " (dynamic or static): correct it in a copy of the file"
        )
    if scheme == "dynamic":
        return None
    if fmt != "fp8":
        raise BadInputError(
            f"{origin}: quantization_config activation_scheme 'static' beside weight_block_size: vLLM's fp8 loader"
            " runs block-quantised weights with dynamic activation scales only; correct it in a copy of the file"
        )
    return STATIC_FP8


def _scheme(method: str, fmt: str, ignore: list[str], targets: list[str] | None = None,
            experts_ignore: bool = True, experts_unquantised: bool = False,
            layout: GroupLayout | None = None) -> WeightScheme:  # fmt: skip
    """One rule, ``fmt``'s layout (``layout``'s where given) on ``targets`` (every linear layer), the ``ignore``
    list kept in bf16."""
    from mha_cli.core.weight_scheme import LINEAR, SchemeRule, WeightScheme

    named = FORMATS[fmt]
    stored = layout.layout if layout is not None else named.layout
    rule = SchemeRule(
        name=fmt, targets=targets or [LINEAR], format=fmt, value_bits=stored.value_bits if stored else 4,
        scale_bytes=stored.scale_bytes if stored else 0, scale_rows=stored.scale_rows if stored else 0,
        scale_cols=stored.scale_cols if stored else 0, zero_bits=stored.zero_bits if stored else 0,
        group_index=stored.group_index if stored else False, extra_bytes=stored.extra_bytes if stored else 0,
        description=layout.description if layout is not None else named.description,
    )  # fmt: skip
    return WeightScheme(
        method=method,
        format=fmt,
        rules=[rule],
        ignore=ignore,
        fused_experts=True,
        experts_ignore=experts_ignore,
        experts_unquantised=experts_unquantised,
    )


def _gptq(fmt: str, quant: dict[str, Any], origin: str, layout: GroupLayout | None) -> WeightScheme | None:
    """GPTQ: ``modules_in_block_to_quantize`` as the rule's targets (and every routed expert), ``dynamic``'s
    negative rules as ``re:`` ignore entries; ``layout``: another width or group than 4 bits at 128."""
    from mha_cli.core.weight_scheme import EXPERTS, LINEAR

    base = gptq_awq_bits_group(quant)
    dynamic = quant.get("dynamic") or {}
    if not isinstance(dynamic, dict):
        raise _unread(origin, "dynamic", "that is not a mapping of module patterns")
    ignore = []
    for pattern, override in dynamic.items():
        if str(pattern).startswith("-:"):
            ignore.append("re:" + str(pattern)[2:])
            continue
        if not isinstance(override, dict) or not set(override) <= DYNAMIC_KEYS:
            raise _unread(origin, "dynamic", f"rule {pattern!r} overriding {override!r}")
        bits, group = override.get("bits", base[0]), override.get("group_size", base[1])
        if (bits, group) != base:
            stored = f"rule {pattern!r} storing bits={bits} group_size={group} (mha prices the config's own only)"
            raise _unread(origin, "dynamic", stored)
    block = quant.get("modules_in_block_to_quantize") or []
    if not isinstance(block, list):
        raise _unread(origin, "modules_in_block_to_quantize", "that is not a list")
    flat = [item for entry in block for item in (entry if isinstance(entry, list) else [entry])]
    if not all(isinstance(item, str) for item in flat):
        raise _unread(origin, "modules_in_block_to_quantize", "that is not a list of module names")
    if not ignore and not flat and layout is None:
        return None
    return _scheme("gptq", fmt, ignore, targets=[*flat, EXPERTS] if flat else [LINEAR], layout=layout)


def _mxfp4_keeps_experts(entries: list[str], config: dict[str, Any], origin: str) -> None:
    """Refuses an mxfp4 list that keeps a layer's routed experts unquantised (``should_convert_module``'s match of
    ``model.layers.N.mlp.experts``: from the start to a dot or the end, as a regex, or as the name's end)."""
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    layers = text.get("num_hidden_layers") if isinstance(text.get("num_hidden_layers"), int) else 0
    for entry in entries:
        for n in range(layers):
            name = f"model.layers.{n}.mlp.experts"
            try:
                kept = re.match(rf"(?:{entry})(?:(?<=\.)|(?=\.|$))", name) is not None or name.endswith(entry)
            except re.error:
                kept = name.endswith(entry)
            if kept:
                raise BadInputError(
                    f"{origin}: quantization_config modules_to_not_convert entry {entry!r} keeps {name} unquantised,"
                    " which vLLM 0.19.1's mxfp4 loader reads no list for (it loads every routed expert as MXFP4):"
                    " remove the entry from a copy of the file"
                )


def mxfp4_note(quant: dict[str, Any]) -> str | None:
    """What an mxfp4 config's ``modules_to_not_convert`` (read, none keeping experts) does to the figure: nothing."""
    entries = quant.get("modules_to_not_convert") or []
    if not entries:
        return None
    return (
        f"quantization_config modules_to_not_convert ({shown(entries)}) keeps no routed expert unquantised, and vLLM"
        " 0.19.1's mxfp4 loader reads no list (it loads every linear layer unquantised and every routed expert in"
        " MXFP4, as mxfp4 prices them): it changes nothing"
    )


def shown(entries: list[str]) -> str:
    """A list's first four entries, and how many more."""
    return ", ".join(entries[:4]) + (f" and {len(entries) - 4} more" if len(entries) > 4 else "")


def _refuse_unread(method: str, quant: dict[str, Any], origin: str) -> None:
    """An exclusion field the format's loader does not read, when it lists something: refused."""
    for field in EXCLUSION_FIELDS:
        if field not in READ_FIELDS[method] and quant.get(field):
            raise _unread(origin, field, f"(vLLM 0.19.1's {method} loader does not read it)")


def _unread(origin: str, field: str, why: str) -> BadInputError:
    return BadInputError(
        f"{origin}: quantization_config {field} {why}: mha cannot tell which modules the checkpoint stores"
        " unquantised; remove the field from a copy of the file to price every linear layer in the format"
    )


def _names(quant: dict[str, Any], field: str, origin: str) -> list[str]:
    value = quant.get(field)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _unread(origin, field, "that is not a list of module names")
    return list(value)


FUSED_MLA_SHARDS = ("q_a_proj", "kv_a_proj_with_mqa")
"""DeepSeek's MLA down projections, which vLLM fuses into ``fused_qkv_a_proj`` where the model has a query latent
(``deepseek_v2.py`` ``packed_modules_mapping``, ``q_lora_rank`` set; read in 0.29.0), in the families of
``FUSED_MLA_FAMILIES`` only. Not in ``FUSED_SHARDS``: a bitsandbytes list naming them stays readable."""
FUSED_MLA_FAMILIES = frozenset({"deepseek_v2", "deepseek_v3", "deepseek_v32", "glm4_moe_lite", "glm_moe_dsa", "axk1"})
"""The families whose vLLM model builds ``fused_qkv_a_proj`` (0.29.0: ``deepseek_v2.py`` for DeepSeek-V2/V3/V3.2,
Kimi-K2 and GLM-5's ``GlmMoeDsa``, ``glm4_moe_lite.py``, ``AXK1.py``); MiniCPM3's ``minicpm3.py`` builds the two as
separate layers (review 384 #1), and no other registered MLA family was read."""


def _rule_key(rule: SchemeRule | None) -> tuple[object, ...] | None:
    """What a shard's storage is, whichever config entry gave it: None for bf16."""
    if rule is None:
        return None
    return (rule.format, rule.description, rule.value_bits, rule.scale_bytes, rule.scale_rows, rule.scale_cols,
            rule.zero_bits, rule.group_index, rule.extra_bytes, rule.weight_only)  # fmt: skip


def refuse_split_shards(model: ModelSpec, scheme: WeightScheme) -> None:
    """Refuses a config that stores the shards of one fused layer differently (some unquantised and not the others,
    or in two formats): vLLM loads them as one layer of one scheme and will not start (vLLM 0.29.0: the named formats'
    and ModelOpt's ``quant_utils.is_layer_skipped`` and ``gptq_utils.is_layer_gptq_quantized``, "Detected some but not
    all shards"; compressed-tensors' ``should_ignore_layer``, "Found a different quantization schemes"; Quark's
    ``_find_matched_config``, "Found a different quantization configuration"). A compressed-tensors fused layer whose
    shards match different groups gets one scheme for all of them (``_match_fused_layer``), which the other shards'
    stored weights do not fit (trial 382 #1)."""
    from mha_cli.core.checkpoint_names import module_names
    from mha_cli.core.weight_bytes import model_modules

    names = module_names(model)
    fused = (*FUSED_SHARDS, FUSED_MLA_SHARDS) if model.family in FUSED_MLA_FAMILIES else FUSED_SHARDS
    shards = {shard: group for group in fused for shard in group}
    seen: dict[tuple[str, tuple[str, ...]], set[tuple[object, ...] | None]] = {}
    for module in model_modules(model):
        parent, _, leaf = module.rpartition(".")
        if leaf in shards and ".experts." not in module:
            seen.setdefault((parent, shards[leaf]), set()).add(_rule_key(scheme.rule_for(module, names)))
    split = next(((parent, group, keys) for (parent, group), keys in seen.items() if len(keys) > 1), None)
    if split is None:
        return
    parent, group, keys = split
    parent = names.checkpoint(f"{parent}.{group[0]}").rpartition(".")[0]  # as the checkpoint names it (linear_attn)
    how = "unquantised and not the others" if None in keys else "in one format and the others in another"
    raise BadInputError(
        f"quantization_config stores some of {parent}'s {', '.join(group)} {how}, which vLLM loads as one fused layer"
        ' of one scheme and refuses ("Detected some but not all shards", "Found a different quantization schemes"):'
        " give them one format (list all of them or none) in a copy of the file"
    )


def excludes_nothing(model: ModelSpec, scheme: WeightScheme) -> bool:
    """Whether ``scheme``'s lists keep in bf16 only what its named format leaves there anyway (``lm_head``, the
    embedding, routers): the model costs the same bytes either way."""
    from mha_cli.core.weight_bytes import rank_checkpoint_bytes, rank_weight_bytes

    return rank_checkpoint_bytes(model, 1, scheme, vocab_padding=1) == rank_weight_bytes(
        model, 1, scheme.format, vocab_padding=1
    )
