"""Jamba: Mamba-1 layers with an attention layer every ``attn_layer_period``, MoE every other layer.

Its attention has no positional encoding (the Mamba layers carry the order); its router takes the top k of a
softmax without renormalising them. transformers names the mixer ``mamba``, the MLP ``feed_forward`` (MoE:
``router``), the second norm ``pre_ff_layernorm`` and the final one ``final_layernorm``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.errors import BadInputError
from mha_cli.core.families import ANY_VALUE, EQUAL_BY_SWEEP, Family
from mha_cli.core.families.state_readers import mixer_biases
from mha_cli.core.weight_layout import WeightLayout

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader
    from mha_cli.core.schemas import LayerKind


def _attention_every_period(r: ConfigReader, n_layers: int) -> list[LayerKind]:
    """Layer i attends where i % attn_layer_period == attn_layer_offset; JambaConfig refuses an offset not below the
    period ("attention layer offset ... must be smaller than attention layer period"), which would leave no
    attention layer (trial 358 #2)."""
    period = r.count("attn_layer_period", "attn_layer_period")
    offset = r.count("attn_layer_offset", "attn_layer_offset") if r.get("attn_layer_offset") else 0
    if offset >= period:
        raise BadInputError(
            f"{r.origin}: attn_layer_offset {offset} is not below attn_layer_period {period}: transformers'"
            " JambaConfig refuses it (no layer would attend); give an offset below the period"
        )
    return ["global" if i % period == offset else "linear" for i in range(n_layers)]


def _no_layer_types(config: dict[str, Any], origin: str) -> dict[str, Any]:
    """JambaConfig derives ``layer_types`` from the period and offset and has no setter for it: a config.json that
    sets it fails to load in transformers (and in vLLM, which loads it so), so it is refused, not read."""
    if config.get("layer_types") is not None:
        raise BadInputError(
            f"{origin}: layer_types is set, which JambaConfig derives from attn_layer_period and attn_layer_offset"
            " (it has no setter: transformers fails to load this config.json); leave it out"
        )
    return config


def _mamba_state(r: ConfigReader, d_model: int, fields: dict[str, Any]) -> dict[str, Any]:
    """Mamba-1: d_inner channels, each a d_state vector; a conv over d_inner."""
    inner = r.count("mamba_expand", "mamba_expand") * d_model
    dt_rank = r.get("mamba_dt_rank")
    return {
        "kind": "mamba", "n_heads": inner, "head_dim": 1, "state_dim": r.count("mamba_d_state", "mamba_d_state"),
        "conv_dim": inner, "conv_kernel": r.count("mamba_d_conv", "mamba_d_conv"),
        **({} if dt_rank in (None, "auto") else {"dt_rank": r.count("mamba_dt_rank", "mamba_dt_rank")}),
        **mixer_biases(r, out_proj="mamba_proj_bias"),
    }  # fmt: skip


WEIGHTS = WeightLayout(
    renames=(
        (r"\.mamba\.", ".self_attn."),
        (r"\.pre_ff_layernorm\.", ".post_attention_layernorm."),
        (r"\.feed_forward\.router\.", ".mlp.gate."),
        (r"\.feed_forward\.", ".mlp."),
        (r"^model\.final_layernorm\.", "model.norm."),
    ),
)

FAMILY = Family(
    model_types=("jamba",),
    config_class="JambaConfig (transformers 5.24)",
    defaults={
        "attn_layer_period": 8,
        "attn_layer_offset": 4,
        "mamba_d_state": 16,
        "mamba_d_conv": 4,
        "mamba_expand": 2,
        "num_experts_per_tok": 2,
    },
    layout={"nope_layers": "global"},
    layer_kinds=_attention_every_period,
    config_view=_no_layer_types,
    reads=frozenset({"attn_layer_period"}),
    fixed_state="Mamba",
    state=_mamba_state,
    routing_defaults={"norm_topk_prob": False},
    routing_fixed=("norm_topk_prob",),
    weights=WEIGHTS,
    equal_test=EQUAL_BY_SWEEP,
    left_unread=dict.fromkeys(("use_mamba_kernels", "use_mambapy", "use_associative_scan"), ANY_VALUE),  # kernels,
)
