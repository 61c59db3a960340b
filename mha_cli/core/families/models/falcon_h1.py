"""Falcon-H1: attention and a Mamba-2 mixer side by side in every layer, muP multipliers throughout."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.errors import BadInputError
from mha_cli.core.families import ANY_VALUE, EQUAL_BY_SWEEP, Family
from mha_cli.core.families.state_readers import mamba2_state
from mha_cli.core.weight_layout import WeightLayout

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader
    from mha_cli.core.schemas import LayerKind


def _every_layer_attends(r: ConfigReader, n_layers: int) -> list[LayerKind]:
    return ["global"] * n_layers


MAMBA_D_SSM_DEFAULT = 1024
"""FalconH1Config's ``mamba_d_ssm`` where config.json leaves it out (transformers 5.25
``configuration_falcon_h1.py``; null there means ``mamba_expand`` x ``hidden_size``), which vLLM reads through it."""


def _state(r: ConfigReader, d_model: int, fields: dict[str, Any]) -> dict[str, Any]:
    """Mamba-2 beside attention; its SSM width is ``mamba_d_ssm``, its out_proj bias ``projectors_bias``, its
    gated norm present with ``mamba_rms_norm`` (normalising before the gate with ``mamba_norm_before_gate``)."""
    normed = bool(r.config.get("mamba_rms_norm", False))
    width = "mamba_d_ssm"
    if "mamba_d_ssm" not in r.config:  # absent is not null: FalconH1Config's default, not mamba_expand x hidden_size
        width = "mamba_d_ssm absent: FalconH1Config's default"
        inner = r.assume(MAMBA_D_SSM_DEFAULT, f"mamba_d_ssm absent: {MAMBA_D_SSM_DEFAULT:,}, FalconH1Config's default")
    else:
        inner = r.count("mamba_d_ssm", "mamba_d_ssm") if r.get("mamba_d_ssm") is not None else None
    return {
        **mamba2_state(r, d_model, inner=inner, out_proj="projectors_bias", width=width),
        "on_attention_layers": True,
        "output_norm": normed,
        **({"norm_before_gate": True} if normed and r.config.get("mamba_norm_before_gate", True) else {}),
    }


SCALARS = {
    "embedding": "embedding_multiplier", "attention_in": "attention_in_multiplier",
    "attention_out": "attention_out_multiplier", "key": "key_multiplier", "ssm_in": "ssm_in_multiplier",
    "ssm_out": "ssm_out_multiplier",
}  # fmt: skip
"""``Multipliers`` fields and the config.json keys of Falcon-H1's scalar multipliers."""


def _factors(r: ConfigReader, key: str, count: int) -> list[float]:
    value = r.config.get(key)
    if value is None:
        return [1.0] * count
    if not isinstance(value, list) or len(value) != count or not all(isinstance(v, int | float) for v in value):
        raise BadInputError(f"{r.origin}: {key} must list {count} numbers, got {value!r}")
    return [float(v) for v in value]


def _multipliers(r: ConfigReader, fields: dict[str, Any]) -> None:
    """Its muP multipliers (``Multipliers``; absent ones 1, FalconH1Config's defaults) and its lm_head multiplier
    (on the logits, as ``logit_scale``)."""
    found: dict[str, Any] = {name: float(r.config.get(key, 1.0) or 1.0) for name, key in SCALARS.items()}
    found["ssm_projection"] = _factors(r, "ssm_multipliers", 5)
    found["mlp_gate"], found["mlp_down"] = _factors(r, "mlp_multipliers", 2)
    if any(v != 1.0 for value in found.values() for v in (value if isinstance(value, list) else [value])):
        fields["multipliers"] = found
    head = float(r.config.get("lm_head_multiplier", 1.0) or 1.0)
    if head != 1.0:
        fields["logit_scale"] = head


WEIGHTS = WeightLayout(
    renames=(
        (r"^model\.final_layernorm\.", "model.norm."),
        (r"\.mamba\.", ".mixer."),
        (r"\.feed_forward\.", ".mlp."),
        (r"\.pre_ff_layernorm\.", ".post_attention_layernorm."),
    )
)
"""Each layer's Mamba-2 is ``mamba`` (ours: ``mixer``, beside ``self_attn``), its MLP ``feed_forward`` after
``pre_ff_layernorm``, the last norm ``final_layernorm``."""

FAMILY = Family(
    model_types=("falcon_h1",),
    config_class="FalconH1Config (transformers 5.24)",
    defaults={"mamba_n_heads": 128, "mamba_n_groups": 1, "mamba_d_state": 256, "mamba_d_conv": 4, "mamba_expand": 2},
    layer_kinds=_every_layer_attends,
    fixed_state="Mamba-2 beside attention",
    state=_state,
    read_fields=_multipliers,
    names=("falcon-h1", "falcon_h1"),
    equal_test=EQUAL_BY_SWEEP,
    weights=WEIGHTS,
    left_unread={
        "mamba_chunk_size": ANY_VALUE,
        "time_step_limit": [0.0, float("inf")],
        "mamba_expand": ANY_VALUE,
        "mamba_norm_before_gate": ANY_VALUE,
    },  # read where they count,
)
