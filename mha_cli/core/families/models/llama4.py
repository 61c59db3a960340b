"""Llama 4: chunked attention on its RoPE layers, every 4th layer global without RoPE; MoE with a shared expert."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.errors import BadInputError
from mha_cli.core.families import ANY_VALUE, Family
from mha_cli.core.weight_layout import WeightLayout

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader
    from mha_cli.core.schemas import LayerKind


def _chunked_rope_layers(r: ConfigReader, n_layers: int) -> list[LayerKind]:
    """Layers with RoPE attend within chunks, every ``no_rope_layer_interval``-th (NoPE) globally."""
    uses_rope = r.config.get("no_rope_layers") or [
        int((i + 1) % r.count("no_rope_layer_interval", "no_rope_layer_interval") != 0) for i in range(n_layers)
    ]
    if not isinstance(uses_rope, list) or len(uses_rope) != n_layers or not set(uses_rope) <= {0, 1}:
        raise BadInputError(f"{r.origin}: no_rope_layers must give 1 (RoPE) or 0 (NoPE) for each of {n_layers} layers")
    return ["chunked" if flag else "global" for flag in uses_rope]


def _shared_expert(r: ConfigReader, fields: dict[str, Any]) -> None:
    """Llama4TextMoe: one shared expert as wide as the routed ones."""
    if "moe" in fields:
        fields["moe"]["n_shared_experts"] = 1


# Llama 4 (text): the MoE block is feed_forward, its router router, its one shared expert shared_expert;
# the routed experts are stored (E, d, 2f) (gate columns, then up) and (E, f, d), ours (E, 2f, d) and (E, d, f).
WEIGHTS = WeightLayout(
    renames=(
        (r"\.feed_forward\.router\.", ".mlp.gate."),
        (r"\.feed_forward\.shared_expert\.", ".mlp.shared_experts."),
        (r"\.feed_forward\.", ".mlp."),
    ),
    transposed=(r"\.feed_forward\.experts\.(gate_up_proj|down_proj)$",),
    dropped=(r"\.rotary_emb\.inv_freq$",),
)

FAMILY = Family(
    model_types=("llama4", "llama4_text"),
    config_class="Llama4TextConfig (transformers 5.24)",
    window_fields=frozenset({"attention_chunk_size"}),
    defaults={
        "vocab_size": 202048,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "attention_chunk_size": 8192,
        "no_rope_layer_interval": 4,
        "num_experts_per_tok": 1,
    },
    spellings={"d_ff": ("intermediate_size_mlp",)},  # intermediate_size is an expert's
    layer_kinds=_chunked_rope_layers,
    read_fields=_shared_expert,
    use_qk_norm_is_rmsnorm=False,  # an L2 norm without weights
    names=("llama4", "llama-4"),
    differences=(
        "Llama 4's chunked attention (attention_chunk_size tokens on its RoPE layers): built attending to every"
        " earlier token, although the cache is priced at one chunk",
        "Llama 4's every 4th layer skips RoPE (NoPE) and tunes its attention temperature; here every layer is rotary",
        "Llama 4's L2 norm of q and k (use_qk_norm) on its RoPE layers",
        "Llama 4's MoE: a sigmoid router that scales each token before its expert, a shared expert beside the routed"
        " ones; here softmax top-k routing",
    ),
    unbuilt="chunked attention",
    weights=WEIGHTS,
    left_unread={
        "interleave_moe_layer_step": ANY_VALUE,
        "no_rope_layers": ANY_VALUE,
        "no_rope_layer_interval": ANY_VALUE,
        "attn_temperature_tuning": ANY_VALUE,
        "floor_scale": ANY_VALUE,
        "attn_scale": ANY_VALUE,
    },
)
