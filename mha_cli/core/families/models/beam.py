"""Beam: Gemma 2's four norms a layer, per-head q/k norms, RoPE sliding-window layers and NoPE global layers,
DeepSeek-V3's sigmoid routing with its correction bias."""

from mha_cli.core.families import SLIDES, Family
from mha_cli.core.families.layer_types import class_default_kinds
from mha_cli.core.families.models.glm4_moe import SIGMOID_NOAUX

FAMILY = Family(
    model_types=("beam",),
    config_class="BeamConfig (transformers 5.24)",
    window_fields=SLIDES,
    layer_kinds=class_default_kinds(
        lambda i, n: (i + 1) % 6 == 0 or i == n - 1,
        "BeamConfig",
        "every sixth layer and the last full, the others sliding",
    ),
    layout={"n_norms_per_layer": 4, "qk_norm": True, "nope_layers": "global"},
    routing_defaults={"scoring_func": "sigmoid", "topk_method": "noaux_tc", "norm_topk_prob": True},
    routing_fixed=SIGMOID_NOAUX,
    names=("beam",),
    differences=(
        "Beam's depth-scaled residual adds (branch / sqrt(i) + residual * sqrt((i - 1) / i), i counting the adds)",
        "Beam's position-dependent query scaling on its NoPE global layers",
        "Beam's attention output gate (self_attn.gate_proj, gate_bias): not built, not counted; its weights do not"
        " load",
    ),
    uncounted="weights understated: Beam's attention output gate (self_attn.gate_proj and gate_bias) is not counted;"
    " the cache is exact",
)
