"""A config file's model layout: flat (``schema_version: 1``) or in parts (``2``), checked against the version the
file states, and its errors named as the file writes them.

The rule (docs/models.md, "Our config file: the model in parts"): a stated version and the layout must agree, so a
file of version 2 that writes ``model.n_heads``, or of version 1 that writes ``model.attention``, is refused in one
line naming the fields and the fix; a file that states no version is read in the layout it writes, and refused
when it writes both. The old names and their places are ``core.model_migration.FLAT_FIELDS``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from mha_cli.core.errors import BadInputError, one_line, shown, value_kind
from mha_cli.core.model_migration import FLAT_FIELDS, PARTS, flat_name, nest_flat_fields
from mha_cli.core.schemas import ModelSpec
from mha_cli.core.suggest import close_names

FLAT, IN_PARTS = 1, 2
"""The two layouts, by the ``schema_version`` that writes them."""

PLACES = set(FLAT_FIELDS.values())
NAMES_LISTED = 3
"""Fields named in a layout refusal; the rest are counted."""


def part_fields(part: str) -> set[str]:
    """The field names of one part of ``ModelSpec`` (``attention``: ``n_heads``, ``sinks``, ...)."""
    return set(ModelSpec.model_fields[part].annotation.model_fields)


def checked_layout(data: dict[str, Any], origin: str) -> tuple[dict[str, Any], int | None]:
    """``data`` (a config file's top-level mapping) with its model's layout checked, and that layout.

    A flat model comes back nested in its parts and its ``schema_version`` set to 1 (the file's own, or the one its
    layout implies), so a version-1 file that omits every flat field still names them as missing. The layout is
    None when the model is not a mapping: validation names that. Refusals are ``BadInputError`` (exit 2).
    """
    model, version = data.get("model"), data.get("schema_version")
    stated = version if type(version) is int and version in (FLAT, IN_PARTS) else None
    if "schema_version" in data and stated is None:  # not true or 2.0, which pydantic's Literal takes for 1 and 2
        raise BadInputError(f"{origin}: schema_version: must be 1 or 2 (got {_shown(version)})")
    if not isinstance(model, dict):
        return data, None
    flat = [key for key in model if key in FLAT_FIELDS]
    parts = [key for key in model if key in PARTS]
    for part in parts:
        if not isinstance(model[part], dict):
            raise BadInputError(
                f"{origin}: model.{part}: must be a mapping of the {part} part's fields"
                f" (got {_kind(model[part])}){_flat_beside(flat)}"
            )
    if stated == IN_PARTS and flat:
        fix = "" if parts else " or set schema_version: 1 (every field at the top level)"
        raise BadInputError(
            f"{origin}: model: schema_version 2 writes the model in parts, but this file writes {_listed(flat)} at"
            f" the top level as schema_version 1 did: move each into its part ({_moved(flat[0])}){fix}"
        )
    if stated == FLAT and parts:
        fix = f"move {_listed(flat)} into their parts too ({_moved(flat[0])}) and " if flat else ""
        raise BadInputError(
            f"{origin}: model: schema_version 1 writes every model field at the top level, but this file writes"
            f" the {_listed(parts)} {_plural(parts, 'part')} of schema_version 2: {fix}set schema_version: 2"
        )
    if stated is None and flat and parts:
        raise BadInputError(
            f"{origin}: model: mixes the two layouts, {_listed(flat)} at the top level (schema_version 1) beside"
            f" the {_listed(parts)} {_plural(parts, 'part')} (schema_version 2): move each into its part"
            f" ({_moved(flat[0])}) and set schema_version: 2"
        )
    if stated == FLAT or flat:
        return {
            **data,
            "schema_version": FLAT,
            "model": nest_flat_fields({**{part: {} for part in PARTS}, **model}),
        }, FLAT
    return data, IN_PARTS


def _shown(value: Any) -> str:
    """``value`` as the file writes it: a string quoted, a number as is, ``null``, ``true`` / ``false``."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    return shown(value) if isinstance(value, (str, int)) else one_line(repr(value), 40)


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, (bool, int, float)):
        return _shown(value) if isinstance(value, bool) else repr(value)
    return value_kind(value)


def _flat_beside(flat: list[str]) -> str:
    return f"; beside flat fields ({_listed(flat)}), leave the part out" if flat else ""


def _listed(names: list[str]) -> str:
    shown = names[:NAMES_LISTED]
    more = len(names) - len(shown)
    if more:
        return f"{', '.join(shown)} and {more} more"
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} and {shown[-1]}"


def _plural(names: list[str], word: str) -> str:
    return word if len(names) == 1 else f"{word}s"


def _moved(flat: str) -> str:
    part, name = FLAT_FIELDS[flat]
    return f"{flat} -> {part}.{name}"


def unknown_field_hint(layout: int | None) -> Callable[[tuple[Any, ...]], str | None]:
    """For an unknown model field at ``loc`` of a file of ``layout``, where it belongs: an old flat name inside a
    part (``attention.kv_heads``, ``layers.layer_pattern``) or a part's field in the wrong part names its place
    (``did you mean attention.n_kv_heads?``); a misspelt name, the closest field. None: nothing close."""

    def hint(loc: tuple[Any, ...]) -> str | None:
        if len(loc) == 3 and loc[0] == "model" and loc[1] in PARTS and isinstance(loc[2], str):
            return _in_part_hint(loc[1], loc[2])
        if len(loc) == 2 and loc[0] == "model" and isinstance(loc[1], str):
            return _top_level_hint(loc[1], layout)
        return None

    return hint


