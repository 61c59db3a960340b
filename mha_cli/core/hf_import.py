"""Read a Hugging Face ``config.json`` into a ``ModelSpec``, saying what it had to assume.

Rules the common calculators get wrong, handled here:
- an explicit ``head_dim`` wins over hidden_size / num_attention_heads (Gemma, Qwen3, Mistral NeMo), in the families
  whose attention reads it (``core.families.head_width``: GPT-2's takes the quotient whatever it says);
- MQA flags (Falcon's ``multi_query``) and missing ``num_key_value_heads`` (MHA);
- MLA fields (``kv_lora_rank``, ``qk_rope_head_dim`` ...) make the model MLA, not MHA;
- sliding windows: ``layer_types`` when present, else the family's own fields (Qwen2's ``max_window_layers``),
  else ``sliding_window_pattern``, else the family's known cycle (Gemma 2 alternates);
- multimodal configs (Gemma 3) keep the language model under ``text_config``; their ``vision_config`` tower is read
  for the families ``core.vision_tower`` lists (Gemma 3, Qwen2.5-VL, Qwen3-VL, Qwen3.5/3.6, Llama 4), named as not counted for the others;
- layer kinds: chunked local attention (Llama-4), linear-attention and state-space layers with a fixed
  per-sequence state (Qwen3-Next, Jamba, Falcon-H1, Granite-4.0-H, MiniMax, Kimi-Linear), DeepSeek-V3.2's indexer
  key, K/V shared across layers (Gemma-3n);
- attention-free families (Mamba, Falcon-Mamba, Mamba-2, xLSTM, RWKV-4: ``Family.attention_free``): every layer is
  the mixer, no attention head count is read (``n_heads`` 1 stands for none) and nothing is cached per token.
What is particular to a family (how it spells a field, its config class's defaults, its layer kinds and mixer, its
layout) is in its module of the family registry (``core.families``); this module reads the fields every family
shares, through the family's record. An unknown ``model_type`` is read as the family its ``architectures`` name, as
vLLM's registry resolves it (``core.families.architectures``: Kimi-K2's ``kimi_k2`` is ``DeepseekV3ForCausalLM``),
else by the standard fields when those are all it sets; every default the importer fills in is listed in
``ImportedModel.assumptions``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

from pydantic import Field, ValidationError

from mha_cli.core.config_reader import ConfigReader
from mha_cli.core.errors import BadInputError, value_kind
from mha_cli.core.families import WINDOW_FIELDS, Family, family
from mha_cli.core.families.architectures import family_of_architectures
from mha_cli.core.families.context_defaults import CONTEXT_DEFAULTS, CONTEXT_DEFAULTS_READ
from mha_cli.core.families.field_defaults import (
    CLASS_FIELDS,
    CROSS_FAMILY_GROUPS,
    FIELD_DEFAULTS,
    FIELD_DEFAULTS_READ,
    FIGURE_FIELDS,
    MOE_PLACEMENT_FIELDS,
    MOE_SHARED_FIELDS,
)
from mha_cli.core.families.head_width import HEAD_WIDTH_DERIVED
from mha_cli.core.families.layer_types import MIXER_LAYER_TYPES, kinds_of_layer_types, sliding_window
from mha_cli.core.families.state_readers import stated_state_dtype
from mha_cli.core.hf_unread import (
    check_unread_fields_of_family,
    fields_no_reader_understood,
    refuse_unread_fields_of_unknown_family,
)
from mha_cli.core.record import Record, empty_list
from mha_cli.core.schemas import _MAX_LAYERS as MAX_LAYERS  # ModelSpec's bound, checked before lists are built
from mha_cli.core.schemas import Activation, LayerKind, MlpKind, ModelSpec
from mha_cli.core.validation import describe_validation_error
from mha_cli.core.vision_config import read_vision_tower, vision_tower_listed

_GATED_ACTIVATIONS = {"silu", "swiglu", "gelu_pytorch_tanh", "geglu"}
_ACTIVATIONS: dict[str, Activation] = {
    "silu": "silu", "swish": "silu", "swiglu": "silu", "gelu": "gelu", "relu": "relu",
    "gelu_pytorch_tanh": "gelu_tanh", "gelu_new": "gelu_tanh", "gelu_fast": "gelu_tanh", "relu2": "relu2",
    "xielu": "xielu",
}  # fmt: skip
"""config.json's activation names the decoder computes (``gelu_new`` and ``gelu_fast`` are the tanh GELU too)."""
_GENERIC = Family(
    model_types=("unknown",), config_class="PretrainedConfig", tied_by_default=True,
    window_fields=WINDOW_FIELDS - {"attention_chunk_size"},
)  # fmt: skip
"""How a ``model_type`` of no registered family is read: the standard fields (its sliding windows too), transformers'
base defaults. Not ``attention_chunk_size``: which layers chunk is the family's own (Llama 4: 3 in 4), so an unknown
family setting it is refused, not priced chunked on every layer (trial 354 #6)."""


class ImportedModel(Record):
    """A model read from a config.json and the defaults that were assumed on the way."""

    model: ModelSpec
    model_type: str
    assumptions: list[str]
    unread: list[str] = Field(default_factory=empty_list)
    """The config's fields no reader looked at (those no figure depends on left out), null ones included."""


_HF_MARKERS = ("model_type", "architectures", "text_config", "hidden_size", "num_attention_heads", "n_head", "n_embd")


def looks_like_hf_config(data: dict[str, Any]) -> bool:
    """True for a Hugging Face config.json (as opposed to our own config file)."""
    return any(key in data for key in _HF_MARKERS)


