"""The weight format a Hugging Face checkpoint is stored in, read from its ``quantization_config``.

A config.json's ``quantization_config`` changes what the weights cost, so it is read, never ignored. fp8 (with or
without ``weight_block_size``; blocks other than [128, 128] are refused; ``activation_scheme: static`` adds an fp32
``input_scale`` a matrix: ``core.named_exclusions.fp8_activation_layout``), mxfp4 (gpt-oss), GPTQ and AWQ at 4 bits and
group 128, bitsandbytes NF4 and fbgemm fp8 map to a named format (``core.weight_formats``); GPTQ at 8 bits or AWQ
and GPTQ at another group vLLM's Marlin kernels run (32, 64, GPTQ's -1) to ``int8`` / ``int4`` with their own layout
(``core.named_exclusions.group_layout``). compressed-tensors, NVIDIA ModelOpt and AMD Quark configs are
read into a ``WeightScheme`` (``core.weight_scheme``) that prices the weights tensor by tensor, each rule with the
tensors vLLM allocates for it (``create_weights`` of each scheme, vLLM ``model_executor/layers/quantization``):

- compressed-tensors (``compressed_tensors/schemes``): 4- or 8-bit integers ``pack-quantized`` (``WNA16``:
  ``weight_packed`` int32 words, ``weight_scale`` in the model dtype per group or output channel, ``weight_shape``
  int64 (2,), a ``weight_zero_point`` packed along the outputs when asymmetric, ``weight_g_idx`` int32 per input with
  ``actorder: group``); int8 with int8 activations (``W8A8Int8``: fp32 ``weight_scale`` per channel or tensor, an fp32
  ``input_scale`` when static); fp8 (``W8A8Fp8``, ``W8A16Fp8``: fp32 scales per tensor, channel or block, an fp32
  ``input_scale`` when static); NVFP4 (``W4A4Fp4``, ``W4A16Fp4``: packed e2m1, an fp8 scale per 16, fp32
  ``weight_global_scale`` and, with activations, ``input_global_scale``); MXFP4 (an e8m0 byte per 32). A module
  matches a group by name or by the ``Linear`` class; ``ignore`` keeps modules in bf16 (llm-compressor's docs,
  "ignore": ``lm_head``, ``re:.*mlp.gate$``).
- ModelOpt (``modelopt.py``), in config.json or in the checkpoint's ``hf_quant_config.json`` (``{"quantization":
  {...}}``): ``NVFP4`` (``weight`` uint8 (out, in/2), ``weight_scale`` fp8 (out, in/16), fp32 ``weight_scale_2`` and
  ``input_scale`` per matrix), ``FP8`` (fp32 ``weight_scale`` and ``input_scale``), ``FP8_PER_CHANNEL_PER_TOKEN``,
  ``FP8_PB_WO`` (fp32 per 128 x 128 block) and ``MIXED_PRECISION`` (``quantized_layers``: an algorithm per module,
  every other module bf16); ``exclude_modules`` (or ``ignore``) keeps modules in bf16. A ``W4A16_NVFP4`` module
  (``MIXED_PRECISION`` only: nvidia/Qwen3.6-27B-NVFP4's MLPs) stores NVFP4 weights and one fp32 global scale, and
  multiplies in bf16 (``SchemeRule.weight_only``): SGLang 0.5.15's ``modelopt_quant.py``
  ``ModelOptMixedPrecisionConfig.get_quant_method`` gives it ``ModelOptNvFp4A16LinearMethod``, whose ``apply`` is
  ``apply_fp4_marlin_linear`` on the bf16 activations (its ``input_scale`` dropped after loading, its
  ``weight_scale_2`` reduced to one ``weight_global_scale``; group 16 only, "NVFP4A16 Marlin requires group_size=16").
- Quark (``quark/quark.py``, ``schemes/quark_ocp_mx.py``): OCP MXFP4 (``weight`` uint8 (out, in/2), ``weight_scale``
  uint8 (out, in/32)), fp8 and int8 per tensor or channel (fp32 scales, an fp32 ``input_scale`` when static); the
  rule of a module is its ``layer_quant_config`` pattern, else its ``layer_type_quant_config``, else the
  ``global_quant_config``; ``exclude`` keeps modules in bf16.

Where it is read: the config's own ``quantization_config``, else its text model's (``text_config``), which a
multimodal wrapper may carry instead (Kimi-K2.5's int4 experts), as vLLM 0.32.0 reads it
(``model_executor/model_loader/weight_utils.py`` ``get_quant_config``: "some vision model may keep
quantization_config in their text_config"; ``transformers_utils/model_arch_config_convertor.py``
``get_quantization_config``, the same order). vLLM takes the outer one when both are there; two that differ are
refused here instead, since which one the checkpoint's tensors follow cannot be told from the config.

A named format's exclusion lists (``modules_to_not_convert``, ``ignored_layers``, ``llm_int8_skip_modules``,
GPTQ's ``modules_in_block_to_quantize`` and ``dynamic``) are read as its vLLM loader reads them
(``core.named_exclusions``): modules they keep unquantised make the format a one-rule scheme priced module by module.

Anything else is refused in one line naming the field, so no plan prices a quantised checkpoint as bf16 without
saying so. ``--weight-dtype`` still overrides the format read here (and prices every weight alike).

What an engine's kernel does to the bytes after loading is not modelled here, with one exception priced on the
engine's side: vLLM's MXFP4 MoE kernels allocate gpt-oss's experts at padded shapes (``core.engine.mxfp4_moe``), which
an engine plan adds to this count. Marlin's repacking of int4 weights
(``gptq_marlin_repack``) and its permuted scales keep their sizes; vLLM's CUTLASS NVFP4 path pads each matrix's fp8
scales to 128 rows x 4 columns (``swizzle_blockscale``), nothing for shapes that are multiples of 128 x 64; with
act-order, a row-parallel layer keeps its group scales whole on every rank (priced at the rank's share).

Sources (vLLM ``vllm/model_executor/layers/quantization``, read through the search index): ``compressed_tensors/
schemes/compressed_tensors_wNa16.py`` (``weight_packed``, ``weight_scale``, ``weight_shape``, ``weight_zero_point``
of ``ceil(out * bits / 32)`` int32 rows, ``weight_g_idx``), ``compressed_tensors_w8a8_int8.py`` (c45614b),
``compressed_tensors_w8a8_fp8.py`` (de4766a), ``compressed_tensors_w4a4_nvfp4.py`` (85f1f91), ``modelopt.py``
(``ModelOptNvFp4LinearMethod.create_weights``), ``quark/quark.py`` (de38226: ``exclude``, ``_find_matched_config``,
``_is_ocp_mx``), ``quark/schemes/quark_ocp_mx.py`` (fb33ec8).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, NamedTuple

from mha_cli.core.errors import BadInputError, UnpricedQuantizationError
from mha_cli.core.weight_formats import GROUP, MX_GROUP, NVFP4_GROUP

if TYPE_CHECKING:
    from mha_cli.core.weight_scheme import SchemeRule, WeightScheme

SUPPORTED = (
    "fp8, fp8 blocks, mxfp4, GPTQ 4/8-bit and AWQ 4-bit at group 32, 64 or 128 (GPTQ per channel too), bitsandbytes"
    " nf4, compressed-tensors int4/int8/fp8/nvfp4/mxfp4, ModelOpt NVFP4/FP8, Quark MXFP4/fp8/int8"
)


class CheckpointWeights(NamedTuple):
    """How a checkpoint stores its weights: a named format, and for compressed-tensors, ModelOpt and Quark (or a
    named format whose config keeps modules unquantised: ``core.named_exclusions``) the scheme that prices them tensor
    by tensor (``format`` is then the scheme's)."""

    format: str
    scheme: WeightScheme | None = None
    note: str | None = None
    """What a read exclusion list that changes nothing was found to be (``core.named_exclusions``)."""


def _refuse(origin: str, what: str) -> UnpricedQuantizationError:
    return UnpricedQuantizationError(
        f"{origin}: quantization_config {what} is not a weight format mha prices ({SUPPORTED}): give --weight-dtype"
        " to price every weight in one format, or remove quantization_config from a copy of the file for bf16",
        what,
    )


def checkpoint_weight_format(config: dict[str, Any], origin: str) -> str | None:
    """The (named) weight format of the checkpoint whose config.json is ``config``; None without
    ``quantization_config``."""
    weights = read_checkpoint_weights(config, origin)
    return None if weights is None else weights.format


def read_checkpoint_weights(config: dict[str, Any], origin: str) -> CheckpointWeights | None:
    """How the checkpoint whose config.json is ``config`` stores its weights; None without ``quantization_config``.
    A ModelOpt ``hf_quant_config.json`` given as the quantization_config (``{"quantization": {...}}``) is read too,
    and a wrapper's ``text_config.quantization_config`` when it has none of its own (``quantization_config``)."""
    quant, where = quantization_config(config, origin)
    if quant is None:
        return None
    origin = origin if where == "quantization_config" else f"{origin} ({where})"
    if not isinstance(quant, dict):
        raise _refuse(origin, f"of type {type(quant).__name__}")
    method = str(quant.get("quant_method", "")).lower()
    if not method and isinstance(quant.get("quantization"), dict):
        method = "modelopt"  # hf_quant_config.json: {"producer": {"name": "modelopt"}, "quantization": {...}}
    named = _named_format(method, quant, origin)
    if named is not None:
        from mha_cli.core.named_exclusions import mxfp4_note, named_scheme

        scheme = named_scheme(method, named, quant, config, origin)
        return CheckpointWeights(named, scheme, mxfp4_note(quant) if method == "mxfp4" else None)
    readers = {"compressed-tensors": _compressed_tensors, "modelopt": _modelopt, "modelopt_fp4": _modelopt,
               "quark": _quark}  # fmt: skip
    if method in readers:
        scheme = readers[method](quant, origin)
        return None if scheme is None else CheckpointWeights(scheme.format, scheme)
    raise _refuse(origin, f"quant_method {method!r}" if method else "without a quant_method")


class DeclaredKv(NamedTuple):
    """The KV-cache format a checkpoint's quantization_config declares."""

    field: str
    """``kv_cache_quant_algo`` or ``kv_cache_scheme``."""
    shown: str
    """The format as the config writes it (``FP8``), or ``fp8`` for a scheme of 8-bit floats."""
    engines_read: bool
    """A ModelOpt or compressed-tensors checkpoint declaring fp8: engines run it by themselves
    (``core.engine.checkpoint_kv``)."""
    method: str = "modelopt"
    """``modelopt`` or ``compressed-tensors``: which releases run it (``checkpoint_kv.FIRST_READING``)."""
    format: str = "fp8"
    """The cache format the engines run it in: ``fp8``, or ``nvfp4`` (a ModelOpt NVFP4 declaration)."""

    @property
    def note(self) -> str:
        """The assumption line: the field named, never silently ignored."""
        said = f"the checkpoint declares its KV cache {self.shown} ({self.field})"
        if self.engines_read and self.format == "nvfp4":
            return (
                f"{said}: priced in nvfp4 unless --kv-dtype says otherwise on vLLM from 0.20.0, whose"
                " get_kv_cache_quant_algo_string runs it (core.engine.checkpoint_kv); in the model's dtype on earlier"
                " releases, and on SGLang and TensorRT-LLM, whose reading of it mha has not read"
            )
        if self.engines_read and self.method == "compressed-tensors":
            return (
                f"{said}: priced in fp8 unless --kv-dtype says otherwise on vLLM from 0.15.0, which sets it in every"
                " attention layer (core.engine.checkpoint_kv); in the model's dtype on earlier releases, SGLang and"
                " TensorRT-LLM"
            )
        if self.engines_read:
            return (
                f"{said}: priced in fp8 unless --kv-dtype says otherwise where the engine runs it by itself (vLLM from"
                " 0.14.0, SGLang from 0.5.3, TensorRT-LLM; core.engine.checkpoint_kv), in the model's dtype on"
                " earlier releases"
            )
        return (
            f"{said}: priced in --kv-dtype's format (bf16 unless given), as vLLM and SGLang run it (the model's dtype)"
        )


def declared_kv_cache(config: dict[str, Any], origin: str) -> DeclaredKv | None:
    """The KV-cache format the checkpoint whose config.json is ``config`` declares (ModelOpt ``kv_cache_quant_algo``,
    ``kv_cache_scheme``), or None when it declares none."""
    quant, _ = quantization_config(config, origin)
    if not isinstance(quant, dict):
        return None
    body = quant["quantization"] if isinstance(quant.get("quantization"), dict) else quant
    # present unless null: an empty or false scheme is one vLLM refuses (review 353 #4), not one left out
    field = next((k for k in ("kv_cache_scheme", "kv_cache_quant_algo") if (body.get(k), quant.get(k)) != (None, None)),
                 None)  # fmt: skip
    if field is None:
        return None
    declared = body.get(field) if body.get(field) is not None else quant.get(field)
    producer = quant.get("producer")
    modelopt = str(quant.get("quant_method", "")).lower().startswith("modelopt") or (
        isinstance(producer, dict) and producer.get("name") == "modelopt"
    )
    fp8 = (isinstance(declared, str) and declared.strip().lower() in ("fp8", "float8")) or (
        isinstance(declared, dict) and declared.get("num_bits") == 8 and declared.get("type") == "float"
        and (not modelopt or declared.get("dynamic") is False)  # vLLM's ModelOpt mapping: static scales alone
    )  # fmt: skip
    nvfp4 = (isinstance(declared, str) and declared.strip().lower() == "nvfp4") or (
        isinstance(declared, dict) and declared.get("num_bits") == 4 and declared.get("type") == "float"
    )
    shown = _declared_as(declared, fp8, nvfp4)
    compressed = str(quant.get("quant_method", "")).lower() == "compressed-tensors" and field == "kv_cache_scheme"
    if compressed and not modelopt:  # vLLM's layers read any kv_cache_scheme (checkpoint_kv): fp8 the one priced
        _refuse_kv_scheme_vllm_refuses(declared, origin)
        return DeclaredKv(field, shown, fp8, "compressed-tensors")
    nested = body is not quant  # hf_quant_config.json's "quantization", where vLLM checks kv_cache_quant_algo's type
    if field == "kv_cache_quant_algo" and nested and not isinstance(declared, str):  # trial 352 #5: a number, an object
        raise BadInputError(
            f"{origin}: quantization_config kv_cache_quant_algo is {_shown_value(declared)}, not a name such as FP8"
            " (ModelOpt writes the algorithm's name): correct it in a copy of the file"
        )
    if modelopt and nvfp4:  # vLLM from 0.20.0 maps it to its nvfp4 cache (core.engine.checkpoint_kv)
        return DeclaredKv(field, shown, True, "modelopt", "nvfp4")
    return DeclaredKv(field, shown, modelopt and fp8)


def _declared_as(declared: Any, fp8: bool, nvfp4: bool) -> str:
    """A declared KV format as the assumption names it: the config's own string, else what its scheme reads as."""
    if isinstance(declared, str):
        return declared
    return "fp8" if fp8 else "nvfp4" if nvfp4 else "in a format mha does not read"


KV_SCHEME_STRATEGIES = ("tensor", "attn_head")
"""The ``strategy`` values of a compressed-tensors ``kv_cache_scheme`` vLLM runs (``QuantizationStrategy.TENSOR``,
``ATTN_HEAD``: ``CompressedTensorsKVCacheMethod.validate_kv_cache_scheme``, 0.33.0)."""


def _refuse_kv_scheme_vllm_refuses(declared: Any, origin: str) -> None:
    """Refuse a compressed-tensors ``kv_cache_scheme`` vLLM refuses to start with (trial 352 #5: a string was
    priced fp8, ``num_bits`` 4 or an int type priced bf16 with a note). vLLM builds ``CompressedTensorsKVCacheMethod``
    for every attention layer, whose ``validate_kv_cache_scheme`` (0.33.0) takes only an object of ``num_bits`` 8,
    ``type`` float, ``strategy`` tensor or attn_head, ``symmetric`` true, whatever ``--kv-cache-dtype`` says."""
    if not isinstance(declared, dict):
        raise BadInputError(
            f"{origin}: quantization_config kv_cache_scheme is {_shown_value(declared)}, not an object: vLLM reads"
            " num_bits, type, strategy and symmetric from it (CompressedTensorsKVCacheMethod): correct it in a copy"
            ' of the file, e.g. {"num_bits": 8, "type": "float", "strategy": "tensor", "symmetric": true}'
        )
    num_bits, kind = declared.get("num_bits"), declared.get("type")
    strategy, symmetric = declared.get("strategy"), declared.get("symmetric")
    runs = num_bits == 8 and not isinstance(num_bits, bool) and kind == "float" and strategy in KV_SCHEME_STRATEGIES
    if runs and symmetric:  # vLLM: `if not is_symmetric: raise`
        return
    shown = ", ".join(f"{key} {declared.get(key)!r}" for key in ("num_bits", "type", "strategy", "symmetric"))
    raise BadInputError(
        f"{origin}: quantization_config kv_cache_scheme ({shown}): vLLM runs only num_bits 8, type 'float', strategy"
        " 'tensor' or 'attn_head', symmetric true, and refuses to start on another"
        " (CompressedTensorsKVCacheMethod.validate_kv_cache_scheme, 0.33.0)"
    )


def _shown_value(value: Any) -> str:
    """A JSON value named by its kind: ``the string 'fp8'``, ``the number 8``, ``a list``, ``true``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    return "a list" if isinstance(value, list) else "an object" if isinstance(value, dict) else "null"


def _named_format(method: str, quant: dict[str, Any], origin: str) -> str | None:
    """The named format of a ``quant_method`` that stores every weight alike (None: a scheme's method)."""
    if method in ("fp8", "fbgemm_fp8"):
        block = quant.get("weight_block_size")
        if block and block != [GROUP, GROUP]:  # fp8-block's scales are one per 128 x 128 block
            raise _refuse(origin, f"fp8 with weight_block_size {block}")
        return "fp8-block" if block else "fp8"
    if method == "mxfp4":
        return "mxfp4"
    if method in ("gptq", "awq"):
        return _gptq_awq_format(quant, origin, method)
    if method == "bitsandbytes":
        if quant.get("load_in_4bit") and quant.get("bnb_4bit_quant_type") == "nf4":
            return "nf4-dq" if quant.get("bnb_4bit_use_double_quant") else "nf4"
        raise _refuse(origin, "bitsandbytes other than 4-bit nf4")
    return None


def quantization_config(config: dict[str, Any], origin: str) -> tuple[Any, str]:
    """The quantization_config of the checkpoint whose config.json is ``config`` and the field it was read from:
    its own, else its text model's (``text_config.quantization_config``), as vLLM's ``get_quant_config`` looks
    (0.32.0); (None, ...) without either. Both there and different: refused in one line."""
    outer = config.get("quantization_config")
    text = config.get("text_config")
    inner = text.get("quantization_config") if isinstance(text, dict) else None
    if outer is not None and inner is not None and outer != inner:
        raise BadInputError(
            f"{origin}: quantization_config and text_config.quantization_config differ, so which one the weights"
            " follow is not known: keep the one the checkpoint was saved with in a copy of the file"
        )
    if outer is None and inner is not None:
        return inner, "text_config.quantization_config"
    return outer, "quantization_config"


GPTQ_BITS = (4, 8)
"""GPTQ widths vLLM's Marlin kernels run (``gptq_marlin``: 4 and 8 bits)."""
GPTQ_GROUPS = (32, 64, 128, -1)
"""GPTQ group sizes vLLM's Marlin kernels run (``MARLIN_SUPPORTED_GROUP_SIZES``; -1: one group per output channel)."""
AWQ_GROUPS = (32, 64, 128)
"""AWQ group sizes (4-bit only: ``awq_marlin``)."""


def _gptq_awq_format(config: dict[str, Any], origin: str, method: str) -> str:
    """The named format of a GPTQ or AWQ config: ``gptq-int4`` or ``awq`` at 4 bits, group 128; ``int4`` or ``int8``
    at another width or group vLLM runs (Qwen2.5's GPTQ-Int8 checkpoints), whose layout
    ``core.named_exclusions.group_layout`` prices; anything else refused."""
    from mha_cli.core.named_exclusions import gptq_awq_bits_group

    bits, group = gptq_awq_bits_group(config)
    missing = [name for name, value in (("bits", bits), ("group_size", group)) if value is None]
    if missing:  # said as missing, not as a width mha does not price (trial 250)
        raise _refuse(origin, f"{method} without {' or '.join(missing)} (its quantization_config must name them)")
    if method == "gptq" and config.get("lm_head") is True:  # vLLM's GPTQConfig quantises the output head then
        raise _refuse(origin, "gptq with lm_head true (a quantised output head; mha prices the head in bf16)")
    if (bits, group) == (4, GROUP):
        return "gptq-int4" if method == "gptq" else "awq"
    runs = bits in GPTQ_BITS and group in GPTQ_GROUPS if method == "gptq" else bits == 4 and group in AWQ_GROUPS
    if not runs:
        raise _refuse(origin, f"{method} with bits={bits!r} and group_size={group!r}")  # "4", a string, shown so
    return f"int{bits}"


def _whole(value: Any, field: str, group: str, origin: str) -> Any:
    """A compressed-tensors count as its pydantic model reads it: 128 or 128.0 is 128; a string ("4", which not every
    reader takes), a bool or a fraction is refused naming the field (trial 299 #6); None stays None."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    how = "write it without quotes" if isinstance(value, str) else "give a whole number"
    raise BadInputError(
        f"{origin}: quantization_config compressed-tensors {group}: {field} {value!r} is not a whole number: {how}"
    )


def _names(value: Any, origin: str, field: str) -> list[str]:
    """A config's list of module names or patterns (None: empty)."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _refuse(origin, f"{field} that is not a list of module names")
    for item in value:  # a pattern is compiled where it is matched, far from the file: checked here (trial 320 #12)
        if item.startswith("re:"):
            try:
                re.compile(item[3:])
            except re.error as exc:
                raise BadInputError(
                    f"{origin}: quantization_config {field} pattern {item[3:]!r} is not a regular expression ({exc})"
                ) from None
    return list(value)


def _scheme(method: str, rules: list[SchemeRule], ignore: list[str], origin: str) -> WeightScheme:
    """The scheme of ``rules``, its format that of the rule covering every linear layer (else the first rule)."""
    from mha_cli.core.weight_scheme import LINEAR, WeightScheme

    if not rules:
        raise _refuse(origin, f"{method} with no quantised weights")
    main = next((rule for rule in rules if LINEAR in rule.targets), rules[0])
    return WeightScheme(method=method, format=main.format, rules=rules, ignore=ignore)


def _rule(name: str, targets: list[str], fmt: str, description: str, bits: int, scale: int, rows: int, cols: int,
          *, zero_bits: int = 0, group_index: bool = False, extra: int = 0, weight_only: bool = False) -> SchemeRule:  # fmt: skip
    """A rule storing ``targets`` in ``bits``-bit values with a ``scale``-byte scale per ``rows`` x ``cols`` block;
    ``fmt`` the named format it is closest to; ``weight_only``: its matmul takes bf16 activations."""
    from mha_cli.core.weight_scheme import SchemeRule

    return SchemeRule(
        name=name, targets=targets, format=fmt, value_bits=bits, scale_bytes=scale, scale_rows=rows, scale_cols=cols,
        zero_bits=zero_bits, group_index=group_index, extra_bytes=extra, description=description,
        weight_only=weight_only,
    )  # fmt: skip


# compressed-tensors --------------------------------------------------------------------------------------------------

PACKED = ("pack-quantized", None)
EIGHT_BIT = ("int-quantized", "float-quantized", "naive-quantized", None)
WEIGHT_SHAPE_BYTES = 16
"""compressed-tensors' ``weight_shape``: the unpacked shape, two int64."""
FP32 = 4


def _compressed_tensors(config: dict[str, Any], origin: str) -> WeightScheme:
    """compressed-tensors: a rule per config group, its targets the group's; ``ignore`` kept in bf16."""
    sparsity = config.get("sparsity_config") or {}
    if isinstance(sparsity, dict) and sparsity.get("format") not in (None, "dense"):
        raise _refuse(origin, f"compressed-tensors sparsity format {sparsity.get('format')!r}")
    if config.get("transform_config"):  # online rotations (QuIP, SpinQuant): transform layers mha does not price
        raise _refuse(origin, "compressed-tensors transform_config (online Hadamard rotations)")
    groups = config.get("config_groups") or {}
    if not isinstance(groups, dict):
        raise _refuse(origin, "compressed-tensors config_groups that is not a mapping")
    for name, group in groups.items():  # vLLM iterates a group's targets: null fails its start-up
        if isinstance(group, dict) and "targets" in group and group["targets"] is None:
            raise BadInputError(
                f"{origin}: quantization_config compressed-tensors group {name} has targets null, which vLLM cannot"
                ' load (it iterates them): give its targets ("Linear" for every linear layer)'
            )
    # a group with no targets maps no module (vLLM's target map skips it): priced by the others (review 322 #3)
    mapped = {
        name: group for name, group in groups.items() if not (isinstance(group, dict) and group.get("targets") == [])
    }
    if groups and not mapped:  # trial 320 #2: it was read as every linear layer
        raise BadInputError(
            f"{origin}: quantization_config compressed-tensors groups have empty targets: they quantise no layer (vLLM"
            ' maps no module to them and leaves every one in bf16): give their targets ("Linear" for every linear'
            " layer), or remove quantization_config from a copy of the file for bf16"
        )
    rules = [_compressed_group(name, group, config.get("format"), origin) for name, group in mapped.items()]
    return _scheme("compressed-tensors", rules, _names(config.get("ignore"), origin, "ignore"), origin)


def _refuse_classes_unpriced(name: str, targets: list[str], origin: str) -> None:
    """Refuse a compressed-tensors group whose targets are all layer classes other than ``Linear`` (``Conv2d``,
    ``Embedding``): it stores none of the weights mha prices, where its format would label them (vLLM's
    compressed-tensors quantises linear layers, attention and ``FusedMoE`` alone)."""
    from mha_cli.core.weight_scheme import EXPERTS, LINEAR, is_layer_class

    if targets and all(is_layer_class(t) and t not in (LINEAR, EXPERTS) for t in targets):
        what = f"group {name} targets {', '.join(targets)} alone"
        raise UnpricedQuantizationError(
            f"{origin}: quantization_config {what}: layer classes whose weights mha does not price (it prices Linear"
            " layers and routed experts), so the group stores none of them; target Linear or module names, or give"
            " --weight-dtype to price every weight in one format",
            what,
        )


def _compressed_group(name: str, group: Any, top_format: Any, origin: str) -> SchemeRule:
    weights = group.get("weights") if isinstance(group, dict) else None
    if not isinstance(weights, dict):
        raise _refuse(origin, f"compressed-tensors group {name} without weight settings")
    targets = _names(group.get("targets") or ["Linear"], origin, f"{name} targets")
    _refuse_classes_unpriced(name, targets, origin)
    fmt = group.get("format") or (None if top_format == "mixed-precision" else top_format)
    bits, kind, size = weights.get("num_bits"), weights.get("type", "int"), weights.get("group_size")
    strategy = weights.get("strategy") or ("group" if size else "tensor")  # compressed-tensors' default
    symmetric = weights.get("symmetric", True)
    symmetric = symmetric is None or bool(symmetric)  # 0 is false, as compressed-tensors' pydantic reads it
    inputs = group.get("input_activations")
    static_input = isinstance(inputs, dict) and not inputs.get("dynamic", False)
    what = f"compressed-tensors {name}: num_bits={bits!r} type={kind} strategy={strategy} format={fmt}" + (
        "" if symmetric else " symmetric=false"  # trial 382 #6: the symmetric twin is priced, so say what differs
    )
    bits, size = _whole(bits, "num_bits", name, origin), _whole(size, "group_size", name, origin)
    if strategy in ("group", "tensor_group") and size == -1:  # -1 is a per-channel group, said as such
        raise _refuse(origin, f"{what} with group_size -1 (strategy channel means one group per output channel)")
    if strategy in ("group", "tensor_group") and not (isinstance(size, int) and size > 0):
        raise _refuse(origin, f"{what} without a group_size")
    cols = size if strategy in ("group", "tensor_group") else 0
    rows = 1 if strategy in ("channel", "group", "tensor_group") else 0
    if kind == "int" and bits in (4, 8) and inputs is None and fmt in PACKED and strategy in ("group", "channel"):
        # WNA16: weight_packed int32, weight_scale in the model dtype, weight_shape; zero points and g_idx when asked
        if strategy == "group" and size not in GPTQ_GROUPS:  # vLLM's WNA16 kernels run Marlin's group sizes only
            raise _refuse(
                origin,
                f"{what} group_size={size} (mha prices the group sizes of vLLM's Marlin WNA16 kernels: 32, 64, 128)",
            )
        order = weights.get("actorder") in ("group", True)
        per = f"group {size}" if strategy == "group" else "per channel"
        w8a16 = " W8A16" if bits == 8 else ""  # int8 weights dequantised into bf16 MMAs (Marlin, Machete)
        label = f"int{bits}{w8a16} {'symmetric' if symmetric else 'asymmetric'}, {per}, bf16 scales"
        return _rule(name, targets, f"int{bits}", label, bits, 2, rows, cols, zero_bits=0 if symmetric else bits,
                     group_index=order, extra=WEIGHT_SHAPE_BYTES)  # fmt: skip
    w8a8 = kind == "int" and bits == 8 and isinstance(inputs, dict) and fmt in EIGHT_BIT and symmetric
    if w8a8 and strategy in ("channel", "tensor"):  # int8 W8A8: fp32 weight scales, fp32 input scale when static
        extra = static_input * (FP32 + (inputs.get("symmetric", True) is False))  # and an int8 zero point
        label = f"int8 W8A8 per {strategy}, fp32 scales (int8 MMAs, priced at bf16: no int8 rate)"
        return _rule(name, targets, "int8", label, 8, FP32, rows, 0, extra=extra)
    if kind == "float" and bits == 8 and fmt in EIGHT_BIT and strategy in ("tensor", "channel", "block"):
        block = weights.get("block_structure")
        if strategy == "block":
            if not (isinstance(block, list) and len(block) == 2 and all(isinstance(b, int) and b > 0 for b in block)):
                raise _refuse(origin, f"{what} without a block_structure of two sizes")
            rows, cols = block
        per = f"{rows} x {cols} block" if strategy == "block" else strategy
        named = "fp8-block" if strategy == "block" else "fp8"
        return _rule(
            name, targets, named, f"fp8 per {per}, fp32 scales", 8, FP32, rows, cols, extra=FP32 * static_input
        )
    if kind == "float" and bits == 4 and size == NVFP4_GROUP and fmt in ("nvfp4-pack-quantized", None):
        return _compressed_nvfp4(name, targets, inputs, what, origin)
    if kind == "float" and bits == 4 and size == MX_GROUP and fmt in ("mxfp4-pack-quantized", None):
        # vLLM 0.19.1 _get_scheme_from_parts: _is_mxfp4(weights) -> CompressedTensorsW4A16Mxfp4 whatever the inputs
        return _rule(name, targets, "mxfp4-w4a16", "mxfp4 W4A16 (Marlin), e8m0 scale per 32", 4, 1, 1, MX_GROUP)
    raise _refuse(origin, what)


def _compressed_nvfp4(name: str, targets: list[str], inputs: Any, what: str, origin: str) -> SchemeRule:
    """NVFP4 weights (e2m1, an fp8 scale per 16, an fp32 ``weight_global_scale``) as vLLM 0.19.1's
    ``_get_scheme_from_parts`` runs them: without ``input_activations`` W4A16 (``CompressedTensorsW4A16Fp4``, Marlin,
    no input scale); with NVFP4 activations W4A4 (``CompressedTensorsW4A4Fp4``, + an fp32 ``input_global_scale``);
    any other activations match no scheme there (``NotImplementedError``) and are refused."""
    if inputs is None:
        return _rule(name, targets, "nvfp4-w4a16", "nvfp4 W4A16 (Marlin), fp8 scale per 16", 4, 1, 1, NVFP4_GROUP,
                     extra=FP32)  # fmt: skip
    fp4_inputs = isinstance(inputs, dict) and inputs.get("type") == "float" and inputs.get("num_bits") == 4
    if not fp4_inputs or inputs.get("group_size") != NVFP4_GROUP:
        raise _refuse(origin, f"{what} with input_activations other than nvfp4 (no vLLM scheme runs it)")
    return _rule(name, targets, "nvfp4", "nvfp4 W4A4, fp8 scale per 16", 4, 1, 1, NVFP4_GROUP, extra=2 * FP32)


# ModelOpt ------------------------------------------------------------------------------------------------------------


def _modelopt(config: dict[str, Any], origin: str) -> WeightScheme | None:
    """ModelOpt: one algorithm on every linear layer, or ``MIXED_PRECISION`` with one per listed module; None when it
    quantises no weight (``quant_algo: null``, a KV-cache-only export)."""
    body = config["quantization"] if isinstance(config.get("quantization"), dict) else config
    both = body is config and isinstance(config.get("exclude_modules"), list) and isinstance(config.get("ignore"), list)
    if both and set(config["exclude_modules"]) != set(config["ignore"]):  # trial 320 #3
        raise BadInputError(
            f"{origin}: quantization_config has ModelOpt exclude_modules and ignore lists that differ (vLLM 0.10"
            " reads exclude_modules from a config.json, 0.19 and later ignore: ModelOptQuantConfigBase.from_config),"
            " so the layers kept in bf16 depend on the release: keep the one list the checkpoint was exported with"
        )
    ignore = _names(body.get("exclude_modules", body.get("ignore", config.get("ignore"))), origin, "exclude_modules")
    if "quant_algo" not in body:  # vLLM's ModelOpt configs raise "Missing 'quant_algo' in quantization config"
        raise _refuse(origin, "ModelOpt without a quant_algo")
    if body["quant_algo"] is None:
        if not body.get("kv_cache_quant_algo"):
            raise _refuse(origin, "ModelOpt quant_algo null without a kv_cache_quant_algo (it quantises nothing)")
        return None
    algo = str(body.get("quant_algo")).upper()
    if algo == "MIXED_PRECISION":
        layers = body.get("quantized_layers")
        if not isinstance(layers, dict) or not layers:
            raise _refuse(origin, "ModelOpt MIXED_PRECISION without quantized_layers")
        rules = [_modelopt_rule(module, [module], spec, origin) for module, spec in layers.items()]
        return _scheme("modelopt", _most_common_first(rules), ignore, origin)
    return _scheme("modelopt", [_modelopt_rule(algo, ["Linear"], body, origin)], ignore, origin)


def _modelopt_rule(name: str, targets: list[str], spec: Any, origin: str) -> SchemeRule:
    algo = str(spec.get("quant_algo") or "").upper() if isinstance(spec, dict) else ""
    if algo == "NVFP4":
        if (spec.get("group_size") or NVFP4_GROUP) != NVFP4_GROUP:  # NVFP4's format: an fp8 scale per 16 values
            raise _refuse(origin, f"ModelOpt NVFP4 group_size {spec.get('group_size')!r} (NVFP4 scales groups of 16)")
        return _rule(name, targets, "nvfp4", "nvfp4, fp8 scale per 16", 4, 1, 1, NVFP4_GROUP, extra=2 * FP32)
    if algo == "W4A16_NVFP4":
        if (spec.get("group_size") or NVFP4_GROUP) != NVFP4_GROUP:
            raise _refuse(origin, f"ModelOpt W4A16_NVFP4 group_size {spec.get('group_size')!r} (Marlin needs 16)")
        return _rule(name, targets, "nvfp4", "nvfp4 W4A16 (bf16 activations), fp8 scale per 16", 4, 1, 1, NVFP4_GROUP,
                     extra=FP32, weight_only=True)  # fmt: skip
    if algo == "FP8":
        return _rule(name, targets, "fp8", "fp8 per tensor, fp32 scales", 8, FP32, 0, 0, extra=FP32)
    if algo == "FP8_PER_CHANNEL_PER_TOKEN":
        return _rule(name, targets, "fp8", "fp8 per channel, fp32 scales", 8, FP32, 1, 0)
    if algo == "FP8_PB_WO":
        return _rule(name, targets, "fp8-block", f"fp8 per {GROUP} x {GROUP} block, fp32 scales", 8, FP32, GROUP, GROUP)
    raise _refuse(origin, f"ModelOpt quant_algo {algo or '(none)'!r}")


def _most_common_first(rules: list[SchemeRule]) -> list[SchemeRule]:
    """A mixed-precision config's rules, those of its most listed layout first (which names the scheme's format);
    each rule names its own module, so their order decides nothing else."""
    counts: dict[str, int] = {}
    for rule in rules:
        counts[rule.description] = counts.get(rule.description, 0) + 1
    return sorted(rules, key=lambda rule: -counts[rule.description])


# Quark ---------------------------------------------------------------------------------------------------------------


def _quark(config: dict[str, Any], origin: str) -> WeightScheme:
    """Quark: ``layer_quant_config`` patterns first, then ``layer_type_quant_config`` classes, then the global
    config on every linear layer; ``exclude`` kept in bf16. Without an ``export`` section refused, as vLLM's
    ``QuarkConfig.from_config`` raises "The export key should be included" (0.29.0; trial 382 #5)."""
    if not isinstance(config.get("export"), dict):
        raise _refuse(origin, "Quark without an export section (vLLM's QuarkConfig will not load one)")
    rules = []
    for section, by_type in (("layer_quant_config", False), ("layer_type_quant_config", True)):
        entries = config.get(section) or {}
        if not isinstance(entries, dict):
            raise _refuse(origin, f"Quark {section} that is not a mapping")
        for key, spec in entries.items():
            targets = ["Linear"] if by_type and key in ("Linear", "nn.Linear", "torch.nn.Linear") else [key]
            if not by_type or targets == ["Linear"]:
                rules.append(_quark_rule(key, targets, spec, origin))
    if config.get("global_quant_config"):
        rules.append(_quark_rule("global", ["Linear"], config["global_quant_config"], origin))
    return _scheme("quark", rules, _names(config.get("exclude"), origin, "exclude"), origin)


def _quark_rule(name: str, targets: list[str], spec: Any, origin: str) -> SchemeRule:
    weight = spec.get("weight") if isinstance(spec, dict) else None
    if not isinstance(weight, dict):
        raise _refuse(origin, f"Quark {name} without a weight spec")
    dtype, qscheme = weight.get("dtype"), weight.get("qscheme")
    inputs = spec.get("input_tensors")
    static_input = isinstance(inputs, dict) and not inputs.get("is_dynamic", False)
    what = f"Quark {name} weight dtype={dtype} qscheme={qscheme} group_size={weight.get('group_size')}"
    if dtype == "fp4" and qscheme == "per_group" and weight.get("group_size") == MX_GROUP:
        if weight.get("scale_format") not in (None, "e8m0"):
            raise _refuse(origin, f"{what} scale_format={weight.get('scale_format')}")
        if isinstance(inputs, dict) and inputs.get("dtype") == "fp4":  # QuarkOCP_MX: AITER's fp4 GEMM on gfx95
            return _rule(name, targets, "mxfp4-linear", "mxfp4 W4A4, e8m0 scale per 32", 4, 1, 1, MX_GROUP)
        # any other activations: QuarkOCP_MX's emulate (input_dtype != "mxfp4"), a bf16 F.linear on every device
        label = f"mxfp4 weights, {inputs.get('dtype') if isinstance(inputs, dict) else 'bf16'} activations (emulated)"
        return _rule(name, targets, "mxfp4-w4a16", label, 4, 1, 1, MX_GROUP)
    if dtype in ("fp8_e4m3", "int8") and qscheme in ("per_tensor", "per_channel"):
        rows = 1 if qscheme == "per_channel" else 0
        per = qscheme.removeprefix("per_")
        label = "fp8" if dtype == "fp8_e4m3" else "int8"
        return _rule(name, targets, label, _quark_8bit(label, per, inputs), 8, FP32, rows, 0, extra=FP32 * static_input)
    raise _refuse(origin, what)


def _quark_8bit(label: str, per: str, inputs: Any) -> str:
    """A Quark 8-bit rule in words; int8 says whether its activations are int8 (W8A8: vLLM 0.19.1 ``quark.py``
    ``_get_scheme_from_config``, ``_is_static_tensor_w8a8`` -> ``QuarkW8A8Int8``, int8 MMAs, priced at bf16: no
    target row states an int8 rate) or not (``W8``: no Quark int8 scheme there takes other activations)."""
    if label == "int8":
        kind = "W8A8" if isinstance(inputs, dict) and inputs.get("dtype") == "int8" else "W8"
        return f"int8 {kind} per {per}, fp32 scales (priced at bf16: no int8 rate)"
    return f"{label} per {per}, fp32 scales"
