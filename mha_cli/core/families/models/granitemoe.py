"""Granite MoE (3.x): Granite's multipliers, a sparse MoE block (``block_sparse_moe``) whose router is ``router``."""

from mha_cli.core.families import EQUAL_BY_SWEEP, Family
from mha_cli.core.families.models.granite import read_granite_scalars
from mha_cli.core.weight_layout import WeightLayout

# The MoE block is block_sparse_moe, its router router; the experts are stored as ours.
WEIGHTS = WeightLayout(
    renames=((r"\.block_sparse_moe\.router\.", ".mlp.gate."), (r"\.block_sparse_moe\.", ".mlp.")),
    dropped=(r"\.rotary_emb\.inv_freq$",),
)

FAMILY = Family(
    model_types=("granitemoe",),
    config_class="GraniteMoeConfig (transformers 5.24)",
    names=("granitemoe", "granite-moe"),
    read_fields=read_granite_scalars,
    equal_test=EQUAL_BY_SWEEP,
    weights=WEIGHTS,
)