def import_hf_config(config: dict[str, Any], *, name: str = "hf-model", origin: str = "config.json") -> ImportedModel:
    """Build a ``ModelSpec`` from a parsed config.json (read from ``origin``); ``BadInputError`` if it cannot."""
    towers: list[str] = []
    outer = config
    unwrapped = isinstance(config.get("text_config"), dict)
    if unwrapped:
        towers = [key for key, value in config.items() if key.endswith("_config") and isinstance(value, dict)]
        towers = [key for key in towers if key not in ("text_config", "quantization_config")]
        text = config["text_config"]
        config = {**text, "model_type": text.get("model_type", config.get("model_type"))}
        if "tie_word_embeddings" not in text and "tie_word_embeddings" in outer:  # Qwen2.5-VL states it outside
            config["tie_word_embeddings"] = outer["tie_word_embeddings"]
    _refuse_encoder_decoder(config, origin)
    written = str(config.get("model_type") or "unknown")
    known = family(written)
    by_architecture = None if known is not None else family_of_architectures(config.get("architectures"))
    if by_architecture is not None:  # Kimi-K2's kimi_k2 is DeepseekV3ForCausalLM, as vLLM serves it
        known = by_architecture.family
    fam = known or _GENERIC
    as_written = config
    if fam.config_view is not None:
        config = fam.config_view(config, origin)
    ignored = WINDOW_FIELDS - fam.window_fields  # fields its transformers model does not window by: named as unread
    if fam.name in HEAD_WIDTH_DERIVED:  # its heads are hidden_size / num_attention_heads wide whatever head_dim says
        ignored |= {"head_dim"}
    # the config class's own defaults where model_type names it (a family found by its architecture alone, as
    # kimi_k2, has remote code's class, whose defaults are not read)
    class_key = None if known is None or by_architecture is not None else written
    if known is not None and written in known.old_names:
        class_key = known.name
    takes = CLASS_FIELDS.get(class_key or "")
    if takes is not None:  # a kind of the shared readers' fields its class takes none of, as written: read as absent
        ignored |= {
            key for kind in CROSS_FAMILY_GROUPS if not kind & takes for key in kind - fam.reads if key in as_written
        }
        untaken = MOE_SHARED_FIELDS | (MOE_PLACEMENT_FIELDS if MOE_PLACEMENT_FIELDS & takes else frozenset())
        ignored |= {key for key in untaken - takes - fam.reads if key in as_written}
    from_table = {
        key: value for key, value in FIELD_DEFAULTS.get(class_key or "", {}).items() if key not in fam.defaults
    }
    read_from = dict.fromkeys(from_table, f"{fam.config_class.split(' (')[0]} ({FIELD_DEFAULTS_READ})")
    r = ConfigReader(config, origin, f"{fam.config_class}", {**from_table, **fam.defaults}, ignored=ignored,
                     read_from=read_from)  # fmt: skip
    if fam.view_note is not None and (viewed := fam.view_note(as_written, config)) is not None:
        r.assume(None, viewed)
    model_type = written
    if known is not None and written in known.old_names:
        model_type = known.name
        r.assumptions.append(f"model_type {written!r} read as {model_type!r}")
    if by_architecture is not None:
        model_type = by_architecture.model_type
        r.assumptions.append(
            f"model_type {written!r} is not a family mha knows: read as {model_type!r}, the family of its"
            f" architectures' {by_architecture.architecture}, as vLLM's model registry resolves it"
        )
    if known is None:
        named = f"model_type {model_type!r} is not a known family" if config.get("model_type") else "no model_type"
        r.assumptions.append(  # trial 389 #4: an absent one was said as the file's 'unknown'
            f"{named}: read the standard fields only (a Llama-style decoder; weights its modeling code adds beyond"
            " them are not counted)"
        )

    if unwrapped and not vision_tower_listed(outer):  # a multimodal model whose towers are not listed: said so
        left_out = ", ".join(towers) if towers else "the rest of the model (its image or audio input)"
        r.assumptions.append(
            f"weights: the language model's (text_config) only; {left_out} and the projectors are not counted"
        )
    _refuse_unread_fields(r, model_type, fam)
    if fam.refused is not None:
        raise BadInputError(f"{origin}: model_type {model_type!r}: {fam.refused}, so it is refused")
    spelled = fam.spellings
    if unwrapped and not any(config.get(key) is not None for key in ("hidden_size", "n_embd", "d_model")):
        raise BadInputError(  # llava-1.5's text_config: a name and a vocabulary, the rest the class's defaults
            f"{origin}: its text_config (model_type {written!r}) sets no hidden_size: it leaves the language model's"
            f" size to the {fam.config_class.split(' (')[0]} defaults, which mha does not take for a model's size:"
            " write them into text_config (hidden_size, num_hidden_layers, num_attention_heads, intermediate_size)"
        )
    d_model = r.count("hidden size", "hidden_size", "n_embd", "d_model")
    n_layers = r.count("layer count", "num_hidden_layers", "n_layer", "num_layers", *spelled.get("layers", ()))
    if n_layers > MAX_LAYERS:  # before any per-layer list is built
        raise BadInputError(f"{origin}: {n_layers:,} layers; a model may have at most {MAX_LAYERS:,}")
    if fam.attention_free:  # Mamba's num_heads, where it has one, counts state-space heads, not attention's
        n_heads = 1  # no layer attends (every layer_pattern entry is linear): a placeholder no figure reads
    else:
        n_heads = r.count("attention head count", "num_attention_heads", "n_head", *spelled.get("heads", ()))
    vocab = r.get("vocab_size")
    if vocab is None:  # a KV figure does not need it: price the cache, say the weights leave the embeddings out
        vocab = r.assume(1, "vocab_size absent: embeddings not counted (weights understated by vocab x hidden_size)")
    layout = dict(fam.layout)

    mlp_free = layout.get("mlp_pattern") == ["none"]
    own_width = fam.dense_width is not None  # RWKV's channel mix, its feed-forward inside the mixer
    d_ff = d_model if mlp_free and not own_width else _dense_width(r, fam, n_layers)  # no MLP: a width the spec needs
    if d_ff is None:
        d_ff = r.assume(4 * d_model, f"intermediate_size absent: 4 * hidden_size = {4 * d_model}")
    activation_keys = (*spelled.get("activation", ()), "hidden_act", "hidden_activation", "activation_function")
    activation = r.get(*activation_keys)
    if "mlp" not in layout:
        # a known family's modeling code builds one MLP whatever the config's activation (LlamaMLP: gate, up, down
        # with a gelu too): its class default activation says which (trial 316); the config's, for any other
        kind_of = _class_activation(r, known, activation_keys) if known is not None else None
        kind_of = activation if kind_of is None else kind_of
        layout["mlp"] = "gated" if str(kind_of or "silu") in _GATED_ACTIVATIONS else "plain"
        if kind_of is None:
            r.assumptions.append("hidden_act absent: gated (SwiGLU) MLP")
    nulled = next((key for key in activation_keys if key in r.config and r.config[key] is None), None)
    if activation is None and nulled is not None and not mlp_free:  # neither transformers nor vLLM builds a null one
        r.assumptions.append(f"{nulled} null: the {layout.get('mlp', 'gated')} MLP's own activation built (review 317)")
    if "activation" not in layout and _ACTIVATIONS.get(str(activation)) is not None:
        default = "silu" if layout["mlp"] == "gated" else "gelu"  # the MLP kind's own: left out of the spec
        if _ACTIVATIONS[str(activation)] != default:
            layout["activation"] = _ACTIVATIONS[str(activation)]

    tied = r.get("tie_word_embeddings")
    if tied is None:
        tied = fam.tied_by_default
        default = f"the {model_type} default" if known else "transformers' PretrainedConfig default"
        r.assumptions.append(f"tie_word_embeddings absent: {'tied' if tied else 'untied'}, {default}")

    fields: dict[str, Any] = {
        "name": name,
        "source": f"Hugging Face config.json (model_type {model_type})",
        "family": model_type if known else None,
        "d_model": d_model,
        "n_layers": n_layers,
        "n_heads": n_heads,
        "vocab_size": vocab,
        "d_ff": d_ff,
        "tied_embeddings": tied,
        "position_embeddings": (r.get(fam.learned_positions) or 0) if fam.learned_positions else 0,
        # 8192.0 read as 8192, as the layer count and widths read (ConfigReader.count; trial 406 #10: refused as
        # "must be a whole number" where hidden_size 4096.0 passed)
        "context_length": _whole(r.get("max_position_embeddings", "n_positions", "max_sequence_length")),
        **layout,
    }
    if fields["context_length"] is None and known and model_type in CONTEXT_DEFAULTS:  # its config class's own
        fields["context_length"] = r.assume(
            CONTEXT_DEFAULTS[model_type],
            f"max_position_embeddings absent: {CONTEXT_DEFAULTS[model_type]:,}, the {fam.config_class.split(' (')[0]}"
            f" default ({CONTEXT_DEFAULTS_READ})",
        )
    if r.get("attention_bias") is not None:
        fields["qkv_bias"] = fields["o_bias"] = bool(r.get("attention_bias"))
    if r.get("attention_out_bias") is not None:  # Seed-OSS: biases on q/k/v, none on o
        fields["o_bias"] = bool(r.get("attention_out_bias"))
    if r.get("mlp_bias") is not None:  # Llama's and its copies' switch for biases on the MLP's projections
        fields["mlp_bias"] = bool(r.get("mlp_bias"))
    if r.get("use_qk_norm") is True and fam.use_qk_norm_is_rmsnorm:
        fields["qk_norm"] = True

    mla = None if fam.attention_free else _mla(r)
    if fam.attention_free:
        fields["n_kv_heads"] = 1  # no attention: nothing read, nothing cached per token
    elif mla is not None:
        fields["mla"] = mla
        for unused in ("num_key_value_heads", "head_dim", "qk_head_dim"):  # MLA's K and V come from the latent
            r.config.get(unused)
    else:
        fields["n_kv_heads"] = _kv_heads(r, fam, n_heads)
        # Megatron/ChatGLM and other remote-code configs spell it kv_channels or dim_head; no registered family's
        # transformers class reads either (a Llama config's kv_channels is not its head width), so only unknown ones
        spellings = ("head_dim",) if known is not None else ("head_dim", "kv_channels", "dim_head")
        head_dim = r.get(*spellings)
        spelled_as = next((key for key in spellings if r.config.get(key) is not None), "head_dim")
        if head_dim is not None and spelled_as != "head_dim":
            r.assumptions.append(f"head_dim absent: {spelled_as} = {head_dim} read as the head width")
        if head_dim is not None:  # a whole number, as every count is read (128.0 is 128; trial 340 #6)
            fields["head_dim"] = r.count("head_dim", spelled_as) if isinstance(head_dim, float) else head_dim
        elif d_model % n_heads == 0:
            unread = "head_dim" in ignored and as_written.get("head_dim") is not None  # HEAD_WIDTH_DERIVED
            r.assumptions.append(
                f"head_dim {'not read' if unread else 'absent'}: hidden_size / num_attention_heads = {d_model // n_heads}"
            )

    window = sliding_window(r, *spelled.get("window", ()))
    chunk = r.count("attention_chunk_size", "attention_chunk_size") if r.get("attention_chunk_size") else None
    kinds = _layer_kinds(r, fam, n_layers) if (window or chunk or _has_layer_kinds(r, fam)) else None
    if not (window or chunk):  # with no window these say nothing: every layer attends to every token
        patterned = dict.get(r.config, "sliding_window_pattern") or fam.local_cycle or fam.layer_kinds
        null = "sliding_window" in dict.keys(r.config) and dict.get(r.config, "sliding_window") is None
        switch = r.get("use_sliding_window")  # the family's default where absent: Qwen's is off (review 301 #3)
        stated = dict.get(r.config, "sliding_window")
        read = "sliding_window" not in r.config.hidden  # a window the family's model applies
        zero = type(stated) is int and stated == 0 and read and (switch is None or switch) and kinds is None
        if zero and fam.layer_kinds is not None:  # the class's own kinds, where it derives some (Mellum: all full)
            zero = "local" in (fam.layer_kinds(r, n_layers) or ["local"])
        if zero:
            raise BadInputError(  # trial 340 #1: Gemma 2 and 3, Mistral were priced as full attention, unsaid
                f"{r.origin}: sliding_window is 0, a window of no tokens, where {fam.name}'s layers slide by it: give"
                " the window, or null for full attention"
            )
        if kinds is None and patterned and null and (switch is None or switch):
            r.assume(None, f"sliding_window null: the layers {fam.name}'s pattern makes sliding are priced as full"  # 299 #2
                           " attention, as vLLM builds a layer whose window is unset")  # fmt: skip
        for gated in ("sliding_window", "sliding_window_pattern", "max_window_layers"):
            r.config.get(gated)
    if kinds is not None:
        kinds = kinds[:n_layers]  # a family cycle longer than the model: its first n_layers entries (transformers)
        _say_windowless_local_layers(r, kinds, window, fam.name)
    if fam is _GENERIC and window and (kinds is None or set(kinds) == {"local"}):  # trial 354 #6: unsaid before
        r.assume(None, f"sliding_window {window}: every layer slides by it (Mistral's convention), model_type"
                       f" {model_type!r} being no family mha knows; one that windows some layers only caches more")  # fmt: skip
    fields.update(_kinds_fields(kinds, window, chunk))
    if fam.state is not None:
        fields["recurrent"] = fam.state(r, d_model, fields)
        if fields["recurrent"] is not None:  # the config's own state dtype wins (Nemotron-H, Qwen3.5)
            fields["recurrent"].update(stated_state_dtype(r))
    _refuse_unread_mixers(r, model_type, fields)

    moe = _moe(r, fam, n_layers)
    period, mlps = _feed_forwards(r, n_layers, has_experts=moe is not None)
    if moe is not None and (mlps is None or "moe" in mlps) and not _every_layer_dense(r, n_layers, period, mlps):
        fields["moe"] = {**moe, **period}  # experts no layer uses: none built, none priced (nor vLLM's MoE workspace)
    elif moe is not None and mlps is None:
        r.assume(None, f"{moe['n_experts']} routed experts declared, every layer dense (first_k_dense_replace):"
                       " none built or priced, as transformers and vLLM build none")  # fmt: skip
    if mlps is not None:
        fields["mlp_pattern"] = _shortest_cycle(mlps)
    no_layer_rotates = fam.layout.get("nope_layers") == "global" and fields.get("sliding_window") is None  # Jamba
    no_layer_rotates = no_layer_rotates or fam.attention_free
    rope = None if no_layer_rotates else _rope(r, fam)
    if rope is not None:
        fields["rope"] = rope
        local = _local_rope(r, fam)
        if local is not None and local != rope and fields.get("sliding_window") is not None:
            fields["rope_local"] = local
    fields.update(_attention_arithmetic(r))
    if vision_tower_listed(outer):  # Qwen2.5-VL's older files keep the decoder's fields at the top level
        fields["vision"], assumed = read_vision_tower(outer, d_model, origin)
        r.assumptions += assumed
        others = [tower for tower in towers if tower != "vision_config"]
        if others:
            r.assumptions.append(
                f"weights: {', '.join(others)} and {'its' if len(others) == 1 else 'their'} projector not counted"
                " (vision_config's tower is)"
            )
    if _norm_eps(r) is not None:
        fields["norm_eps"] = _norm_eps(r)
    wrapper = (
        (outer.get("architectures") or [None])[0]
        if unwrapped and isinstance(outer.get("architectures"), list)
        else None
    )
    if isinstance(wrapper, str) and wrapper:
        fields["wrapper"] = wrapper
    if fam.read_fields is not None:
        fam.read_fields(r, fields)
    _refuse_other_value_width(r, fields)
    if known is None:
        refuse_unread_fields_of_unknown_family(r, model_type)
    else:
        check_unread_fields_of_family(r, model_type, known)
    try:
        model = ModelSpec.model_validate(fields)
    except ValidationError as exc:
        problem = describe_validation_error(exc)
        read_at_default = [  # the shape fields left out, read at the class's default (FIELD_DEFAULTS), that the
            note.split(",")[0].replace(" absent:", "") for note in r.assumptions  # problem names (trial 340 #7:
            if note.split(" ")[0] in FIGURE_FIELDS and " absent: " in note and note.endswith(" default")  # no other)
            and _names_field(problem, note.split(" ")[0])
        ]  # fmt: skip
        read = (
            f" (left out, so read at its config class's default: {', '.join(read_at_default)})"
            if read_at_default
            else ""
        )
        raise BadInputError(f"{origin} describes an invalid model: {problem}{read}") from exc
    unread = fields_no_reader_understood(r, with_nulls=True)
    return ImportedModel(model=model, model_type=model_type, assumptions=r.assumptions, unread=unread)


