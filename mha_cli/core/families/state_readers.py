"""Readers of the fixed-state mixers several families share (Gated DeltaNet, Mamba-2), in their own fields.

Each returns the ``recurrent`` block of a ``ModelSpec`` (``schemas.RecurrentSpec``); widths in elements. Pure Python.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.errors import BadInputError

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


STATE_DTYPE_FIELDS = ("mamba_ssm_cache_dtype", "mamba_ssm_dtype", "inference_state_dtype")
"""The config.json fields that set the dtype a fixed-state layer's recurrent state is cached in, as vLLM reads
them (``vllm/model_executor/models/config.py``): Nemotron-H's ``mamba_ssm_cache_dtype`` (NemotronHConfig's own
field), Qwen3.5's ``mamba_ssm_dtype``; and xLSTM's ``inference_state_dtype`` (the state its mLSTM kernels keep). ``tests/test_state_dtype_sweep.py`` checks no config class of the installed
transformers has another."""
_FP32 = ("float32", "fp32")
_SIXTEEN_BIT = ("bfloat16", "bf16", "float16", "fp16", "half")


def stated_state_dtype(r: ConfigReader) -> dict[str, Any]:
    """The recurrent state's dtype as the config states it (``RecurrentSpec.state_dtype``): ``fp32``; a 16-bit dtype,
    the activations'; ``auto`` or absent, nothing (the convention's). The first of ``STATE_DTYPE_FIELDS`` set wins."""
    field = next((key for key in STATE_DTYPE_FIELDS if r.config.get(key) is not None), None)
    if field is None:
        return {}
    named = str(r.config[field])
    if named in _FP32:
        return {"state_dtype": "fp32"}
    if named in _SIXTEEN_BIT:
        return {"state_dtype": "activation"}
    if named == "auto":
        return {}
    raise BadInputError(f"{r.origin}: {field} {named!r} is not float32, bfloat16, float16 or auto")


def mixer_biases(r: ConfigReader, *, out_proj: str) -> dict[str, bool]:
    """A Mamba mixer's biases as transformers reads them: conv ``mamba_conv_bias`` (default true), in_proj
    ``mamba_proj_bias`` (default false), out_proj the field ``out_proj`` names (default false)."""
    return {
        "conv_bias": bool(r.config.get("mamba_conv_bias", True)),
        "in_proj_bias": bool(r.config.get("mamba_proj_bias", False)),
        "out_proj_bias": bool(r.config.get(out_proj, False)),
    }


def gated_deltanet_state(r: ConfigReader, d_model: int, fields: dict[str, Any]) -> dict[str, Any]:
    """Gated DeltaNet (Qwen3-Next, Qwen3.5): a (v heads, k dim, v dim) state, a short conv over q, k and v."""
    k_heads = r.count("linear_num_key_heads", "linear_num_key_heads")
    v_heads = r.count("linear_num_value_heads", "linear_num_value_heads")
    k_dim = r.count("linear_key_head_dim", "linear_key_head_dim")
    v_dim = r.count("linear_value_head_dim", "linear_value_head_dim")
    return {
        "kind": "gated_deltanet", "n_heads": v_heads, "head_dim": k_dim, "state_dim": v_dim,
        "conv_dim": 2 * k_heads * k_dim + v_heads * v_dim,
        "conv_kernel": r.count("linear_conv_kernel_dim", "linear_conv_kernel_dim"),
    }  # fmt: skip


def mamba2_state(
    r: ConfigReader, d_model: int, *, inner: int | None, out_proj: str, width: str = "mamba_d_ssm"
) -> dict[str, Any]:
    """Mamba-2 (Falcon-H1, Granite-4.0-H): a (heads, head dim, d_state) state, a short conv over x, B and C.

    ``inner``: the family's own SSM width field (``width``: how a refusal names it), else ``mamba_expand`` x
    d_model; ``out_proj``: the field that sets out_proj's bias."""
    width = width if inner else "mamba_expand x hidden_size"
    inner = inner or r.count("mamba_expand", "mamba_expand") * d_model
    heads = r.count("mamba_n_heads", "mamba_n_heads")
    head_dim = r.get("mamba_d_head")
    if head_dim in (None, "auto") and inner % heads:
        raise BadInputError(f"{r.origin}: mamba_n_heads ({heads}) must divide the Mamba width {inner:,} ({width})")
    head_dim = inner // heads if head_dim in (None, "auto") else head_dim
    if heads * head_dim != inner:  # FalconH1Config and GraniteMoeHybridConfig raise ValueError (transformers 5.25)
        raise BadInputError(
            f"{r.origin}: mamba_n_heads x mamba_d_head ({heads} x {head_dim} = {heads * head_dim:,}) must equal the"
            f" Mamba width {inner:,} ({width}), as transformers' config asserts: fix one of them"
        )
    d_state = r.count("mamba_d_state", "mamba_d_state")
    groups = r.count("mamba_n_groups", "mamba_n_groups")
    return {
        "kind": "mamba2", "n_heads": heads, "head_dim": head_dim, "state_dim": d_state, "n_groups": groups,
        "conv_dim": inner + 2 * groups * d_state, "conv_kernel": r.count("mamba_d_conv", "mamba_d_conv"),
        **mixer_biases(r, out_proj=out_proj),
    }  # fmt: skip