CONFIG_JSON_NAMES = {
    "rope_theta": "attention.rope.theta", "partial_rotary_factor": "attention.rope.partial_rotary_factor",
    "rope_scaling": "attention.rope.scaling", "num_attention_heads": "attention.n_heads",
    "num_key_value_heads": "attention.n_kv_heads", "attention_bias": "attention.qkv_bias and attention.o_bias",
    "kv_lora_rank": "attention.mla.kv_lora_rank", "qk_rope_head_dim": "attention.mla.qk_rope_head_dim",
    "qk_nope_head_dim": "attention.mla.qk_nope_head_dim", "q_lora_rank": "attention.mla.q_lora_rank",
    "hidden_size": "d_model", "num_hidden_layers": "n_layers", "max_position_embeddings": "context_length",
    "intermediate_size": "block.d_ff", "hidden_act": "block.activation", "rms_norm_eps": "block.norm_eps",
    "vocab_size": "embeddings.vocab_size", "tie_word_embeddings": "embeddings.tied",
}  # fmt: skip
"""A Hugging Face config.json field written into our config file, and where ours keeps it (the closest name by
spelling sent ``model.attention.rope_theta`` to ``attention.rope_local``: newuser trial 241)."""


def _config_json_hint(key: str) -> str | None:
    place = CONFIG_JSON_NAMES.get(key)
    if place is None:
        return None
    return f"did you mean {place}? ({key} is config.json's name; `mha kv` reads a config.json as it is)"


WINDOW_NAMES = ("window", "attention_window", "window_size", "local_window")
"""Names a user gives a sliding window: the closest by spelling is ``attention.masked_window`` (a mask on global
layers that changes no size), which a window cached per layer is not (review 295)."""


def _window_hint() -> str:
    return (
        "did you mean layers.sliding_window? (the window a local layer attends to and caches, with layers.pattern"
        " naming the local layers; attention.masked_window is a mask on global layers that caches every token)"
    )


def _in_part_hint(part: str, key: str) -> str | None:
    if key in CONFIG_JSON_NAMES and key not in FLAT_FIELDS:
        return _config_json_hint(key)
    if key in WINDOW_NAMES:
        return _window_hint()
    if key in FLAT_FIELDS and FLAT_FIELDS[key] != (part, key):
        place = ".".join(FLAT_FIELDS[key])
        renamed = FLAT_FIELDS[key][1] != key  # n_kv_heads kept its name; attn_sinks is attention.sinks now
        return f"did you mean {place}?" + (f" ({key} is its schema_version 1 name)" if renamed else "")
    elsewhere = [f"{other}.{key}" for other in PARTS if other != part and key in part_fields(other)]
    if elsewhere:
        return f"did you mean {' or '.join(elsewhere)}?"
    close = close_names(key, part_fields(part), n=1, cutoff=OTHER_PART_CUTOFF)
    return f"did you mean {part}.{close[0]}?" if close else None


OTHER_PART_CUTOFF = 0.75
"""How alike an unknown field must be to a part's field to be offered it (difflib's ratio): ``n_kv_head`` ->
``n_kv_heads`` (0.95), not ``foo_bar`` -> ``o_bias`` (0.62, trial 350 #4)."""


def _top_level_hint(key: str, layout: int | None) -> str | None:
    if key in CONFIG_JSON_NAMES and key not in FLAT_FIELDS:
        return _config_json_hint(key)
    if key in WINDOW_NAMES and layout != FLAT:  # as inside a part (review 301 #5)
        return _window_hint()
    own = [name for name in ModelSpec.model_fields if name not in PARTS]
    if layout == FLAT:
        close = close_names(key, [*own, *FLAT_FIELDS], n=1)
        return f"did you mean {close[0]}?" if close else None
    by_name = {name: name for name in own}
    close = close_names(key, by_name, n=1)
    if not close:  # a part's field, only for a near typo of it (trial 350 #4: foo_bar was offered attention.o_bias)
        by_name = {old: ".".join(place) for old, place in FLAT_FIELDS.items() if old not in own}
        by_name |= {name: f"{part}.{name}" for part in PARTS for name in part_fields(part) if name not in by_name}
        close = close_names(key, by_name, n=1, cutoff=OTHER_PART_CUTOFF)
    return f"did you mean {by_name[close[0]]}?" if close else None


_PART_FIELD = re.compile(r"model\.(attention|layers|block|embeddings)\.(\w+)")
_PART_LOCATION = re.compile(r"model\.(attention|layers|block|embeddings): (\w+)")
_PART_MENTION = re.compile(r"(?<![\w.])(attention|layers|block|embeddings)\.(\w+)")


def as_flat_paths(described: str) -> str:
    """An error of a file whose model is written flat (schema 1), every field named as the file names it: a part's
    field (``model.attention.n_heads`` -> ``model.n_heads``, ``model.block.moe.n_experts`` -> ``model.moe.n_experts``),
    an error of a whole part (``model.layers: pattern has local layers`` -> ``model: layer_pattern has local
    layers``) and a part's field a message mentions (``layers.pattern`` -> ``layer_pattern``)."""

    def field(match: re.Match[str]) -> str:
        place = (match.group(1), match.group(2))
        return f"model.{flat_name(*place)}" if place in PLACES else match.group(0)

    def location(match: re.Match[str]) -> str:
        place = (match.group(1), match.group(2))
        return f"model: {flat_name(*place) if place in PLACES else match.group(2)}"

    def mention(match: re.Match[str]) -> str:
        place = (match.group(1), match.group(2))
        return flat_name(*place) if place in PLACES else match.group(0)

    return _PART_MENTION.sub(mention, _PART_LOCATION.sub(location, _PART_FIELD.sub(field, described)))