# Layer kinds -------------------------------------------------------------------------------------------------


def _has_layer_kinds(r: ConfigReader, fam: Family) -> bool:
    """Whether the config describes layers of different kinds even without a sliding window or chunk."""
    listed = ("layer_types", "layers_block_type", "attn_type_list", "linear_attn_config", "attention_layers")
    return fam.fixed_state is not None or any(r.config.get(key) is not None for key in listed)


def _layer_kinds(r: ConfigReader, fam: Family, n_layers: int) -> list[LayerKind] | None:
    """Each layer's kind when the config (or the family) says; ``None``: one kind for all. In order: the config's
    ``layer_types`` (Granite's ``layers_block_type``), the family's own fields, ``sliding_window_pattern``, the
    family's known cycle."""
    types = r.config.get("layer_types") or r.config.get("layers_block_type")
    if types:
        return kinds_of_layer_types(r, types, n_layers)
    if fam.layer_kinds is not None:
        kinds = fam.layer_kinds(r, n_layers)
        if kinds is not None:
            return kinds
    if r.get("sliding_window_pattern"):  # every nth layer global
        period = r.count("sliding_window_pattern", "sliding_window_pattern")
        return ["local"] * (period - 1) + ["global"] if period <= n_layers else ["local"] * n_layers  # bounded
    if fam.local_cycle:
        return r.assume(list(fam.local_cycle), fam.local_cycle_note)
    return None


