"""Qwen2-VL's language model (``text_config``, ``qwen2_vl_text``): Qwen2's decoder, q/k/v biases and
``max_window_layers``; its multimodal RoPE rotates a text token as plain RoPE."""

from mha_cli.core.families.models.qwen2 import FAMILY as QWEN2

MROPE_DIFFERENCE = (
    "Qwen-VL's multimodal RoPE (mrope_section): built as plain RoPE, which it equals on text tokens (their"
    " temporal, height and width positions are one); image and video positions are not built"
)
"""What the torch decoder does not reproduce of every Qwen-VL decoder (it builds text-only inputs)."""

QWEN2_VL_TEXT_DEFAULTS = {
    "vocab_size": 152064, "hidden_size": 8192, "intermediate_size": 29568, "num_hidden_layers": 80,
    "num_attention_heads": 64, "num_key_value_heads": 8, "max_position_embeddings": 32768, "max_window_layers": 80,
    "rope_theta": 1_000_000.0, "rms_norm_eps": 1e-5, "use_sliding_window": False, "hidden_act": "silu",
}  # fmt: skip
"""Qwen2VLTextConfig's and Qwen2_5_VLTextConfig's defaults (transformers 5.24), for the fields a figure reads: a
config that sets ``sliding_window`` without ``use_sliding_window`` has no sliding layer, as transformers builds it."""

FAMILY = QWEN2._replace(
    model_types=("qwen2_vl", "qwen2_vl_text"),
    config_class="Qwen2VLTextConfig (transformers 5.24)",
    defaults=QWEN2_VL_TEXT_DEFAULTS,
    differences=(MROPE_DIFFERENCE,),
    equal_test=None,
)
