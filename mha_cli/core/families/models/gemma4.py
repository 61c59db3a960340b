"""Gemma 4: Gemma 3's layout, 5 sliding : 1 full layers, its full-attention layers at their own head geometry.

transformers 5.24, ``models/gemma4``: ``Gemma4TextConfig.__post_init__`` gives every ``full_attention`` layer a
``per_layer_config`` override of ``head_dim`` (``global_head_dim``, 512 by default, against the sliding layers'
256) and, where ``attention_k_eq_v`` is set, of ``num_key_value_heads`` (``num_global_key_value_heads``: 4 in
gemma-4-31B, against its sliding layers' 16); ``Gemma4TextAttention.__init__`` sizes each layer's q/k/v/o and its
cache from that override, and under ``attention_k_eq_v`` has no v_proj on those layers (V is the key projection,
cached as its own tensor all the same). vLLM's ``models/gemma4.py`` (``Gemma4Attention``) builds each layer at the
same per-layer KV heads and head width, replicating KV heads when tp exceeds them. Read here as
``AttentionSpec.global_n_kv_heads``, ``global_head_dim`` and ``global_k_eq_v``: gemma-4-31B in bf16 caches 50 x 16 x
256 x 2 x 2 B + 10 x 4 x 512 x 2 x 2 B = 901,120 B per token below its window.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mha_cli.core.errors import BadInputError
from mha_cli.core.families import ANY_VALUE, SLIDES, Family
from mha_cli.core.families.models.gemma import GEMMA_LAYOUT

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader

GLOBAL_HEAD_DIM = 512
"""``Gemma4TextConfig.__post_init__``'s ``global_head_dim`` when a config leaves it out (transformers 5.24)."""
ROPE_PARAMETERS = {
    "sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0},
    "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1_000_000.0},
}
"""``Gemma4TextConfig.__post_init__``'s ``default_rope_params`` when a config leaves ``rope_parameters`` out
(transformers 5.24; ``Gemma4UnifiedTextConfig`` the same): a RoPE base per layer kind, not one 10,000."""


def _global_geometry(r: ConfigReader, fields: dict[str, Any]) -> None:
    """The full-attention layers' head width and, under attention_k_eq_v, KV heads (``per_layer_config`` as
    ``Gemma4TextConfig.__post_init__`` builds it); the last ``num_kv_shared_layers`` layers cache nothing (as
    Gemma-3n's); bidirectional attention over every token (a window halved, no causal mask) is refused."""
    if r.config.get("use_bidirectional_attention") == "all":
        raise BadInputError(
            f"{r.origin}: use_bidirectional_attention 'all' (every token attends both ways, the window halved) is not"
            " priced: give a causal Gemma 4 config (null or 'vision')"
        )
    k_eq_v = bool(r.config.get("attention_k_eq_v"))
    fields["global_k_eq_v"] = k_eq_v
    if r.config.get("per_layer_config"):  # a config transformers saved: the overrides themselves, which win
        fields.update(_per_layer_overrides(r, fields))
        return _shared_kv(r, fields)
    if r.config.get("global_head_dim") is not None:
        fields["global_head_dim"] = r.count("global_head_dim", "global_head_dim")
    else:
        fields["global_head_dim"] = r.assume(GLOBAL_HEAD_DIM, f"global_head_dim absent: {GLOBAL_HEAD_DIM}, the default")
    if k_eq_v and r.config.get("num_global_key_value_heads") is not None:
        fields["global_n_kv_heads"] = r.count("num_global_key_value_heads", "num_global_key_value_heads")
    _shared_kv(r, fields)


def _shared_kv(r: ConfigReader, fields: dict[str, Any]) -> None:
    """The last ``num_kv_shared_layers`` layers reuse earlier layers' K/V and cache nothing (as Gemma-3n's); unlike
    Gemma-3n's they hold no k/v projections or k norm, and under ``use_double_wide_mlp`` their MLP is twice
    intermediate_size wide (E2B)."""
    double_wide = r.config.get("use_double_wide_mlp")  # read either way: without sharing layers it widens none
    if r.config.get("num_kv_shared_layers"):
        fields["n_kv_shared_layers"] = r.count("num_kv_shared_layers", "num_kv_shared_layers")
        fields["shared_kv_projections"] = False
        if double_wide:
            fields["shared_d_ff"] = 2 * r.count("intermediate_size", "intermediate_size")