SPEC_NAMES = {
    "num_key_value_heads": "n_kv_heads", "intermediate_size": "d_ff", "hidden_act": "activation",
    "hidden_activation": "activation", "activation_function": "activation", "n_routed_experts": "n_experts",
    "num_experts": "n_experts", "num_local_experts": "n_experts", "moe_intermediate_size": "d_ff_expert",
    "num_experts_per_tok": "n_active_experts", "first_k_dense_replace": "n_dense_layers",
    "num_shared_experts": "n_shared_experts", "sliding_window_pattern": "pattern", "max_window_layers": "pattern",
}  # fmt: skip
"""The ``ModelSpec`` field a config.json field becomes, where its name differs (a validation error names the spec's)."""


def _names_field(problem: str, config_key: str) -> bool:
    """Whether the validation ``problem`` is about ``config_key`` (by its own name or the spec field it becomes)."""
    return any(
        re.search(rf"\b{re.escape(name)}\b", problem) for name in (config_key, SPEC_NAMES.get(config_key)) if name
    )


def _say_windowless_local_layers(r: ConfigReader, kinds: list[LayerKind], window: int | None, family_name: str) -> None:
    """Layers the config lists as sliding but gives no window: a window of 0 is refused (it would attend to nothing);
    an unset one (null, or ``use_sliding_window`` false) is priced as full attention, as vLLM builds such a layer
    (transformers' ``create_sliding_window_causal_mask`` raises on it), and said; one the family's transformers
    model does not apply (a Llama's) is priced as transformers builds it, and said."""
    local = kinds.count("local")
    if not local or window:
        return
    stated = dict.get(r.config, "sliding_window")  # as written, even where the family does not read it
    if "sliding_window" in r.config.hidden and stated is not None:  # a window its transformers model does not apply
        from mha_cli.core.engine.architectures_served import WINDOWS_FROM

        vllm = (
            f"; vLLM's llama.py applies it from {WINDOWS_FROM['vllm']} (it reads layer_types), caching less"
            if family_name == "llama"
            else ""
        )
        r.assume(None, f"{local} layers listed as sliding are priced as full attention, as {r.defaults_from}'s model"
                       f" runs them: it does not apply sliding_window ({stated!r}, not read){vllm}")  # fmt: skip
        return
    switched_off = r.get("use_sliding_window") is False  # Qwen2Config then sets the window to None, whatever it is
    if type(stated) is int and stated == 0 and not switched_off:
        raise BadInputError(
            f"{r.origin}: {local} layers are listed as sliding but sliding_window is 0, a window of no tokens: give"
            " the window, or null for full attention"
        )
    unset = (
        "use_sliding_window false"
        if switched_off
        else f"sliding_window {json.dumps(stated)}"
        if "sliding_window" in dict.keys(r.config)
        else "no sliding_window"
    )
    r.assume(None, f"{local} layers listed as sliding have no window ({unset}): priced as full attention, as vLLM"
                   " builds a layer whose window is unset")  # fmt: skip


