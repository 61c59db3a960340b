"""Mamba (Mamba-1, ``state-spaces/mamba-*-hf``): attention-free, every layer one Mamba-1 mixer and no MLP.

A block is x + mixer(norm(x)) (``MambaBlock``: one RMSNorm, the mixer); the stack ends with ``norm_f``. The mixer's
width is ``intermediate_size`` (MambaConfig sets it to expand x hidden_size when a config.json leaves it out), its
step projection ``time_step_rank`` wide (``auto``: ceil(hidden_size / 16)); ``use_bias`` biases both in_proj and
out_proj, ``use_conv_bias`` the conv. Each layer holds one fixed state per sequence: d_inner x d_state recurrent
values and a conv over d_inner channels; nothing per token.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import ANY_VALUE, Family
from mha_cli.core.weight_layout import WeightLayout

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader
    from mha_cli.core.schemas import LayerKind


def every_layer_mixes(r: ConfigReader, n_layers: int) -> list[LayerKind]:
    """An attention-free stack: every layer is its fixed-state mixer."""
    return ["linear"] * n_layers


def mamba1_state(r: ConfigReader, d_model: int, fields: dict[str, Any]) -> dict[str, Any]:
    """MambaConfig's (and FalconMambaConfig's) Mamba-1 mixer: d_inner channels of d_state each, a conv over them."""
    inner = r.get("intermediate_size")
    inner = r.count("intermediate_size", "intermediate_size") if inner is not None else None
    inner = inner or r.count("expand", "expand") * d_model
    dt_rank = r.get("time_step_rank")
    biased = bool(r.config.get("use_bias", False))
    return {
        "kind": "mamba", "n_heads": inner, "head_dim": 1, "state_dim": r.count("state_size", "state_size"),
        "conv_dim": inner, "conv_kernel": r.count("conv_kernel", "conv_kernel"),
        **({} if dt_rank in (None, "auto") else {"dt_rank": r.count("time_step_rank", "time_step_rank")}),
        "conv_bias": bool(r.config.get("use_conv_bias", True)), "in_proj_bias": biased, "out_proj_bias": biased,
        "output_norm": False,
    }  # fmt: skip


WEIGHTS = WeightLayout(
    renames=(
        (r"^backbone\.embeddings\.", "model.embed_tokens."),
        (r"^backbone\.norm_f\.", "model.norm."),
        (r"^backbone\.layers\.(\d+)\.norm\.", r"model.layers.\1.input_layernorm."),
        (r"^backbone\.layers\.(\d+)\.mixer\.", r"model.layers.\1.self_attn."),
    ),
)
"""transformers keeps the stack under ``backbone`` (``embeddings``, ``layers.N.norm``, ``layers.N.mixer``,
``norm_f``); ours is Llama's ``model`` with the mixer where attention sits."""

MIXER_NUMERICS = dict.fromkeys(
    (
        "expand", "time_step_scale", "time_step_min", "time_step_max", "time_step_init_scheme", "time_step_floor",
        "rescale_prenorm_residual", "residual_in_fp32", "use_mambapy", "use_associative_scan",
        # the original mamba_ssm fields its -hf conversions kept, which transformers does not read
        "rms_norm", "fused_add_norm", "pad_vocab_size_multiple", "n_layer",
    ),
    ANY_VALUE,
)  # fmt: skip
"""Fields of MambaConfig (and mamba_ssm leftovers in -hf configs) that change no size: initialisation, the residual's
fp32 accumulation, which kernel runs the scan. ``expand`` is read where ``intermediate_size`` is absent."""

FAMILY = Family(
    model_types=("mamba",),
    config_class="MambaConfig (transformers 5.24)",
    defaults={"state_size": 16, "conv_kernel": 4, "expand": 2},
    spellings={"layers": ("n_layer",)},
    layout={"mlp_pattern": ["none"]},
    tied_by_default=True,
    layer_kinds=every_layer_mixes,
    fixed_state="Mamba",
    attention_free=True,
    state=mamba1_state,
    names=("mamba-1", "mamba-130m", "mamba-370m", "mamba-790m", "mamba-1.4b", "mamba-2.8b"),
    weights=WEIGHTS,
    equal_test="tests/test_attention_free.py::test_the_built_model_gives_transformers_logits (whole decoder)",
    left_unread=MIXER_NUMERICS,
)