def _per_layer_inputs(r: ConfigReader, fields: dict[str, Any]) -> None:
    """Gemma 4's per-layer embeddings (E2B, E4B): ``hidden_size_per_layer_input`` values a layer (256 where left out,
    ``Gemma4TextConfig``'s default; 0 in 26B-A4B and 31B: none) from a table of ``vocab_size_per_layer_input`` rows
    (``schemas.PerLayerInputs``)."""
    if r.get("hidden_size_per_layer_input") is None:  # Gemma 4 Unified's config has no such field
        return
    width = r.count("hidden_size_per_layer_input", "hidden_size_per_layer_input", zero=True)
    if width:
        vocab = r.count("vocab_size_per_layer_input", "vocab_size_per_layer_input")
        fields["per_layer_inputs"] = {"width": width, "vocab_size": vocab}


def _per_layer_overrides(r: ConfigReader, fields: dict[str, Any]) -> dict[str, int]:
    """``per_layer_config`` (what ``Gemma4TextConfig.to_dict`` writes in place of global_head_dim and
    num_global_key_value_heads) as the global layers' geometry: one override of head_dim and/or num_key_value_heads
    on exactly the full_attention layers; anything else is refused in one line."""
    overrides = r.config["per_layer_config"]
    layer_types = r.config.get("layer_types") or []
    full = {i for i, kind in enumerate(layer_types) if kind == "full_attention"}
    problem = f"{r.origin}: per_layer_config must override head_dim and/or num_key_value_heads alike on exactly the"
    problem += " full_attention layers of layer_types (as Gemma4TextConfig builds it); this one does not"
    if not isinstance(overrides, dict) or not all(isinstance(v, dict) for v in overrides.values()):
        raise BadInputError(problem)
    layers = {int(key) for key in overrides if str(key).isdigit()}
    kinds = {tuple(sorted(v.items())) for v in overrides.values()}
    if layers != full or len(layers) != len(overrides) or len(kinds) != 1:
        raise BadInputError(problem)
    override = overrides[next(iter(overrides))]
    if set(override) - {"head_dim", "num_key_value_heads"} or not all(
        isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in override.values()
    ):
        raise BadInputError(problem)
    return {
        "global_head_dim": override.get("head_dim", fields.get("head_dim")),
        **({"global_n_kv_heads": override["num_key_value_heads"]} if "num_key_value_heads" in override else {}),
    }


MOE_FIELDS = ("num_experts", "top_k_experts", "moe_intermediate_size")
"""Gemma 4's MoE block's fields (transformers 5.24 ``Gemma4TextConfig``: None by default), read only under
enable_moe_block."""


FAMILY_LAYERS = 30
"""``Gemma4TextConfig``'s ``num_hidden_layers`` default (the family's ``defaults`` below)."""
DEFAULT_PERIOD = 6
"""``Gemma4TextConfig.__post_init__``'s default layer_types: every 6th layer full, the others sliding (5:1)."""


def _layer_types(config: Mapping[str, Any]) -> list[str] | None:
    """The layer types ``Gemma4TextConfig`` starts from, before it forces the last: the config's list, else its
    default 5:1 cycle over ``num_hidden_layers`` (the family's default where absent); None where the count is not a
    positive whole number (the reader refuses it)."""
    types = config.get("layer_types")
    if isinstance(types, list) and types:
        return list(types)
    layers = config.get("num_hidden_layers", FAMILY_LAYERS)
    if type(layers) is not int or layers < 1:
        return None
    return ["sliding_attention" if (i + 1) % DEFAULT_PERIOD else "full_attention" for i in range(layers)]


def _view(config: dict[str, Any], origin: str) -> dict[str, Any]:
    """``layer_types`` with its last layer full attention, as ``Gemma4TextConfig.__post_init__`` forces it, the
    default 5:1 cycle written out where the config has none (trial 354 #2: a last ``sliding_attention`` was priced
    sliding; review 356 #1: so was the default cycle's of 8 layers), then the MoE fields (``_moe_view``)."""
    types = _layer_types(config)
    if types is not None and types[-1] != "full_attention":
        config = {**config, "layer_types": [*types[:-1], "full_attention"]}
    return _moe_view(config, origin)