def _kinds_fields(kinds: list[LayerKind] | None, window: int | None, chunk: int | None) -> dict[str, Any]:
    """``sliding_window``, ``attention_chunk`` and ``layer_pattern`` for these layer kinds (``None``: every layer
    local with a window, chunked with a chunk, else global). A window or chunk no layer uses is dropped, and
    local layers without a window attend globally (as transformers runs them)."""
    if kinds is not None:
        kinds = [("global" if k == "local" and not window else k) for k in kinds]
        kinds = [("global" if k == "chunked" and not chunk else k) for k in kinds]
        window = window if "local" in kinds else None
        chunk = chunk if "chunked" in kinds else None
        if len(set(kinds)) == 1 and kinds[0] != "linear":
            kinds = None
    fields: dict[str, Any] = {"sliding_window": window, "attention_chunk": chunk}
    if kinds is not None:
        fields["layer_pattern"] = _shortest_cycle(kinds)
    return {key: value for key, value in fields.items() if value is not None}


def _shortest_cycle(pattern: list[LayerKind]) -> list[LayerKind]:
    """The shortest prefix that repeats to ``pattern`` (a full list when nothing repeats)."""
    border = [0] * len(pattern)  # border[i]: longest proper prefix of pattern[: i + 1] that is also its suffix
    for i in range(1, len(pattern)):  # KMP's failure function: linear (10,000 layers in milliseconds)
        k = border[i - 1]
        while k and pattern[i] != pattern[k]:
            k = border[k - 1]
        border[i] = k + (pattern[i] == pattern[k])
    return pattern[: len(pattern) - border[-1]] if pattern else pattern  # shortest period = length - longest border


# Attention, MLP, MoE, RoPE -------------------------------------------------------------------------------------


def _kv_heads(r: ConfigReader, fam: Family, n_heads: int) -> int:
    if fam.kv_heads is not None:
        own = fam.kv_heads(r, n_heads)
        if own is not None:
            return own
    if r.get("multi_query"):
        return 1
    n_kv = r.get("num_key_value_heads", "num_kv_heads")
    if n_kv is None:  # null reads as absent does (transformers' classes take None as MHA), said as written
        said = "null" if dict.get(r.config, "num_key_value_heads", 0) is None else "absent"
        return r.assume(n_heads, f"num_key_value_heads {said}: MHA (one KV head per query head)")
    return r.count("num_key_value_heads", "num_key_value_heads", "num_kv_heads")


def _mla(r: ConfigReader) -> dict[str, Any] | None:
    rank = r.get("kv_lora_rank")
    mla_family = r.defaults.get("kv_lora_rank") or r.config.get("qk_nope_head_dim") is not None  # Kimi-K2: remote
    if rank is None and "kv_lora_rank" in r.config and mla_family:  # null in an MLA family
        default = r.defaults.get("kv_lora_rank")
        raise BadInputError(
            f"{r.origin}: kv_lora_rank is null: vLLM then runs this family's attention without the MLA latent"
            " (DeepSeek-V2's plain attention, its heads qk_nope + qk_rope wide), which mha does not price; give the"
            " latent rank if the checkpoint has one"
            + (f" (the {r.defaults_from} default is {default})" if default else "")
        )
    if rank is None:
        return None
    return {
        "kv_lora_rank": rank,
        "qk_rope_head_dim": r.get("qk_rope_head_dim") or 0,
        "qk_nope_head_dim": r.require("qk_nope_head_dim (MLA)", "qk_nope_head_dim"),
        "v_head_dim": r.require("v_head_dim (MLA)", "v_head_dim"),
        "q_lora_rank": r.get("q_lora_rank"),
        "rope_interleave": r.get("rope_interleave") is not False,  # DeepSeek-V2 always, V3 by default
    }


def _class_activation(r: ConfigReader, known: Family, keys: tuple[str, ...]) -> str | None:
    """The family's config class default for the first of ``keys`` it has one for (the reader's defaults: the
    family's own ``defaults`` and ``FIELD_DEFAULTS``), or None. A family found by its architectures (its config class
    not read, review 317 #1) still builds its own MLP: its model types' table entries."""
    tables = (r.defaults, known.defaults, *(FIELD_DEFAULTS.get(model_type, {}) for model_type in known.model_types))
    return next((str(table[key]) for table in tables for key in keys if table.get(key) is not None), None)


def _dense_width(r: ConfigReader, fam: Family, n_layers: int) -> Any:
    """The dense MLP width: the family's own field first (Llama-4's intermediate_size_mlp: its intermediate_size is
    an expert's); one listed per layer (Gemma-3n) is taken at its widest, said so; a list of another length than the
    ``n_layers`` layers is refused, as transformers' Gemma3nTextConfig refuses it."""
    if fam.dense_width is not None:
        own = fam.dense_width(r)
        if own is not None:
            return own
    width = r.get(*fam.spellings.get("d_ff", ()), "intermediate_size", "n_inner", "ffn_hidden_size")
    if isinstance(width, list) and len(width) != n_layers:
        raise BadInputError(
            f"{r.origin}: intermediate_size has {len(width)} entries for {n_layers} layers: give one a layer, or one"
            " number for all, in a copy of the file"
        )
    if isinstance(width, list) and width:
        widest = max(width)
        if len(set(width)) > 1:
            r.assume(widest, f"intermediate_size varies by layer: the widest, {widest}, is used for every layer")
        return widest
    return width


def _moe(r: ConfigReader, fam: Family, n_layers: int) -> dict[str, Any] | None:
    spelled = fam.spellings
    n_experts = r.get(*spelled.get("experts", ()), "n_routed_experts", "num_local_experts", "num_experts")
    n_experts = _uniform(r, "num_experts", n_experts)
    if not n_experts:
        return None
    d_ff_expert = r.get("moe_intermediate_size")
    if d_ff_expert is None:
        d_ff_expert = r.require("intermediate_size", "intermediate_size")
    per_token_keys = spelled.get("experts_per_token", ("num_experts_per_tok", "num_experts_per_token"))
    shared = r.get(*spelled.get("shared_experts", ()), "n_shared_experts")
    return {
        "n_experts": n_experts,
        "n_active_experts": _uniform(r, per_token_keys[0], r.require("experts per token", *per_token_keys)),
        "n_shared_experts": shared or (1 if r.get("shared_expert_intermediate_size") else 0),
        "d_ff_expert": _uniform(r, "moe_intermediate_size", d_ff_expert),
        "d_ff_shared": r.get("shared_expert_intermediate_size"),
        "shared_expert_gate": fam.gated_shared_expert and bool(r.get("shared_expert_intermediate_size")),
        **_routing(r, fam),
    }


def _every_layer_dense(r: ConfigReader, n_layers: int, period: dict[str, int], mlps: list[MlpKind] | None) -> bool:
    """Whether the MoE placement leaves no MoE layer (DeepSeek's first_k_dense_replace at every layer: mha's own dense
    MLA config.json; trial 311 #3), counting an MTP layer: vLLM builds it as layer num_hidden_layers, MoE unless
    first_k_dense_replace passes it too (``deepseek_mtp.py``; review 312 #3). Read without marking the fields read."""
    if mlps is not None or period.get("n_dense_layers", 0) < n_layers:
        return False
    first_dense = dict.get(r.config, "first_k_dense_replace")
    mtp_layers = dict.get(r.config, "num_nextn_predict_layers") or 0
    return not mtp_layers or not isinstance(first_dense, int) or first_dense > n_layers


