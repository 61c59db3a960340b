"""Nemotron-H: a stack of blocks, each one mixer (Mamba-2 or attention) or one feed-forward (MLP or MoE), in the
order ``layers_block_type`` (older configs: ``hybrid_override_pattern``, M * - E) lists.

Priced as the layers of its mixers: an attention block holds K/V, a Mamba-2 block its fixed state, a feed-forward
block nothing. Its feed-forward blocks are not layers of their own here: each mixer layer is given the dense MLP
(or the MoE) the config describes, so its weights are approximate (``uncounted``) and the torch decoder does not
load its checkpoints.
"""

from __future__ import annotations

from typing import Any

from mha_cli.core.errors import BadInputError
from mha_cli.core.families import ANY_VALUE, Family
from mha_cli.core.families.state_readers import mamba2_state

MIXERS = {"linear_attention": "linear_attention", "full_attention": "full_attention"}
"""Blocks that mix tokens (and keep a cache): Mamba-2 and attention."""
BLOCKS = {"M": "linear_attention", "*": "full_attention", "-": "mlp", "E": "moe"}
"""``hybrid_override_pattern``'s letters (NemotronHConfig)."""
DEFAULT_BLOCKS = ["linear_attention", "moe", "full_attention", "mlp"]
"""NemotronHConfig's blocks when a config lists none."""
MAMBA_FIELDS = {
    "mamba_n_heads": "mamba_num_heads", "mamba_d_head": "mamba_head_dim", "mamba_d_state": "ssm_state_size",
    "mamba_n_groups": "n_groups", "mamba_d_conv": "conv_kernel", "mamba_conv_bias": "use_conv_bias",
}  # fmt: skip
"""The Mamba-2 fields the shared reader reads, and Nemotron-H's own names for them."""
DEFAULTS = {"mamba_num_heads": 128, "mamba_head_dim": 64, "ssm_state_size": 128, "n_groups": 8, "conv_kernel": 4}


def _blocks(config: dict[str, Any], origin: str) -> list[str]:
    blocks = config.get("layers_block_type")
    if blocks is None and config.get("hybrid_override_pattern") is not None:
        pattern = config["hybrid_override_pattern"]
        if not isinstance(pattern, str) or set(pattern) - set(BLOCKS):
            raise BadInputError(f"{origin}: hybrid_override_pattern must be a string of M, *, - and E, got {pattern!r}")
        blocks = [BLOCKS[c] for c in pattern]
    blocks = DEFAULT_BLOCKS if blocks is None else blocks
    if not isinstance(blocks, list) or set(map(str, blocks)) - set(BLOCKS.values()):
        raise BadInputError(f"{origin}: layers_block_type must list {', '.join(sorted(BLOCKS.values()))} blocks")
    return blocks


def mixer_layers(config: dict[str, Any], origin: str) -> dict[str, Any]:
    """The config with its mixer blocks as the layers (``num_hidden_layers``, ``layers_block_type``), its Mamba-2
    fields under the shared reader's names, and no sliding window (its attention blocks attend to every token)."""
    mixers = [b for b in _blocks(config, origin) if b in MIXERS]
    if not mixers:
        raise BadInputError(f"{origin}: Nemotron-H's layers_block_type lists no Mamba-2 or attention block")
    view = {k: v for k, v in config.items() if k not in ("hybrid_override_pattern", "sliding_window")}
    view |= {"num_hidden_layers": len(mixers), "layers_block_type": mixers}
    for ours, theirs in MAMBA_FIELDS.items():
        value = config.get(theirs, DEFAULTS.get(theirs))
        if value is not None:
            view[ours] = value
    return view


def _state(r, d_model: int, fields: dict[str, Any]) -> dict[str, Any]:
    """Mamba-2 of mamba_num_heads x mamba_head_dim channels (not expand x hidden_size)."""
    inner = r.count("mamba_n_heads", "mamba_n_heads") * r.count("mamba_d_head", "mamba_d_head")
    return {**mamba2_state(r, d_model, inner=inner, out_proj="mamba_proj_bias"), "on_attention_layers": False}


FAMILY = Family(
    model_types=("nemotron_h",),
    config_class="NemotronHConfig (transformers 5.24)",
    defaults={"mamba_expand": 2},
    layout={"mlp": "plain"},  # up_proj, down_proj: no gate
    config_view=mixer_layers,
    fixed_state="Mamba-2",
    state=_state,
    names=("nemotron-h", "nemotron_h"),
    unbuilt="MLP-only and MoE-only",
    uncounted=(
        "weights approximate: Nemotron-H's MLP and MoE blocks are layers of their own, counted here as one dense MLP"
        " (or MoE) per Mamba-2 or attention layer; the cache and state are exact"
    ),
    differences=(
        "Nemotron-H's blocks (one mixer or one MLP/MoE each, one norm each) are built as mixer + MLP layers; its"
        " checkpoints do not load",
        "Nemotron-H's relu2 MLP activation (squared ReLU) is not built",
    ),
    left_unread={
        **dict.fromkeys(MAMBA_FIELDS.values(), ANY_VALUE),  # read under the shared reader's names (the view)
        **dict.fromkeys(
            ("mlp_hidden_act", "moe_shared_expert_intermediate_size", "moe_shared_expert_overlap"), ANY_VALUE
        ),
        **dict.fromkeys(
            ("use_mamba_kernels", "chunk_size", "residual_in_fp32", "rescale_prenorm_residual", "mamba_hidden_act"),
            ANY_VALUE,
        ),
        **dict.fromkeys(
            (
                "time_step_min",
                "time_step_max",
                "time_step_floor",
                "expand",
                "num_nextn_predict_layers",
                "mtp_layers_block_type",
            ),
            ANY_VALUE,
        ),
        "time_step_limit": [0.0, float("inf")],
        "mamba_ssm_cache_dtype": "float32",
        "use_bias": False,
        "moe_latent_size": None,
    },
)