def _last_layer_note(written: Mapping[str, Any], viewed: Mapping[str, Any]) -> str | None:
    """The assumption line where ``_view`` forced the last layer full (None where it was full already)."""
    types = _layer_types(written)
    if types is None or types[-1] == "full_attention":
        return None
    where = "layer_types' last entry" if written.get("layer_types") else "the default 5:1 cycle's last layer"
    return (
        f"{where} read as full_attention: Gemma4TextConfig forces the last layer to full attention ('Forcing last"
        " layer to `full_attention`', transformers 5.25), and vLLM reads the config through it"
    )


def _moe_view(config: dict[str, Any], origin: str) -> dict[str, Any]:
    """Without enable_moe_block the MoE fields are unused and left out (the standard reader would read num_experts as
    experts); with it, all three must be set (``Gemma4TextConfig`` has no default for them) and are read."""
    if not config.get("enable_moe_block"):
        return {key: value for key, value in config.items() if key not in MOE_FIELDS}
    unset = [key for key in MOE_FIELDS if not config.get(key)]
    if unset:
        raise BadInputError(
            f"{origin}: enable_moe_block is set but {', '.join(unset)} is not: give the MoE block's sizes"
        )
    return config


def _read(r: ConfigReader, fields: dict[str, Any]) -> None:
    """The full layers' own geometry, the per-layer embeddings, then Gemma 4's MoE block (26B-A4B) where
    enable_moe_block is set."""
    _global_geometry(r, fields)
    _per_layer_inputs(r, fields)
    if "moe" in fields:
        fields["moe"].update(_moe_block(r))


def _moe_block(r: ConfigReader) -> dict[str, Any]:
    """transformers 5.24 ``Gemma4TextDecoderLayer``: every layer keeps its dense MLP (``intermediate_size``, always on:
    priced as one shared expert that wide) beside the router and ``num_experts`` routed experts of
    ``moe_intermediate_size`` (``Gemma4TextExperts``: gate_up (E, 2f, d), down (E, d, f)), ``top_k_experts`` of them a
    token, chosen by a softmax over every expert and renormalised (``Gemma4TextRouter``); the two branches are normed
    apart (``branch_norms``) and the router carries its own scales (``router_scales``). vLLM 0.34.0's ``Gemma4DecoderLayer``
    builds the same: ``Gemma4MLP`` beside a fused MoE (``FusedMoEFactory``, renormalize=True, gelu_tanh)."""
    return {
        "n_shared_experts": 1,
        "d_ff_shared": r.count("intermediate_size", "intermediate_size"),
        "branch_norms": True,
        "router_scales": True,
        "scoring_func": "softmax",
        "norm_topk_prob": True,
    }


FAMILY = Family(
    model_types=("gemma4", "gemma4_text"),
    config_class="Gemma4TextConfig (transformers 5.24)",
    window_fields=SLIDES,
    defaults={
        "vocab_size": 262144,
        "hidden_size": 2304,
        "intermediate_size": 9216,
        "num_hidden_layers": FAMILY_LAYERS,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "sliding_window": 512,
        "max_position_embeddings": 131072,
        "hidden_activation": "gelu_pytorch_tanh",
        "rope_parameters": ROPE_PARAMETERS,
        "hidden_size_per_layer_input": 256,
        "vocab_size_per_layer_input": 262144,
    },
    spellings={"activation": ("hidden_activation",), "experts_per_token": ("top_k_experts",)},
    layout={**GEMMA_LAYOUT, "n_norms_per_layer": 4, "qk_norm": True},
    tied_by_default=True,
    local_cycle=("local",) * 5 + ("global",),
    local_cycle_note="layer pattern: Gemma 4 runs 5 sliding : 1 full (Gemma4TextConfig's default layer_types)",
    read_fields=_read,
    config_view=_view,
    view_note=_last_layer_note,
    names=("gemma4", "gemma-4"),
    differences=(
        "Gemma 4's full-attention layers have their own head width and KV heads (global_head_dim,"
        " num_global_key_value_heads); the decoder builds one geometry",
        "Gemma 4's MoE block routes from the residual through its router's own norm and scales, norms the dense MLP's"
        " and the experts' branches apart and scales each expert's weight; here the dense MLP is a shared expert and"
        " both take the one normed input (the branch norms and router scales are built, not applied)",
    ),
    unbuilt="per-kind head geometry, K/V-sharing and per-layer-embedding",
    reads=frozenset({"per_layer_config"}),
    left_unread={
        "use_bidirectional_attention": ANY_VALUE,
        "enable_moe_block": ANY_VALUE,  # read by config_view: on, the MoE fields are read; off, they are left out
    },
)