def _uniform(r: ConfigReader, key: str, value: Any) -> Any:
    """A count a config may list per layer (Hunyuan's moe_topk, num_experts): the one value every layer has."""
    if not isinstance(value, list):
        return value
    if not value or len(set(value)) > 1:
        raise BadInputError(f"{r.origin}: {key} varies by layer ({value[:4]}...): mha prices one value for every layer")
    return value[0]


def _feed_forwards(r: ConfigReader, n_layers: int, *, has_experts: bool) -> tuple[dict[str, int], list[MlpKind] | None]:
    """Which layers are MoE, dense or without an MLP: ``MoESpec``'s ``n_dense_layers`` leading dense ones then every
    ``layer_period``-th from ``layer_offset`` where such a period describes them, else each layer's kind
    (``ModelSpec.mlp_pattern``): dense layers scattered among the MoE ones, or layers without an MLP (Nemotron-H's
    view lists them as ``none`` in ``mlp_layer_types``). From whichever fields the config has: DeepSeek's
    ``first_k_dense_replace``; a list (Llama 4's ``moe_layers``, A.X's ``mlp_layer_types``); Qwen-MoE's
    ``mlp_only_layers`` and ``decoder_sparse_step``; Jamba's ``expert_layer_period`` / ``expert_layer_offset``; ERNIE's
    ``moe_layer_start_index`` / ``moe_layer_end_index`` / ``moe_layer_interval``; Llama 4's
    ``interleave_moe_layer_step``. Returns (the period's fields, the layer kinds or None)."""
    listed = _listed_mlp_types(r, n_layers)
    if not has_experts:
        if listed is None or "none" not in listed:
            return {}, None
        if "sparse" in listed:
            raise BadInputError(f"{r.origin}: mlp_layer_types lists sparse layers but the config sets no experts")
        return {}, ["none" if kind == "none" else "dense" for kind in listed]
    if r.get("first_k_dense_replace") and listed is None:  # the list wins, as in transformers
        return {"n_dense_layers": min(n_layers, r.count("dense layers", "first_k_dense_replace"))}, None
    moe = _moe_layer_set(r, n_layers, listed)
    if not moe and (listed is None or "none" not in listed):
        return {"n_dense_layers": n_layers}, None
    every = moe[1] - moe[0] if len(moe) > 1 else 1
    if moe and moe == list(range(moe[0], n_layers, every)) and (listed is None or "none" not in listed):
        return {"n_dense_layers": moe[0], "layer_period": every, "layer_offset": moe[0] % every}, None
    mlp_free = {i for i, kind in enumerate(listed or []) if kind == "none"}
    return {}, ["moe" if i in moe else "none" if i in mlp_free else "dense" for i in range(n_layers)]


_MLP_TYPES = ("dense", "sparse", "none")
"""``mlp_layer_types``' entries: A.X's and Mellum's ``dense`` and ``sparse``, and the ``none`` of Nemotron-H's view."""


def _listed_mlp_types(r: ConfigReader, n_layers: int) -> list[str] | None:
    """A.X's and Mellum's ``mlp_layer_types``, ``dense`` or ``sparse`` per layer (``none``: Nemotron-H's view, a
    layer without an MLP), checked; its first ``n_layers`` entries, as transformers reads entry i for layer i."""
    kinds = r.get("mlp_layer_types")
    if kinds is None:
        return None
    if not isinstance(kinds, list) or len(kinds) < n_layers or not set(map(str, kinds)) <= set(_MLP_TYPES):
        raise BadInputError(f"{r.origin}: mlp_layer_types must list 'dense' or 'sparse' for each of {n_layers} layers")
    if len(kinds) > n_layers:
        r.assume(None, f"mlp_layer_types lists {len(kinds)} layers: the first {n_layers} are read, as transformers")
    return [str(kind) for kind in kinds[:n_layers]]


def _layer_indices(r: ConfigReader, key: str, n_layers: int) -> set[int]:
    """A config's list of layer indices (``mlp_only_layers``, ``moe_layers``), checked."""
    value = r.get(key)
    if value is None:
        return set()
    if not isinstance(value, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in value):
        raise BadInputError(f"{r.origin}: {key} must be a list of layer indices, got {str(value)[:60]}")
    return {i for i in value if 0 <= i < n_layers}


def _moe_layer_set(r: ConfigReader, n_layers: int, listed: list[str] | None) -> list[int]:
    """The MoE layers the config's fields name, sorted (every layer when none says otherwise); ``listed``: its
    ``mlp_layer_types`` (``_listed_mlp_types``)."""
    every = set(range(n_layers))
    if r.get("moe_layers") is not None:  # Llama 4: the list itself
        return sorted(_layer_indices(r, "moe_layers", n_layers))
    if listed is not None:  # A.X, Mellum: "dense" / "sparse" per layer
        return [i for i, kind in enumerate(listed) if kind == "sparse"]
    moe = every - _layer_indices(r, "mlp_only_layers", n_layers)
    if r.get("decoder_sparse_step") is not None:  # Qwen-MoE: layers with (i + 1) % step == 0
        step = r.count("decoder_sparse_step", "decoder_sparse_step")
        moe &= {i for i in every if (i + 1) % step == 0}
    if r.get("expert_layer_period") is not None:  # Jamba: every period-th layer from the offset
        period = r.count("expert_layer_period", "expert_layer_period")
        offset = r.count("expert_layer_offset", "expert_layer_offset") if r.get("expert_layer_offset") else 0
        if offset >= period:  # JambaConfig: "expert layer offset ... must be smaller than expert layer period"
            raise BadInputError(
                f"{r.origin}: expert_layer_offset {offset} is not below expert_layer_period {period}: transformers'"
                " JambaConfig refuses it; give an offset below the period"
            )
        moe &= {i for i in every if (i - offset) % period == 0}
    if r.get("moe_layer_interval") is not None:  # ERNIE 4.5: (i + 1) % interval == 0, from start to end
        interval = r.count("moe_layer_interval", "moe_layer_interval")
        start = r.get("moe_layer_start_index") or 0
        end = r.get("moe_layer_end_index")
        end = n_layers - 1 if end is None or end == -1 else end
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end)):
            raise BadInputError(f"{r.origin}: moe_layer_start_index and moe_layer_end_index must be layer indices")
        moe &= {i for i in every if (i + 1) % interval == 0 and start <= i <= end}
    if r.get("interleave_moe_layer_step") is not None:  # Llama 4 without moe_layers: every step-th from step - 1
        step = r.count("interleave_moe_layer_step", "interleave_moe_layer_step")
        moe &= {i for i in every if (i + 1) % step == 0}
    return sorted(moe)


