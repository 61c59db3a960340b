"""No silent wrong answer for a ``model_type`` of no registered family: the fields nobody read are named.

A config.json of an unknown family is read by its standard fields only (hidden size, layers, heads, KV heads,
head_dim, MLP width, RoPE, windows, norms, biases). A field outside those may change the model, so a figure
that ignored it could be wrong: BERT's ``type_vocab_size`` (token-type embeddings), OPT's ``word_embed_proj_dim``
(projections around the decoder), GPT-NeoX's ``use_parallel_residual``, CTRL's ``dff``. Such a config is refused
naming the fields, unless each is one of the fields below that no figure depends on (training, generation,
tokenizer and bookkeeping fields) or the plain-decoder value of a feature switch (``add_cross_attention`` false).

The registered families read their own fields (``core.families.models``); this check is for the others.
"""

from __future__ import annotations

import re

from mha_cli.core.config_reader import ConfigReader
from mha_cli.core.errors import BadInputError

NO_FIGURE_DEPENDS_ON = frozenset({
    # bookkeeping
    "architectures", "model_type", "transformers_version", "_name_or_path", "name_or_path", "auto_map",
    "torch_dtype", "dtype", "_attn_implementation", "_attn_implementation_autoset", "attn_implementation",
    "task_specific_params", "id2label", "label2id", "problem_type", "finetuning_task", "tokenizer_class", "prefix",
    "custom_pipelines", "output_hidden_states", "output_attentions", "return_dict", "use_return_dict",
    "torchscript", "pruned_heads", "chunk_size_feed_forward", "num_labels", "_commit_hash", "base_model_tp_plan",
    "base_model_pp_plan", "transformers.js_config", "keys_to_ignore_at_inference",
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
NO_FIGURE_DEPENDS_ON_PATTERN = re.compile(r"(dropout|_pdrop|_token_ids?)$")
"""Dropout rates (``attention_dropout``, ``resid_pdrop``) and special token ids (``pad_token_id``)."""
PLAIN_DECODER_VALUES: dict[str, object] = {"add_cross_attention": False, "tie_encoder_decoder": False}
"""Feature switches whose value here is the plain decoder's: harmless at that value, refused at another."""


def fields_no_reader_understood(r: ConfigReader) -> list[str]:
    """The config's fields that no reader looked at and that a figure may depend on, in the config's order."""
    found = []
    for key in r.unread():
        value = r.config.get(key)
        if key in NO_FIGURE_DEPENDS_ON or NO_FIGURE_DEPENDS_ON_PATTERN.search(key):
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
