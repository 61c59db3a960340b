"""Gemma 3: Gemma 2's four norms with q/k norms, 5 local : 1 global layers; ``gemma3`` keeps it in text_config."""

from mha_cli.core.families import Family
from mha_cli.core.families.models.gemma import GEMMA_DIFFERENCES

FAMILY = Family(
    model_types=("gemma3", "gemma3_text"),
    config_class="Gemma3TextConfig (transformers 5.24)",
    defaults={
        "vocab_size": 262208,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "sliding_window": 4096,
        "max_position_embeddings": 131072,
        "hidden_activation": "gelu_pytorch_tanh",
    },
    layout={"n_norms_per_layer": 4, "qk_norm": True},
    tied_by_default=True,
    local_cycle=("local",) * 5 + ("global",),
    local_cycle_note="layer pattern: Gemma 3 runs 5 local : 1 global",
    names=("gemma3", "gemma-3"),
    differences=(
        *GEMMA_DIFFERENCES,
        "Gemma 3's local layers use their own RoPE theta (rope_local_base_freq 10,000); here every layer uses the"
        " spec's",
        "Gemma 3's softmax scale query_pre_attn_scalar^-0.5; this one uses head_dim^-0.5",
    ),
)
