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

Where a list is empty, vLLM 0.19.1 reads the checkpoint's safetensors headers instead (AWQ's and GPTQ's
``maybe_update_config``); mha's own header reading (``core.header_weights``) prices such a checkpoint. Any other of
the exclusion fields (``EXCLUSION_FIELDS``) a format's loader does not read is refused in one line naming it. Pure
Python.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from mha_cli.core.errors import BadInputError
from mha_cli.core.weight_formats import FORMATS, GROUP

if TYPE_CHECKING:
    from mha_cli.core.schemas import ModelSpec
    from mha_cli.core.weight_scheme import WeightScheme

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

DYNAMIC_KEYS = frozenset({"bits", "group_size", "desc_act", "sym"})
"""What a GPTQ ``dynamic`` rule may override (``gptq_utils.override_config``); ``desc_act`` and ``sym`` store the same
bytes (a GPTQ checkpoint holds ``qzeros`` and ``g_idx`` either way)."""


def named_scheme(
    method: str, fmt: str, quant: dict[str, Any], config: dict[str, Any], origin: str
) -> WeightScheme | None:
    """The scheme of a named format ``fmt`` (read from ``quant_method`` ``method``) whose ``quant`` keeps modules
    unquantised; None when it keeps none (the named format prices it). ``config``: the whole config.json (mxfp4's
    check reads its layer count)."""
    _refuse_unread(method, quant, origin)
    if method == "mxfp4":
        _mxfp4_keeps_experts(_names(quant, "modules_to_not_convert", origin), config, origin)
        return None
    if method == "gptq":
        return _gptq(fmt, quant, origin)
    if method == "fp8":  # Fp8Config: ignored_layers, and modules_to_not_convert only when that is empty
        field = "ignored_layers" if quant.get("ignored_layers") else "modules_to_not_convert"
    else:
        field = READ_FIELDS[method][0]
    ignore = _names(quant, field, origin)
    if not ignore:
        return None
    matching = "fp8" if method == "fbgemm_fp8" else method
    if matching != "gptq" and (regex := next((e for e in ignore if e.startswith("re:")), None)):
        raise BadInputError(
            f"{origin}: quantization_config {field} entry {regex!r}: vLLM 0.19.1's {method} loader compares names, not"
            " regular expressions; remove the entry from a copy of the file"
        )
    return _scheme(matching, fmt, ignore, experts_ignore=method != "bitsandbytes")


def _scheme(method: str, fmt: str, ignore: list[str], targets: list[str] | None = None,
            experts_ignore: bool = True) -> WeightScheme:  # fmt: skip
    """One rule, ``fmt``'s layout on ``targets`` (every linear layer), the ``ignore`` list kept in bf16."""
    from mha_cli.core.weight_scheme import LINEAR, SchemeRule, WeightScheme

    named = FORMATS[fmt]
    layout = named.layout
    rule = SchemeRule(
        name=fmt, targets=targets or [LINEAR], format=fmt, value_bits=layout.value_bits if layout else 4,
        scale_bytes=layout.scale_bytes if layout else 0, scale_rows=layout.scale_rows if layout else 0,
        scale_cols=layout.scale_cols if layout else 0, zero_bits=layout.zero_bits if layout else 0,
        group_index=layout.group_index if layout else False, extra_bytes=layout.extra_bytes if layout else 0,
        description=named.description,
    )  # fmt: skip
    return WeightScheme(
        method=method, format=fmt, rules=[rule], ignore=ignore, fused_experts=True, experts_ignore=experts_ignore
    )


def _gptq(fmt: str, quant: dict[str, Any], origin: str) -> WeightScheme | None:
    """GPTQ: ``modules_in_block_to_quantize`` as the rule's targets (and every routed expert), ``dynamic``'s
    negative rules as ``re:`` ignore entries."""
    from mha_cli.core.weight_scheme import EXPERTS, LINEAR

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
        if override.get("bits", 4) != 4 or override.get("group_size", GROUP) != GROUP:
            raise _unread(origin, "dynamic", f"rule {pattern!r} storing bits={override.get('bits', 4)} group_size="
                          f"{override.get('group_size', GROUP)} (mha prices GPTQ int4 group {GROUP} alone)")  # fmt: skip
    block = quant.get("modules_in_block_to_quantize") or []
    if not isinstance(block, list):
        raise _unread(origin, "modules_in_block_to_quantize", "that is not a list")
    flat = [item for entry in block for item in (entry if isinstance(entry, list) else [entry])]
    if not all(isinstance(item, str) for item in flat):
        raise _unread(origin, "modules_in_block_to_quantize", "that is not a list of module names")
    if not ignore and not flat:
        return None
    return _scheme("gptq", fmt, ignore, targets=[*flat, EXPERTS] if flat else [LINEAR])


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


def excludes_nothing(model: ModelSpec, scheme: WeightScheme) -> bool:
    """Whether ``scheme``'s lists keep in bf16 only what its named format leaves there anyway (``lm_head``, the
    embedding, routers): the model costs the same bytes either way."""
    from mha_cli.core.weight_bytes import rank_checkpoint_bytes, rank_weight_bytes

    return rank_checkpoint_bytes(model, 1, scheme, vocab_padding=1) == rank_weight_bytes(
        model, 1, scheme.format, vocab_padding=1
    )
