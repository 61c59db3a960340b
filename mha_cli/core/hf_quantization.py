"""The weight format a Hugging Face checkpoint is stored in, read from its ``quantization_config``.

A config.json's ``quantization_config`` changes what the weights cost, so it is read, never ignored: each
method maps to a ``core.weight_formats`` name (fp8 with or without ``weight_block_size``, mxfp4, GPTQ and AWQ
at 4 bits and group 128, bitsandbytes NF4 with or without double quantisation, compressed-tensors fp8 / int8 /
int4 at group 128, fbgemm fp8), and anything else is refused in one line naming the field, so no plan prices a
quantised checkpoint as bf16 without saying so. ``--weight-dtype`` still overrides the format read here.
"""

from __future__ import annotations

from typing import Any

from mha_cli.core.errors import BadInputError
from mha_cli.core.weight_formats import GROUP


def _refuse(origin: str, what: str) -> BadInputError:
    return BadInputError(
        f"{origin}: quantization_config {what} is not a weight format mha prices (fp8, fp8 blocks, mxfp4, GPTQ/AWQ"
        " 4-bit group 128, bitsandbytes nf4, compressed-tensors fp8/int8/int4): remove quantization_config from a"
        " copy of the file to price bf16 weights"
    )


def _int4_group_128(config: dict[str, Any], origin: str, method: str) -> None:
    bits, group = config.get("bits", config.get("w_bit")), config.get("group_size", config.get("q_group_size"))
    if bits != 4 or group != GROUP:
        raise _refuse(origin, f"{method} with bits={bits} and group_size={group}")


def _compressed_tensors(config: dict[str, Any], origin: str) -> str:
    """compressed-tensors: every config group's weights must agree on one of fp8, int8 or int4 group 128."""
    formats = set()
    for group in (config.get("config_groups") or {}).values():
        weights = group.get("weights") if isinstance(group, dict) else None
        if not isinstance(weights, dict):
            raise _refuse(origin, "compressed-tensors without weight settings")
        bits, kind, size = weights.get("num_bits"), weights.get("type"), weights.get("group_size")
        if (bits, kind) == (8, "float"):
            formats.add("fp8")
        elif (bits, kind) == (8, "int"):
            formats.add("int8")
        elif (bits, kind) == (4, "int") and size == GROUP:
            formats.add("int4")
        else:
            raise _refuse(origin, f"compressed-tensors weights num_bits={bits} type={kind} group_size={size}")
    if len(formats) != 1:
        raise _refuse(origin, "compressed-tensors with no or mixed weight formats")
    return formats.pop()


def checkpoint_weight_format(config: dict[str, Any], origin: str) -> str | None:
    """The weight format of the checkpoint whose config.json is ``config``; None without ``quantization_config``."""
    quant = config.get("quantization_config")
    if quant is None:
        return None
    if not isinstance(quant, dict):
        raise _refuse(origin, f"of type {type(quant).__name__}")
    method = str(quant.get("quant_method", "")).lower()
    if method in ("fp8", "fbgemm_fp8"):
        return "fp8-block" if quant.get("weight_block_size") else "fp8"
    if method == "mxfp4":
        return "mxfp4"
    if method in ("gptq", "awq"):
        _int4_group_128(quant, origin, method)
        return "gptq-int4" if method == "gptq" else "awq"
    if method == "bitsandbytes":
        if quant.get("load_in_4bit") and quant.get("bnb_4bit_quant_type") == "nf4":
            return "nf4-dq" if quant.get("bnb_4bit_use_double_quant") else "nf4"
        raise _refuse(origin, "bitsandbytes other than 4-bit nf4")
    if method == "compressed-tensors":
        return _compressed_tensors(quant, origin)
    raise _refuse(origin, f"quant_method {method or '(none)'!r}")
