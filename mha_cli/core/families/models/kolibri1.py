"""Kolibri 1: GLM-4's sandwich norms (four a layer), per-head q/k norms, sliding-window layers with RoPE and NoPE
global layers, experts chosen by logit + correction bias and weighted by their sigmoid, one ungated shared expert."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import EQUAL_BY_SWEEP, SLIDES, Family
from mha_cli.core.families.layer_types import class_default_kinds
from mha_cli.core.families.models.glm4 import SANDWICH_NORMS
from mha_cli.core.weight_layout import WeightLayout

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def _nope_global(r: ConfigReader, fields: dict[str, Any]) -> None:
    """With a ``sliding_window`` its global layers rotate nothing (without one every layer is rotary)."""
    if r.get("sliding_window") is not None:
        fields["nope_layers"] = "global"


FAMILY = Family(
    model_types=("kolibri1",),
    config_class="Kolibri1Config (transformers 5.24)",
    window_fields=SLIDES,
    layer_kinds=class_default_kinds(
        lambda i, n: (i + 1) % 5 == 0, "Kolibri1Config", "every fifth layer full, the others sliding"
    ),
    defaults={"sliding_window": 513},
    layout={"n_norms_per_layer": 4, "qk_norm": True},
    routing_defaults={"scoring_func": "sigmoid", "topk_method": "noaux_logits", "norm_topk_prob": False},
    routing_fixed=("scoring_func", "topk_method"),
    read_fields=_nope_global,
    names=("kolibri",),
    equal_test=EQUAL_BY_SWEEP,
    weights=WeightLayout(renames=SANDWICH_NORMS, dropped=(r"\.rotary_emb\.inv_freq$",)),
)
