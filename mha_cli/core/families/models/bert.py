"""BERT run as a causal LM (``is_decoder``: BertLMHeadModel): learned positions plus row 0 of a token-type table, an
embedding LayerNorm, post-LN blocks (norm(x + attn(x)), then norm(h + mlp(h)), no final norm), an exact-GELU MLP,
biases everywhere, and an LM head behind a transform (dense, activation, LayerNorm) with a bias of its own; tied.

The records of BERT's descendants (RoBERTa and its copies, ELECTRA, ERNIE, BertGeneration, the pre-norm
Megatron-BERT, RoBERTa-PreLayerNorm and XLM-RoBERTa-XL, BigBird, RoFormer, RemBERT) are built here by
``bert_family`` from their few differences: the weights' prefix, where the norms sit, the head's names and
activation, RoBERTa's position rows offset past its padding row, ELECTRA's and RemBERT's projected embeddings,
RoFormer's rotation. A config whose ``is_decoder`` is not true describes a bidirectional encoder, which keeps no
causal cache: it is refused, as is one with cross-attention (its cache holds an encoder's tokens) or an older
config's relative positions.

RoBERTa numbers positions past its padding token: a pad id inside a prompt takes the padding row and leaves the
next tokens' positions where they were; ``mha`` numbers every token (left padding numbers alike).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from mha_cli.core.errors import BadInputError
from mha_cli.core.families import EQUAL_BY_SWEEP, Family
from mha_cli.core.weight_layout import WeightLayout

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader
    from mha_cli.core.schemas import Activation

Placement = Literal["post", "megatron", "prelayernorm", "xl"]
"""Where a family's LayerNorms sit and how transformers names them: ``post`` BERT's post-LN
(``attention.output.LayerNorm``, ``output.LayerNorm``); the pre-LN ones, with a final norm: ``megatron``
(``attention.ln``, ``ln``, ``encoder.ln``), ``prelayernorm`` (``attention.LayerNorm``, ``intermediate.LayerNorm``,
the model's ``LayerNorm``), ``xl`` (``attention.self_attn_layer_norm``, ``LayerNorm``, ``encoder.LayerNorm``)."""
Head = Literal["cls", "lm_head", "generator", "decoder_only", "rembert"]
"""How transformers names the LM head: BERT's ``cls.predictions`` (transform, decoder, bias), RoBERTa's ``lm_head``
(dense, layer_norm, decoder, bias), ELECTRA's ``generator_predictions`` and ``generator_lm_head``, BertGeneration's
``lm_head`` (decoder and bias, no transform), RemBERT's ``cls.predictions`` (dense, LayerNorm, decoder)."""

_LAYER = (
    (r"\.attention\.self\.query\.", ".self_attn.q_proj."),
    (r"\.attention\.self\.key\.", ".self_attn.k_proj."),
    (r"\.attention\.self\.value\.", ".self_attn.v_proj."),
    (r"\.attention\.output\.dense\.", ".self_attn.o_proj."),
    (r"\.intermediate\.dense\.", ".mlp.up_proj."),
    (r"(layers\.\d+)\.output\.dense\.", r"\1.mlp.down_proj."),
)
"""A BERT layer's attention and MLP under the decoder's names (the same in every descendant)."""

_NORMS: dict[Placement, tuple[tuple[str, str], ...]] = {
    "post": (  # post_residual: input_layernorm after attention, post_attention_layernorm after the MLP
        (r"\.attention\.output\.LayerNorm\.", ".input_layernorm."),
        (r"(layers\.\d+)\.output\.LayerNorm\.", r"\1.post_attention_layernorm."),
    ),
    "megatron": (
        (r"\.attention\.ln\.", ".input_layernorm."),
        (r"(layers\.\d+)\.ln\.", r"\1.post_attention_layernorm."),
        (r"^model\.encoder\.ln\.", "model.norm."),
    ),
    "prelayernorm": (
        (r"\.attention\.LayerNorm\.", ".input_layernorm."),
        (r"\.intermediate\.LayerNorm\.", ".post_attention_layernorm."),
        (r"^model\.LayerNorm\.", "model.norm."),
    ),
    "xl": (
        (r"\.attention\.self_attn_layer_norm\.", ".input_layernorm."),
        (r"(layers\.\d+)\.LayerNorm\.", r"\1.post_attention_layernorm."),
        (r"^model\.encoder\.LayerNorm\.", "model.norm."),
    ),
}

_HEADS: dict[Head, tuple[tuple[str, str], ...]] = {
    "cls": (
        (r"^cls\.predictions\.transform\.dense\.", "head_transform.dense."),
        (r"^cls\.predictions\.transform\.LayerNorm\.", "head_transform.norm."),
        (r"^cls\.predictions\.decoder\.", "lm_head."),
    ),
    "lm_head": (
        (r"^lm_head\.dense\.", "head_transform.dense."),
        (r"^lm_head\.layer_norm\.", "head_transform.norm."),
        (r"^lm_head\.decoder\.", "lm_head."),
    ),
    "generator": (
        (r"^generator_predictions\.dense\.", "head_transform.dense."),
        (r"^generator_predictions\.LayerNorm\.", "head_transform.norm."),
        (r"^generator_lm_head\.", "lm_head."),
    ),
    "decoder_only": ((r"^lm_head\.decoder\.", "lm_head."),),
    "rembert": (
        (r"^cls\.predictions\.dense\.", "head_transform.dense."),
        (r"^cls\.predictions\.LayerNorm\.", "head_transform.norm."),
        (r"^cls\.predictions\.decoder\.", "lm_head."),
    ),
}
_HEAD_BIAS_COPY = {
    "cls": r"^cls\.predictions\.bias$",
    "lm_head": r"^lm_head\.bias$",
    "decoder_only": r"^lm_head\.bias$",
}
"""The head's own bias, which transformers ties to its decoder's (the bias the logits take) when the embeddings are
tied and leaves unused when they are not: dropped, the decoder's loaded (the same values when tied)."""


def bert_weights(prefix: str, placement: Placement, head: Head, *, dropped: tuple[str, ...] = ()) -> WeightLayout:
    """The weight layout of a BERT descendant whose model sits under ``prefix`` (``bert``, ``roberta``...);
    ``dropped``: more of transformers' names that no logit reads (BigBird's pooler)."""
    head_bias_copy = (_HEAD_BIAS_COPY[head],) if head in _HEAD_BIAS_COPY else ()
    return WeightLayout(
        renames=(
            (rf"^{prefix}\.embeddings\.word_embeddings\.", "model.embed_tokens."),
            (rf"^{prefix}\.embeddings\.position_embeddings\.", "model.embed_positions."),
            (rf"^{prefix}\.embeddings\.token_type_embeddings\.", "model.embed_token_types."),
            (rf"^{prefix}\.embeddings\.LayerNorm\.", "model.embed_norm."),
            (rf"^{prefix}\.embeddings_project\.", "model.embed_project."),  # ELECTRA
            (rf"^{prefix}\.encoder\.embedding_hidden_mapping_in\.", "model.embed_project."),  # RemBERT
            (rf"^{prefix}\.encoder\.layer\.(\d+)\.", r"model.layers.\1."),
            (rf"^{prefix}\.", "model."),
            *_LAYER,
            *_NORMS[placement],
            *_HEADS[head],
        ),
        dropped=(*head_bias_copy, *dropped),
    )


def refuse_encoder(r: ConfigReader, model_type: str) -> None:
    """An encoder config (``is_decoder`` not true), one with relative positions or cross-attention is refused in
    one line."""
    if not r.get("is_decoder"):
        raise BadInputError(
            f"{r.origin}: model_type {model_type!r} with is_decoder not true is a bidirectional encoder, which keeps"
            " no causal KV cache: mha prices decoders (set is_decoder true for its causal-LM head), so it is refused"
        )
    kind = r.get("position_embedding_type")
    if kind not in (None, "absolute"):  # older configs: transformers 5 builds absolute positions only
        raise BadInputError(
            f"{r.origin}: position_embedding_type {kind!r}: {model_type!r}'s relative position embeddings"
            " (distance_embedding) are not built, so it is refused"
        )
    if r.get("add_cross_attention"):
        raise BadInputError(
            f"{r.origin}: add_cross_attention: model_type {model_type!r}'s cross-attention cache holds an encoder's"
            " tokens, which mha does not price, so it is refused"
        )


ACTIVATIONS: dict[str, Activation] = {
    "gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "relu": "relu", "silu": "silu",
    "swish": "silu",
}  # fmt: skip
"""transformers' ``hidden_act`` names (ACT2FN) of these families that the decoder computes: exact GELU, the tanh
GELU, ReLU and SiLU."""


def _activation(r: ConfigReader, model_type: str, name: str) -> Activation:
    if name not in ACTIVATIONS:
        raise BadInputError(
            f"{r.origin}: hidden_act {name!r} of model_type {model_type!r} is not an activation mha builds"
            f" ({', '.join(ACTIVATIONS)}), so it is refused"
        )
    return ACTIVATIONS[name]


def read_bert_fields(
    r: ConfigReader,
    fields: dict[str, Any],
    *,
    model_type: str,
    placement: Placement,
    head: Head,
    head_activation: str | None,
    offset_positions: bool,
    projects: bool,
) -> None:
    """The fields a BERT descendant spells its own way (see ``bert_family`` for the keywords)."""
    refuse_encoder(r, model_type)
    mlp_activation = _activation(r, model_type, str(r.get("hidden_act")))
    if mlp_activation != "gelu":  # the plain MLP's default
        fields["activation"] = mlp_activation
    fields["token_type_embeddings"] = r.get("type_vocab_size") or 0
    if placement == "post":
        fields["norm_placement"] = "post_residual"
        fields["final_norm"] = False
    if head != "decoder_only":
        fields["lm_head_transform"] = _activation(r, model_type, head_activation) if head_activation else mlp_activation
    if head in _HEAD_BIAS_COPY and r.get("tie_word_embeddings") is False:
        r.assume(
            None,
            "tie_word_embeddings false: the LM head's second bias, which transformers keeps unused (vocab_size"
            " values), is not counted",
        )
    if offset_positions:  # RoBERTa: position p at row padding_idx + 1 + p
        offset = int(r.get("pad_token_id") or 0) + 1
        fields["position_offset"] = offset
        fields["context_length"] = max(1, fields["position_embeddings"] - offset)
    width = r.get("embedding_size")
    if projects and width is not None and width != fields["d_model"]:
        fields["embedding_size"] = width


def bert_family(
    model_types: tuple[str, ...],
    config_class: str,
    prefix: str,
    *,
    placement: Placement = "post",
    head: Head = "cls",
    head_activation: str | None = None,
    offset_positions: bool = False,
    projects: bool = False,
    embedding_norm: bool = True,
    rotary: bool = False,
    dropped: tuple[str, ...] = (),
    uncounted: str | None = None,
    read_more: Callable[[ConfigReader, dict[str, Any]], None] | None = None,
    defaults: Mapping[str, Any] | None = None,
    names: tuple[str, ...] = (),
) -> Family:
    """The record of a BERT descendant: ``placement`` of its norms, its ``head``'s names and activation (None: its
    ``hidden_act``), whether its positions start past the padding row (RoBERTa), whether a narrower
    ``embedding_size`` is projected (ELECTRA), whether its embeddings are normed, whether it rotates q and k
    (RoFormer's interleaved RoPE) instead of learning positions; ``dropped``: transformers' names no logit reads
    (BigBird's pooler), which ``uncounted`` then says; ``read_more`` reads the rest."""

    def read(r: ConfigReader, fields: dict[str, Any]) -> None:
        read_bert_fields(
            r,
            fields,
            model_type=model_types[0],
            placement=placement,
            head=head,
            head_activation=head_activation,
            offset_positions=offset_positions,
            projects=projects,
        )
        if read_more is not None:
            read_more(r, fields)

    layout = {
        "mlp": "plain", "mlp_bias": True, "norm": "layernorm", "qkv_bias": True, "o_bias": True,
        "lm_head_bias": True, "embedding_norm": embedding_norm,
    }  # fmt: skip
    return Family(
        model_types=model_types,
        config_class=config_class,
        defaults=defaults or {},
        layout=layout,
        tied_by_default=True,
        learned_positions=None if rotary else "max_position_embeddings",
        interleaved_rope=rotary,
        read_fields=read,
        names=names,
        weights=bert_weights(prefix, placement, head, dropped=dropped),
        uncounted=uncounted,
        equal_test=EQUAL_BY_SWEEP,
    )


FAMILY = bert_family(("bert",), "BertConfig (transformers 5.24)", "bert")
