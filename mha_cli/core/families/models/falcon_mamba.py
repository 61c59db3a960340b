"""Falcon-Mamba (``tiiuae/falcon-mamba-7b``): Mamba-1 without attention, its mixer RMS-normalising the step input,
B and C with norms that carry no weights (``mixer_rms_eps``).

Read as Mamba (``core.families.models.mamba``), its norms weightless (``RecurrentSpec.weightless_norms``: no weight,
no state) with their own epsilon (``norm_eps``). Its config.json states
``intermediate_size`` (8,192 for the 7B) beside an ``expand`` that does not give it; the stated width wins, as in
transformers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import Family
from mha_cli.core.families.models.mamba import MIXER_NUMERICS, WEIGHTS, every_layer_mixes, mamba1_state

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def _state(r: ConfigReader, d_model: int, fields: dict[str, Any]) -> dict[str, Any]:
    """Mamba-1's, with FalconMambaMixer's weightless RMS norms of dt, B and C (epsilon ``mixer_rms_eps``)."""
    eps = r.get("mixer_rms_eps")
    return {**mamba1_state(r, d_model, fields), "output_norm": True, "weightless_norms": True, "norm_eps": float(eps)}


FAMILY = Family(
    model_types=("falcon_mamba",),
    config_class="FalconMambaConfig (transformers 5.24)",
    layout={"mlp_pattern": ["none"]},
    tied_by_default=True,
    layer_kinds=every_layer_mixes,
    fixed_state="Mamba",
    attention_free=True,
    state=_state,
    names=("falcon-mamba", "falcon_mamba"),
    weights=WEIGHTS,
    equal_test="tests/test_attention_free.py::test_the_built_model_gives_transformers_logits (whole decoder)",
    defaults={"state_size": 16, "conv_kernel": 4, "expand": 2, "mixer_rms_eps": 1e-6},
    left_unread=MIXER_NUMERICS,
)