def _routing(r: ConfigReader, fam: Family) -> dict[str, Any]:
    """MoESpec's routing fields: the config's values, else the family's modeling defaults (``Family.routing_*``)."""
    routing: dict[str, Any] = {}
    for key in ("scoring_func", "topk_method", "norm_topk_prob", "routed_scaling_factor", "n_group", "topk_group"):
        value = r.get(key)
        if key in fam.routing_fixed or value is None:
            value = fam.routing_defaults.get(key)
        if value is not None:
            routing[key] = value
    return routing


_ROPE_SCALING_FIELDS = (
    "factor", "original_max_position_embeddings", "low_freq_factor", "high_freq_factor",
    "beta_fast", "beta_slow", "mscale", "mscale_all_dim", "attention_factor", "truncate",
)  # fmt: skip


def _per_layer_type(params: Any) -> bool:
    """Whether ``rope_parameters`` holds one block per layer type (Gemma 3's full_attention, sliding_attention)."""
    return isinstance(params, dict) and bool(params) and all(isinstance(v, dict) for v in params.values())


def _rope_parameters(r: ConfigReader) -> dict[str, Any]:
    """rope_theta, partial_rotary_factor and the scaling block, from either layout of config.json.

    transformers 5 writes ``rope_parameters`` (theta and scaling in one dict, per layer type for
    Gemma 3: the full_attention layers' here, the sliding_attention layers' in ``_local_rope``); older
    files have ``rope_theta`` beside ``rope_scaling``.
    """
    params = r.get("rope_parameters")
    for field in ("rope_parameters", "rope_scaling"):  # a list or a string would be dropped unread (trial 299 #5)
        if (value := r.get(field)) is not None and not isinstance(value, dict):
            raise BadInputError(
                f'{r.origin}: {field} is {value_kind(value)}, not an object of RoPE fields ({{"rope_type":'
                f' "llama3", "factor": 8.0, ...}}): write it as one, or null, in a copy of the file'
            )
    if _per_layer_type(params):
        kind = "full_attention" if "full_attention" in params else next(iter(params))
        others = sorted(set(params) - {kind, "sliding_attention"})
        if others or (kind != "full_attention" and "sliding_attention" not in params):
            r.assumptions.append(f"rope_parameters per layer type: the {kind} layers' RoPE is used for every layer")
        params = params[kind]
    merged: dict[str, Any] = dict(params) if isinstance(params, dict) else {}
    if isinstance(r.get("rope_scaling"), dict):
        merged = {**r.get("rope_scaling"), **merged}
    for key in ("rope_theta", "partial_rotary_factor"):
        legacy = r.get(key)  # read in either layout: a file may state it in both (mha recommend --format hf does)
        if legacy is None:
            continue
        if merged.get(key) is None:
            merged[key] = legacy
        elif legacy != merged[key]:
            r.assumptions.append(f"{key} {legacy} beside rope_parameters' {merged[key]}: the latter is read")
    return merged


def _rope(r: ConfigReader, fam: Family) -> dict[str, Any] | None:
    """The spec's ``rope`` block; ``None`` for learned or ALiBi positions."""
    if fam.learned_positions is not None:
        return None
    if r.get("alibi"):
        r.assumptions.append(
            "alibi: ALiBi position biases are not modelled; the built decoder applies RoPE (theta 10,000)"
        )
        return None
    return _rope_block(r, fam, _rope_parameters(r))


def _local_rope(r: ConfigReader, fam: Family) -> dict[str, Any] | None:
    """The ``rope_local`` block: rope_parameters' sliding_attention entry (transformers 5), else an older
    file's ``rope_local_base_freq`` (unscaled, the global layers' partial rotation); None: no RoPE of their own."""
    params = r.get("rope_parameters")
    if _per_layer_type(params) and isinstance(params.get("sliding_attention"), dict):
        local = dict(params["sliding_attention"])
    elif r.get("rope_local_base_freq") is not None:
        local = {"rope_theta": r.get("rope_local_base_freq")}
    else:
        return None
    if local.get("partial_rotary_factor") is None and r.get("partial_rotary_factor") is not None:
        local["partial_rotary_factor"] = r.get("partial_rotary_factor")
    return _rope_block(r, fam, local)


def _rope_block(r: ConfigReader, fam: Family, params: dict[str, Any]) -> dict[str, Any]:
    """A ``RopeSpec`` block from one set of RoPE parameters (theta, partial rotation, scaling)."""
    theta = params.get("rope_theta")
    if theta is None:
        theta = r.assume(10000.0, "rope_theta absent: 10,000 (the RoPE default)")
    if isinstance(theta, bool) or not isinstance(theta, int | float) or not math.isfinite(theta) or theta <= 0:
        raise BadInputError(f"{r.origin}: rope_theta must be a positive finite number, got {theta!r}")  # trial 266
    rope: dict[str, Any] = {"theta": float(theta)}
    if fam.interleaved_rope:
        rope["interleaved"] = True
    if params.get("partial_rotary_factor") is not None:
        rope["partial_rotary_factor"] = float(params["partial_rotary_factor"])
    kind = params.get("rope_type", params.get("type"))
    if kind in (None, "default"):
        return rope
    if kind == "proportional":  # transformers 5.24 modeling_rope_utils._compute_proportional_rope_parameters
        r.assumptions.append(
            "rope_type 'proportional' is not modelled: its rotating frequencies are theta^(-2i / head_dim), read as"
            " theta^(-2i / rotated width); no size depends on them"
        )
        return rope
    dynamic_unread = kind == "dynamic" and (params.get("factor") is None or params.get("alpha") is not None)
    if kind not in ("linear", "llama3", "yarn", "dynamic") or dynamic_unread:  # Hunyuan's alpha: vLLM's own class
        r.assumptions.append(f"rope_scaling type {kind!r} is not modelled: unscaled RoPE frequencies")
        return rope
    scaling = {key: params[key] for key in _ROPE_SCALING_FIELDS if params.get(key) is not None}
    if kind == "yarn" and "factor" not in scaling and scaling.get("original_max_position_embeddings"):
        context = r.require("max_position_embeddings (yarn)", "max_position_embeddings")
        scaling["factor"] = context / scaling["original_max_position_embeddings"]
    rope["scaling"] = {"type": kind, **scaling}
    return rope


def _attention_arithmetic(r: ConfigReader) -> dict[str, Any]:
    """The softmax scale and the soft caps a config states (Gemma 2/3's ``query_pre_attn_scalar``,
    ``attn_logit_softcapping``, ``final_logit_softcapping``); a family that ignores one drops it (Gemma 3)."""
    fields: dict[str, Any] = {}
    for key, field in (
        ("query_pre_attn_scalar", "attn_scale"),
        ("attn_logit_softcapping", "attn_logit_softcap"),
        ("final_logit_softcapping", "final_logit_softcap"),
    ):
        value = r.config[key] if key in r.config else r.get(key)  # null stated: off, not the class default
        if value is not None:
            fields[field] = float(value) ** -0.5 if key == "query_pre_attn_scalar" else float(value)
    return fields


