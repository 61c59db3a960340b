"""GPT-SW3: GPT-2's decoder (its modeling class), under GPT-2's weight names."""

from mha_cli.core.families.models.gpt2 import FAMILY as GPT2

FAMILY = GPT2._replace(
    model_types=("gpt-sw3",), config_class="GPTSw3Config (transformers 5.24)", names=("gpt-sw3", "gpt_sw3")
)
