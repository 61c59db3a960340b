"""No silent wrong answer: a config.json field nobody read, and that may change a figure, is named in a refusal.

A config.json of an unknown family is read by its standard fields only (hidden size, layers, heads, KV heads,
head_dim, MLP width, RoPE, windows, norms, biases). A field outside those may change the model, so a figure
that ignored it could be wrong: BERT's ``type_vocab_size`` (token-type embeddings), OPT's ``word_embed_proj_dim``
(projections around the decoder), GPT-NeoX's ``use_parallel_residual``, CTRL's ``dff``. Such a config is refused
naming the fields, unless each is one of the fields below that no figure depends on (training, generation,
tokenizer and bookkeeping fields) or the plain-decoder value of a feature switch (``add_cross_attention`` false).

A registered family reads its own fields (``core.families.models``); the fields of its transformers config class
that its reader leaves unread are listed in its record (``Family.left_unread``) with the value at which each is
harmless, and another value is refused the same way (StableLM-2-12B's ``use_parallel_residual: true``,
Falcon-RW's ``parallel_attn: false``). Fields its config class does not define (remote-code leftovers), transformers
ignores, and so does ``mha``, saying so. ``tests/test_family_sweep.py`` checks each record lists every field of its
config class that no reader looks at.
"""

from __future__ import annotations

import re
from typing import Any

from mha_cli.core.config_reader import ConfigReader
from mha_cli.core.errors import BadInputError
from mha_cli.core.families import ANY_VALUE, Family

NO_FIGURE_DEPENDS_ON = frozenset({
    # bookkeeping
    "architectures", "model_type", "transformers_version", "_name_or_path", "name_or_path", "auto_map",
    "torch_dtype", "dtype", "_attn_implementation", "_attn_implementation_autoset", "attn_implementation",
    "task_specific_params", "id2label", "label2id", "problem_type", "finetuning_task", "tokenizer_class", "prefix",
    "custom_pipelines", "output_hidden_states", "output_attentions", "return_dict", "use_return_dict",
    "torchscript", "pruned_heads", "chunk_size_feed_forward", "num_labels", "_commit_hash", "base_model_tp_plan",
    "use_bfloat16", "tf_legacy_loss", "_from_model_config",
    "base_model_pp_plan", "transformers.js_config", "keys_to_ignore_at_inference",
    "mha_notes",  # recommend --format hf's own notes, read by core.sources
    # read by its own reader (core.hf_quantization): the weight format
    "quantization_config",
    # training only
    "use_cache", "initializer_range", "initializer_factor", "layerdrop", "output_router_logits",
    "router_aux_loss_coef", "aux_loss_coef", "router_z_loss_coef", "z_loss_coefficient", "router_jitter_noise",
    "input_jitter_noise", "gradient_checkpointing", "pretraining_tp", "num_logits_to_keep", "is_decoder",
    "classifier_activation", "classifier_bias", "classifier_pooling", "summary_type", "summary_use_proj",
    "summary_activation", "summary_proj_to_labels", "summary_first_dropout",
    # generation defaults
    "max_length", "min_length", "do_sample", "early_stopping", "num_beams", "num_beam_groups", "temperature",
    "top_k", "top_p", "typical_p", "repetition_penalty", "length_penalty", "no_repeat_ngram_size",
    "encoder_no_repeat_ngram_size", "bad_words_ids", "num_return_sequences", "diversity_penalty",
    "forced_bos_token_id", "forced_eos_token_id", "remove_invalid_values", "exponential_decay_length_penalty",
    "suppress_tokens", "begin_suppress_tokens", "output_scores", "return_dict_in_generate",
})  # fmt: skip
"""Fields no figure of ``mha`` depends on: bookkeeping, training and generation settings."""
NO_FIGURE_DEPENDS_ON_PATTERN = re.compile(r"(dropout|dropout_prob|dropout_rate|_pdrop|_token_ids?)$")
"""Dropout rates (``attention_dropout``, ``hidden_dropout_prob``, ``resid_pdrop``) and special token ids (``pad_token_id``)."""
PLAIN_DECODER_VALUES: dict[str, object] = {
    "add_cross_attention": False, "tie_encoder_decoder": False, "is_encoder_decoder": False,
}  # fmt: skip
"""Feature switches whose value here is the plain decoder's: harmless at that value, refused at another."""


