"""Kimi-Linear: KDA (Kimi delta attention) layers and MLA layers listed in ``linear_attn_config``; MoE.

Its MLA layers apply no RoPE (transformers' ``KimiLinearAttention`` is DeepSeek's MLA with NoPE: the
``qk_rope_head_dim`` part of the key is still shared by the heads and cached, but never rotated; config.json says
``mla_use_nope``). Its MoE routes as DeepSeek-V3 (sigmoid scores, a correction bias, groups), whatever
``moe_router_activation_func`` says, and spells ``norm_topk_prob`` ``moe_renormalize``, ``n_group``
``num_expert_group``, ``n_shared_experts`` ``num_shared_experts``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.errors import BadInputError
from mha_cli.core.families import ANY_VALUE, EQUAL_BY_SWEEP, MLA_UNREAD, Family
from mha_cli.core.families.layer_types import kinds_of_layer_types

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader
    from mha_cli.core.schemas import LayerKind


def _linear_config(r: ConfigReader) -> dict[str, Any]:
    linear = r.config.get("linear_attn_config") or {}
    if not isinstance(linear, dict):
        raise BadInputError(f"{r.origin}: linear_attn_config must be an object (kda_layers, num_heads, head_dim...)")
    return linear


def _listed_layers(r: ConfigReader, n_layers: int) -> list[LayerKind] | None:
    """``linear_attn_config``'s 1-based ``kda_layers`` are KDA (as KimiLinearConfig's layer types); the others MLA.

    Without them (and without ``layer_types``), KimiLinearConfig's own cycle: every 4th layer from the 5th is MLA."""
    kda = _linear_config(r).get("kda_layers")
    if kda is None:
        return r.assume(
            ["global" if i and i % 4 == 0 else "linear" for i in range(n_layers)],
            "linear_attn_config.kda_layers absent: every 4th layer from the 5th is MLA, the others KDA "
            "(KimiLinearConfig)",
        )
    if not isinstance(kda, list) or not all(isinstance(i, int) and 1 <= i <= n_layers for i in kda):
        raise BadInputError(f"{r.origin}: linear_attn_config.kda_layers must list 1-based layers up to {n_layers}")
    linear = {i - 1 for i in kda}
    return kinds_of_layer_types(
        r, ["linear_attention" if i in linear else "full_attention" for i in range(n_layers)], n_layers
    )


def _kda_state(r: ConfigReader, d_model: int, fields: dict[str, Any]) -> dict[str, Any]:
    """A (heads, head_dim, head_dim) fp32 state per layer, short convs on q, k and v."""
    heads = _whole(r, "num_heads", "linear_num_heads", 32)
    head_dim = _whole(r, "head_dim", "linear_head_dim", 128)
    kernel = _whole(r, "short_conv_kernel_size", "linear_conv_kernel_dim", 4)
    return {
        "kind": "kda", "n_heads": heads, "head_dim": head_dim, "state_dim": head_dim,
        "conv_dim": 3 * heads * head_dim, "conv_kernel": kernel,
    }  # fmt: skip


def _routing(r: ConfigReader, fields: dict[str, Any]) -> None:
    """KimiLinearConfig's own spellings of DeepSeek's routing fields."""
    moe = fields.get("moe")
    if moe is None:
        return
    if r.config.get("moe_renormalize") is not None:
        moe["norm_topk_prob"] = bool(r.config["moe_renormalize"])
    if r.config.get("num_expert_group") is not None:
        moe["n_group"] = r.count("num_expert_group", "num_expert_group")


def _whole(r: ConfigReader, key: str, field: str, default: int) -> int:
    """``linear_attn_config[key]`` (a checkpoint's config.json), else the config class's own ``field`` (its
    ``to_dict()``), else KimiLinearConfig's default (said): a positive whole number."""
    value, where = _linear_config(r).get(key), f"linear_attn_config.{key}"
    if value is None:
        value, where = r.config.get(field), field
    if value is None:
        return r.assume(default, f"linear_attn_config.{key} and {field} absent: {default} (KimiLinearConfig)")
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise BadInputError(f"{r.origin}: {where} must be a positive whole number, got {value!r}")
    return value


FAMILY = Family(
    model_types=("kimi_linear",),
    config_class="KimiLinearConfig (transformers 5.24)",
    defaults={"qk_rope_head_dim": 64},
    spellings={"shared_experts": ("num_shared_experts",)},
    layout={"nope_layers": "global"},
    layer_kinds=_listed_layers,
    reads=frozenset({"linear_attn_config"}),
    fixed_state="KDA",
    state=_kda_state,
    routing_defaults={
        "scoring_func": "sigmoid",
        "topk_method": "noaux_tc",
        "norm_topk_prob": True,
        "routed_scaling_factor": 2.446,
        "n_group": 1,
        "topk_group": 1,
    },
    routing_fixed=("scoring_func", "topk_method"),
    read_fields=_routing,
    equal_test=EQUAL_BY_SWEEP,
    left_unread={**MLA_UNREAD, "model_max_length": ANY_VALUE},
)
