"""Qwen2.5-VL's language model (``text_config``, ``qwen2_5_vl_text``): Qwen2-VL's, so Qwen2's decoder with q/k/v
biases (Qwen2.5-VL-7B: 28 x (3,584 + 2 x 512) = 129,024 bias weights a Llama-style reading leaves out)."""

from mha_cli.core.families.models.qwen2_vl import FAMILY as QWEN2_VL

FAMILY = QWEN2_VL._replace(
    model_types=("qwen2_5_vl", "qwen2_5_vl_text"), config_class="Qwen2_5_VLTextConfig (transformers 5.24)"
)
