"""Gemma-3n: 4 local : 1 global layers, its last ``num_kv_shared_layers`` reusing earlier layers' K/V."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import ANY_VALUE, SLIDES, Family

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader
    from mha_cli.core.schemas import LayerKind


def _every_fifth_global(r: ConfigReader, n_layers: int) -> list[LayerKind]:
    return ["global" if (i + 1) % 5 == 0 else "local" for i in range(n_layers)]


def _shared_kv_layers(r: ConfigReader, fields: dict[str, Any]) -> None:
    if r.get("num_kv_shared_layers"):
        fields["n_kv_shared_layers"] = r.count("num_kv_shared_layers", "num_kv_shared_layers")


FAMILY = Family(
    model_types=("gemma3n", "gemma3n_text"),
    config_class="Gemma3nTextConfig (transformers 5.24)",
    window_fields=SLIDES,
    defaults={
        "vocab_size": 262400,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "head_dim": 256,
        "sliding_window": 512,
        "num_kv_shared_layers": 15,
        "hidden_activation": "gelu_pytorch_tanh",
    },
    tied_by_default=True,
    layer_kinds=_every_fifth_global,
    read_fields=_shared_kv_layers,
    names=("gemma3n", "gemma-3n"),
    differences=(
        "Gemma-3n scales the token embeddings by sqrt(d_model); not here",
        "Gemma-3n's attention does not scale its scores (1, with q, k and v norms); this one by head_dim^-0.5",
        "Gemma-3n's AltUp, LAuReL and per-layer embeddings, and its K/V sharing across the last layers",
    ),
    unbuilt="shared K/V",
    uncounted="weights understated: Gemma-3n's per-layer embeddings (vocab_size_per_layer_input x num_hidden_layers"
    " x hidden_size_per_layer_input, about 2.35B of E4B's weights, with their projections), its AltUp and LAuReL"
    " weights are not counted; the cache is exact",
    left_unread={
        "vocab_size_per_layer_input": ANY_VALUE,
        "hidden_size_per_layer_input": ANY_VALUE,
        "altup_active_idx": ANY_VALUE,
        "altup_coef_clip": ANY_VALUE,
        "altup_correct_scale": ANY_VALUE,
        "altup_num_inputs": ANY_VALUE,
        "laurel_rank": ANY_VALUE,
        "activation_sparsity_pattern": ANY_VALUE,
    },
)
