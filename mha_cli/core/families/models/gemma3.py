"""Gemma 3: Gemma 2's four norms with q/k norms, 5 local : 1 global layers; ``gemma3`` keeps it in text_config."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import ANY_VALUE, SLIDES, Family
from mha_cli.core.families.models.gemma import GEMMA_LAYOUT

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def _no_attention_cap(r: ConfigReader, fields: dict[str, Any]) -> None:
    """Gemma 3's attention keeps attn_logit_softcapping in its config but never applies it (transformers 5.24)."""
    if fields.pop("attn_logit_softcap", None) is not None:
        r.assumptions.append("attn_logit_softcapping: not applied, as Gemma 3's attention does not")


FAMILY = Family(
    model_types=("gemma3", "gemma3_text"),
    config_class="Gemma3TextConfig (transformers 5.24)",
    window_fields=SLIDES,
    defaults={
        "vocab_size": 262208,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "sliding_window": 4096,
        "max_position_embeddings": 131072,
        "hidden_activation": "gelu_pytorch_tanh",
        "query_pre_attn_scalar": 256,
        "rope_theta": 1_000_000.0,
        "rope_local_base_freq": 10_000.0,
    },
    spellings={"activation": ("hidden_activation",)},
    layout={**GEMMA_LAYOUT, "n_norms_per_layer": 4, "qk_norm": True},
    tied_by_default=True,
    local_cycle=("local",) * 5 + ("global",),
    local_cycle_note="layer pattern: Gemma 3 runs 5 local : 1 global",
    read_fields=_no_attention_cap,
    names=("gemma3", "gemma-3"),
    equal_test="tests/test_nn_gemma.py::test_gemma_logits_equal_transformers[gemma3_text]",
    left_unread={"use_bidirectional_attention": False, "_sliding_window_pattern": ANY_VALUE},
)
