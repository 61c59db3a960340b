"""ModernBERT's decoder: a LayerNorm on the token embeddings, pre-LN blocks whose first layer reads the normed
embeddings without a norm of its own, a GeGLU MLP (``Wi`` holds the activated half, then the gate), sliding-window
layers between full ones with RoPE of their own theta, bias-free LayerNorms (``norm_bias``), and a tied LM head
behind a transform (dense, ``classifier_activation``, LayerNorm) with ``decoder_bias``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.errors import BadInputError
from mha_cli.core.families import ANY_VALUE, EQUAL_BY_SWEEP, SLIDES, Family
from mha_cli.core.families.models.bert import ACTIVATIONS
from mha_cli.core.weight_layout import FusedSplit, WeightLayout

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def _modernbert_decoder_fields(r: ConfigReader, fields: dict[str, Any]) -> None:
    head_activation = str(r.get("classifier_activation"))
    if head_activation not in ACTIVATIONS:
        raise BadInputError(f"{r.origin}: classifier_activation {head_activation!r} is not built, so it is refused")
    fields["lm_head_transform"] = ACTIVATIONS[head_activation]
    fields["lm_head_transform_bias"] = bool(r.get("classifier_bias"))
    fields["lm_head_bias"] = bool(r.get("decoder_bias"))
    fields["mlp_bias"] = bool(r.get("mlp_bias"))
    fields["norm_bias"] = bool(r.get("norm_bias"))
    if r.config.get("layer_types") is None:
        _older_layout(r, fields)


def _older_layout(r: ConfigReader, fields: dict[str, Any]) -> None:
    """A config.json of before transformers 5 spells its layers as its config class derives them: every
    ``global_attn_every_n_layers``-th layer (from 0) full, the others a window of local_attention // 2 tokens,
    RoPE theta ``global_rope_theta`` and ``local_rope_theta``."""
    every = r.count("global_attn_every_n_layers", "global_attn_every_n_layers")
    window = r.config.get("sliding_window") or r.count("local_attention", "local_attention") // 2
    if every > 1 and window > 0:  # one cycle, or the layers there are when fewer (2 layers: full, then local)
        fields["layer_pattern"] = (["global"] + ["local"] * (every - 1))[: fields["n_layers"]]
        fields["sliding_window"] = window
        fields["rope_local"] = {"theta": float(r.get("local_rope_theta"))}
    if not isinstance(r.config.get("rope_parameters"), dict):
        fields["rope"] = {"theta": float(r.get("global_rope_theta"))}
        r.assumptions[:] = [note for note in r.assumptions if not note.startswith("rope_theta absent")]


WEIGHTS = WeightLayout(
    renames=(
        (r"^model\.embeddings\.tok_embeddings\.", "model.embed_tokens."),
        (r"^model\.embeddings\.norm\.", "model.embed_norm."),
        (r"^model\.final_norm\.", "model.norm."),
        (r"\.attn_norm\.", ".input_layernorm."),
        (r"\.mlp_norm\.", ".post_attention_layernorm."),
        (r"\.attn\.Wo\.", ".self_attn.o_proj."),
        (r"\.attn\.", ".self_attn."),
        (r"\.mlp\.Wi\.", ".mlp.gate_up_proj."),
        (r"\.mlp\.Wo\.", ".mlp.down_proj."),
        (r"^lm_head\.", "head_transform."),
        (r"^decoder\.", "lm_head."),
    ),
    fused=(
        FusedSplit(
            r"(.*)\.mlp\.gate_up_proj\.(weight|bias)", (r"\1.mlp.gate_proj.\2", r"\1.mlp.up_proj.\2"), "gate_up"
        ),
    ),
)

DEFAULTS = {
    "classifier_activation": "gelu", "classifier_bias": False, "decoder_bias": True, "mlp_bias": False,
    "norm_bias": False, "hidden_activation": "gelu", "global_attn_every_n_layers": 3, "local_attention": 128,
    "global_rope_theta": 160000.0, "local_rope_theta": 10000.0,
}  # fmt: skip
"""ModernBertDecoderConfig's defaults for the fields read here."""

FAMILY = Family(
    model_types=("modernbert-decoder",),
    config_class="ModernBertDecoderConfig (transformers 5.24)",
    window_fields=SLIDES,
    defaults=DEFAULTS,
    layout={"mlp": "gated", "norm": "layernorm", "embedding_norm": True, "first_input_norm": False},
    tied_by_default=True,
    read_fields=_modernbert_decoder_fields,
    weights=WEIGHTS,
    equal_test=EQUAL_BY_SWEEP,
    left_unread={"initializer_cutoff_factor": ANY_VALUE, "local_attention": ANY_VALUE},  # read without sliding_window
)