def fields_no_reader_understood(r: ConfigReader, *, with_nulls: bool = False) -> list[str]:
    """The config's fields that no reader looked at and that a figure may depend on, in the config's order (a
    field set to null is as good as absent, unless ``with_nulls``)."""
    found = []
    for key in r.unread():
        value = dict.get(r.config, key)
        if (
            (value is None and not with_nulls)
            or key in NO_FIGURE_DEPENDS_ON
            or NO_FIGURE_DEPENDS_ON_PATTERN.search(key)
        ):
            continue
        if key in PLAIN_DECODER_VALUES and value == PLAIN_DECODER_VALUES[key]:
            continue
        found.append(key)
    return found


def refuse_unread_fields_of_unknown_family(r: ConfigReader, model_type: str) -> None:
    """Refuse an unknown family's config that sets fields no reader understood, naming them (at most six)."""
    unread = fields_no_reader_understood(r)
    if not unread:
        return
    named = ", ".join(unread[:6]) + (f" and {len(unread) - 6} more" if len(unread) > 6 else "")
    raise BadInputError(
        f"{r.origin}: model_type {model_type!r} is not a family mha knows, and its config sets fields mha does not"
        f" read: {named}; a figure that ignored them could be wrong, so it is refused (`mha families` lists the"
        " families read; remove the fields only if they do not change the model)"
    )


def _harmless_at(left_unread: Any, key: str, value: Any) -> bool:
    """Null reads as absent (the config class's default), as everywhere in the importer."""
    return value is None or left_unread[key] is ANY_VALUE or left_unread[key] == value


def check_unread_fields_of_family(r: ConfigReader, model_type: str, fam: Family) -> None:
    """A registered family's fields no reader looked at: one its config class defines (``Family.left_unread``) set
    to a value mha does not build is refused, naming each with its value (at most six); the others, which its
    config class does not define (remote-code fields: DeepSeek's ``moe_layer_freq``), transformers ignores too,
    and the assumptions name them."""
    unread = fields_no_reader_understood(r, with_nulls=True)
    listed = [key for key in unread if key in fam.left_unread]
    refused = [key for key in listed if not _harmless_at(fam.left_unread, key, dict.get(r.config, key))]
    if refused:
        named = ", ".join(_as_built(fam, key, dict.get(r.config, key)) for key in refused[:6])
        more = f" and {len(refused) - 6} more" if len(refused) > 6 else ""
        raise BadInputError(
            f"{r.origin}: model_type {model_type!r} sets {named}{more}, which mha does not read for the family; a"
            " figure that ignored it could be wrong, so it is refused"
        )
    from mha_cli.core.vision_config import vision_tower_listed

    tower = vision_tower_listed(dict(r.config))  # a flat multimodal config: its tower is read apart (vision_config)
    foreign = [
        key for key in unread
        if key not in fam.left_unread and dict.get(r.config, key) is not None and not (tower and key == "vision_config")
    ]  # fmt: skip
    if foreign:
        named = ", ".join(foreign[:6]) + (f" and {len(foreign) - 6} more" if len(foreign) > 6 else "")
        r.assumptions.append(f"not read: {named} ({fam.config_class} builds the model without them, as mha does)")


def _as_built(fam: Family, key: str, value: Any) -> str:
    """``parallel_attn = False (mha builds True)``."""
    return f"{key} = {_short(value)} (mha builds {_short(fam.left_unread[key])})"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
