"""Solar Open: Llama's attention, every layer MoE with a shared expert and DeepSeek-V3's sigmoid routing."""

from mha_cli.core.families import Family
from mha_cli.core.families.models.glm4_moe import FAMILY as GLM4_MOE
from mha_cli.core.families.models.glm4_moe import qkv_biases_only

FAMILY = Family(
    model_types=("solar_open",),
    config_class="SolarOpenConfig (transformers 5.24)",
    defaults={"head_dim": 128, "n_shared_experts": 1},
    routing_defaults=GLM4_MOE.routing_defaults,
    routing_fixed=GLM4_MOE.routing_fixed,
    read_fields=qkv_biases_only,
    names=("solar-open",),
    equal_test="tests/test_family_sweep.py (the decoder sweep: solar_open)",
)
