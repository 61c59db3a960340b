"""Qwen3-VL's language model (``text_config``, ``qwen3_vl_text``): Qwen3's decoder, a per-head RMSNorm of q and k
(Qwen3-VL-8B: 36 x 2 x 128 = 9,216 norm weights a Llama-style reading leaves out), no biases, no sliding window."""

from mha_cli.core.families import Family
from mha_cli.core.families.models.qwen2_vl import MROPE_DIFFERENCE

DEEPSTACK_DIFFERENCE = (
    "Qwen3-VL's DeepStack: the tower's features added to the first decoder layers' hidden states at image tokens;"
    " not built (text-only inputs), its mergers' weights are the tower's"
)

QWEN3_VL_TEXT_DEFAULTS = {
    "vocab_size": 151936, "hidden_size": 4096, "intermediate_size": 22016, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 32, "head_dim": 128, "max_position_embeddings": 128000,
    "rope_theta": 500_000.0, "rms_norm_eps": 1e-6, "hidden_act": "silu",
}  # fmt: skip
"""Qwen3VLTextConfig's defaults (transformers 5.24), for the fields a figure reads."""

FAMILY = Family(
    model_types=("qwen3_vl", "qwen3_vl_text"),
    config_class="Qwen3VLTextConfig (transformers 5.24)",
    defaults=QWEN3_VL_TEXT_DEFAULTS,
    layout={"qk_norm": True},
    tied_by_default=False,  # Qwen3VLConfig's: the wrapper's field ties the LM head, not text_config's
    differences=(MROPE_DIFFERENCE, DEEPSTACK_DIFFERENCE),
)
