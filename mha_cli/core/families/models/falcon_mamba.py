"""Falcon-Mamba (``tiiuae/falcon-mamba-7b``): Mamba-1 without attention, its mixer RMS-normalising the step input,
B and C with norms that carry no weights (``mixer_rms_eps``).

Sized as Mamba (``core.families.models.mamba``): the norms add no weight and no state. Its config.json states
``intermediate_size`` (8,192 for the 7B) beside an ``expand`` that does not give it; the stated width wins, as in
transformers.
"""

from __future__ import annotations

from mha_cli.core.families import ANY_VALUE, Family
from mha_cli.core.families.models.mamba import MIXER_NUMERICS, WEIGHTS, every_layer_mixes, mamba1_state

FAMILY = Family(
    model_types=("falcon_mamba",),
    config_class="FalconMambaConfig (transformers 5.24)",
    defaults={"state_size": 16, "conv_kernel": 4, "expand": 2},
    layout={"mlp_pattern": ["none"]},
    tied_by_default=True,
    layer_kinds=every_layer_mixes,
    fixed_state="Mamba",
    attention_free=True,
    state=mamba1_state,
    names=("falcon-mamba", "falcon_mamba"),
    weights=WEIGHTS,
    differences=(
        "Falcon-Mamba's weightless RMS norms of the mixer's step input, B and C are not applied by the built mixer"
        " (the same weights and state, other outputs)",
    ),
    equal_test="tests/test_attention_free.py::test_mamba_parameters_equal_transformers",
    left_unread={**MIXER_NUMERICS, "mixer_rms_eps": ANY_VALUE},
)
