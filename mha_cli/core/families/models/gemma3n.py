"""Gemma-3n: 4 local : 1 global layers, its last ``num_kv_shared_layers`` reusing earlier layers' K/V."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import ANY_VALUE, SLIDES, Family
from mha_cli.core.families.models.gemma4 import _per_layer_inputs

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader
    from mha_cli.core.schemas import LayerKind


def _every_fifth_global(r: ConfigReader, n_layers: int) -> list[LayerKind]:
    return ["global" if (i + 1) % 5 == 0 else "local" for i in range(n_layers)]


def _shared_kv_layers(r: ConfigReader, fields: dict[str, Any]) -> None:
    """Its last ``num_kv_shared_layers`` layers' K/V sharing, and its per-layer embeddings: the table Gemma 4 E2B and
    E4B took from it, of the same fields and layout (transformers 5.24 ``Gemma3nTextModel``: ``embed_tokens_per_layer``,
    ``per_layer_model_projection``, ``per_layer_projection_norm``, and each layer's ``per_layer_input_gate``,
    ``per_layer_projection``, ``post_per_layer_input_norm``; trial 392 #1: 2.41B of E4B's 6.84B were left out)."""
    if r.get("num_kv_shared_layers"):
        fields["n_kv_shared_layers"] = r.count("num_kv_shared_layers", "num_kv_shared_layers")
    _per_layer_inputs(r, fields)


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
        "hidden_size_per_layer_input": 256,
        "vocab_size_per_layer_input": 262144,
    },
    tied_by_default=True,
    # four norms a layer and q/k norms, as Gemma 3 (review 395 #3: 161,280 of E4B's norms went uncounted, unsaid)
    layout={"n_norms_per_layer": 4, "qk_norm": True},
    layer_kinds=_every_fifth_global,
    read_fields=_shared_kv_layers,
    names=("gemma3n", "gemma-3n"),
    differences=(
        "Gemma-3n scales the token embeddings by sqrt(d_model); not here",
        "Gemma-3n's attention does not scale its scores (1, with q, k and v norms); this one by head_dim^-0.5",
        "Gemma-3n's AltUp and LAuReL, and its K/V sharing across the last layers",
    ),
    unbuilt="shared K/V",
    uncounted="weights understated by about 0.5%: Gemma-3n's AltUp (altup_projections and altup_unembed_projections,"
    " 25M in E4B, and each layer's router and coefficients) and LAuReL (each layer's rank-laurel_rank pair, 9M) are"
    " not counted; its per-layer embeddings are (2.39B in E4B), as are the k/v projections its K/V-sharing layers"
    " keep in the checkpoint, and the cache is exact",
    left_unread={
        "altup_active_idx": ANY_VALUE,
        "altup_coef_clip": ANY_VALUE,
        "altup_correct_scale": ANY_VALUE,
        "altup_num_inputs": ANY_VALUE,
        "laurel_rank": ANY_VALUE,
        "activation_sparsity_pattern": ANY_VALUE,
    },
)