NORM_EPS_KEYS = ("rms_norm_eps", "layer_norm_epsilon", "layer_norm_eps", "norm_epsilon", "norm_eps")


def _norm_eps(r: ConfigReader) -> float | None:
    """The norms' epsilon, a positive finite number; one line naming the field for another value (trial 266: a
    string was "a field of this config.json has an unexpected type")."""
    eps = r.get(*NORM_EPS_KEYS)
    if eps is None:
        return None
    if isinstance(eps, bool) or not isinstance(eps, int | float) or not math.isfinite(eps) or eps <= 0:
        key = next((k for k in NORM_EPS_KEYS if r.config.get(k) is not None), NORM_EPS_KEYS[0])
        raise BadInputError(f"{r.origin}: {key} must be a positive number, got {eps!r}")
    return float(eps)


# Refusals: no silent wrong answer ------------------------------------------------------------------------------

UNREAD_FIELDS: dict[str, str] = {
    "per_layer_config": "per-layer head counts, widths or latents",
    "cross_attention_layers": "cross-attention layers (their cache holds the encoder's tokens, not the prompt's)",
    "attn_layer_indices": "which layers are attention (the others keep a fixed state)",
    "hybrid_override_pattern": "which layers are attention, Mamba or MLP (Nemotron-H)",
    "full_attn_idxs": "which layers attend to every token (LFM2)",
    "conv_L_cache": "a short-convolution state per layer (LFM2)",
    "attention_window_size": "the window of a recurrent model's attention layers (RecurrentGemma)",
    "index_n_heads": "an indexer key cache (DeepSeek-V3.2's sparse attention)",
    "index_head_dim": "an indexer key cache (DeepSeek-V3.2's sparse attention)",
    "swa_head_dim": "the head width of the sliding-window layers apart from the others'",
    "swa_num_key_value_heads": "the KV heads of the sliding-window layers apart from the others'",
    "prompt_length": "virtual prompt tokens the cache holds ahead of the text (CPM-Ant)",
    "linear_attn_config": "which layers are linear attention with a fixed state (Kimi-Linear's KDA)",
    "attn_type_list": "which layers are lightning attention with a fixed state (MiniMax)",
    "attn_layer_period": "which layers attend, the others Mamba with a fixed state (Jamba)",
}
"""Fields that change the cache or the model and that the importer does not read (outside the families whose
``Family.reads`` names them): a config carrying one is refused naming it, never priced as if it were absent."""
PLAIN_DECODER_LAYOUTS: dict[str, Callable[[Any], bool]] = {
    "attn_type_list": lambda flags: isinstance(flags, list) and all(type(f) is int and f == 1 for f in flags),
}
"""``UNREAD_FIELDS`` at the value a plain decoder has, which changes no figure: read as that decoder, not refused
(MiniMax-M2's ``attn_type_list`` of 1s: softmax attention on every layer). Any other value is still refused."""
ENCODER_DECODER_FAMILIES = {
    "bart", "bigbird_pegasus", "blenderbot", "blenderbot-small", "marian", "mbart", "mvp", "pegasus", "plbart",
    "prophetnet", "t5", "mt5", "umt5", "whisper", "trocr", "m2m_100", "nllb-moe", "fsmt", "led", "longt5",
}  # fmt: skip
"""Families whose configs describe an encoder-decoder model (their decoder-only CausalLM classes included)."""


def _refuse_encoder_decoder(config: dict[str, Any], origin: str) -> None:
    """An encoder-decoder config (BART, Marian, Pegasus, T5...) is refused saying so, before any field is read."""
    if config.get("is_encoder_decoder") or config.get("model_type") in ENCODER_DECODER_FAMILIES:
        raise BadInputError(
            f"{origin}: an encoder-decoder model (model_type {config.get('model_type')!r}): mha prices"
            " decoder-only models, whose cache holds the prompt's tokens, not an encoder's"
        )


def _refuse_unread_fields(r: ConfigReader, model_type: str, fam: Family) -> None:
    """No silent wrong answer: refuse a config whose fields would change the figures in ways not read here (before
    any other field is read, so the refusal names the field, not a count the family spells otherwise)."""
    for field, what in UNREAD_FIELDS.items():
        value = r.config.get(field)
        if value in (None, False, [], {}, 0, "") or field in fam.reads:
            continue
        plain = PLAIN_DECODER_LAYOUTS.get(field)
        layers = r.config.get("num_hidden_layers")
        if plain is not None and plain(value) and isinstance(layers, int) and len(value) != layers:
            raise BadInputError(
                f"{r.origin}: {field} has {len(value)} entries but num_hidden_layers is {layers}: give one entry per"
                " layer"
            )
        if plain is None or not plain(value):
            raise BadInputError(
                f"{r.origin}: {field!r} sets {what}, which mha does not read for model_type {model_type!r}: a figure"
                " that ignored it would be wrong, so it is refused (remove the field only if it is unused)"
            )


def _refuse_unread_mixers(r: ConfigReader, model_type: str, fields: dict[str, Any]) -> None:
    """Layers whose ``layer_types`` name a state mixer (alone, or beside attention as ``hybrid``) in a family whose
    mixer is not read here: refused naming them, never priced as attention-only or as an empty state."""
    if fields.get("recurrent") is not None:
        return
    types = r.config.get("layer_types") or r.config.get("layers_block_type") or []
    mixers = sorted({str(t) for t in types if isinstance(t, str) and t in MIXER_LAYER_TYPES})
    if mixers:
        raise BadInputError(
            f"{r.origin}: layer_types has {', '.join(mixers)} layers, whose state mixer mha does not read for"
            f" model_type {model_type!r}: a figure without their fixed state would be wrong, so it is refused"
        )


def _refuse_other_value_width(r: ConfigReader, fields: dict[str, Any]) -> None:
    """Outside MLA, K and V are priced at one width: a v_head_dim unlike head_dim is refused."""
    v_head_dim = r.config.get("v_head_dim")
    head_dim = fields.get("head_dim") or fields["d_model"] // max(1, fields["n_heads"])
    if "mla" not in fields and v_head_dim is not None and str(v_head_dim) != str(head_dim):
        raise BadInputError(
            f"{r.origin}: v_head_dim {v_head_dim} differs from the key head_dim {head_dim}; mha prices K and V at"
            " one width outside MLA, so it is refused"
        )


def _whole(value: Any) -> Any:
    """``value`` as an int where it is a float with no fraction (``8192.0``); anything else as given, for the
    model's validation to judge."""
    return int(value) if isinstance(value, float) and value.is_integer() else value
