"""Turn a pydantic ``ValidationError`` into one line a person can act on."""

from __future__ import annotations

import re
import reprlib
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from mha_cli.core.errors import one_line, shown
from mha_cli.core.suggest import close_names

MAX_FIELDS_DESCRIBED = 5
"""Fields named in one error line; the rest are counted (3,000 unknown fields make one short line, not 889 KB)."""

_BRIEF = reprlib.Repr()
_BRIEF.maxlevel, _BRIEF.maxlist, _BRIEF.maxdict, _BRIEF.maxstring, _BRIEF.maxother = 2, 4, 4, 40, 40


_TYPE_WORDS = {
    "model_type": "a mapping of fields",
    "dict_type": "a mapping of fields",
    "list_type": "a list",
    "string_type": "text",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "float_type": "a number",
    "float_parsing": "a number",
    "finite_number": "a finite number",
}


def _given(value: Any) -> str:
    """The value a person gave, quoted briefly: a prefix of a long string, a few items of a list (a YAML alias is
    never expanded), never a newline."""
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return shown(value)
    return one_line(_BRIEF.repr(value), 80)


def _field_path(loc: tuple[Any, ...]) -> str:
    """``model.n_heads``; a key that is long or not printable (an unknown field's name) is quoted and cut."""
    parts = []
    for part in loc:
        if isinstance(part, str):
            parts.append(part if len(part) <= 40 and part.isprintable() else shown(part))
        else:
            parts.append(_given(part))
    return ".".join(parts)


_BOUNDS = ("greater_than", "greater_than_equal", "less_than_equal", "less_than")
"""pydantic's bound errors, which a NaN fails whichever bound is checked first."""

UnknownFieldHint = Callable[[tuple[Any, ...]], str | None]
"""Where an unknown field at a location probably belongs (``"did you mean attention.n_kv_heads?"``), or None."""


def _phrase(error: Any, unknown_hint: UnknownFieldHint | None = None) -> str:
    """What is wrong with one field, in plain words, quoting the value that was given."""
    kind, ctx, given = error["type"], error.get("ctx") or {}, error.get("input")
    if kind == "extra_forbidden":
        hint = unknown_hint(tuple(error["loc"])) if unknown_hint else None
        return f"unknown field; {hint}" if hint else "unknown field (check its spelling; `mha schema` lists the fields)"
    if kind == "missing":
        return "missing (required)"
    if isinstance(given, float) and given != given and kind in _BOUNDS:  # NaN fails every bound: not "too large"
        return f"must be a number (got {_given(given)})"
    if kind == "greater_than":
        return f"must be greater than {ctx['gt']} (got {_given(given)})"
    if kind == "greater_than_equal":
        return f"must be at least {ctx['ge']} (got {_given(given)})"
    if kind == "less_than_equal":
        return f"must be at most {ctx['le']:,} (got {_given(given)})"
    if kind == "less_than":
        return f"must be less than {ctx['lt']:,} (got {_given(given)})"
    if kind == "literal_error":
        close = close_names(str(given), re.findall(r"'([^']*)'", str(ctx["expected"])), n=1)
        guess = f"; did you mean {close[0]!r}?" if close else ""
        return f"must be one of {ctx['expected']} (got {_given(given)}){guess}"
    if kind in ("int_parsing", "int_from_float", "int_type"):
        if isinstance(given, float) and given.is_integer():  # trial 362 #2: "5.0 is not a whole number" read false
            return f"must be a whole number (got {_given(given)}): write it as {int(given)}, without the decimal point"
        return f"must be a whole number (got {_given(given)})"
    if kind in _TYPE_WORDS:
        return f"must be {_TYPE_WORDS[kind]} (got {_given(given)})"
    return one_line(str(error["msg"]).removeprefix("Value error, "))


DERIVED_FROM_HEADS = ("n_kv_heads", "head_dim", "variant")
"""An attention part's fields a model spec derives from its ``n_heads`` (``schemas.resolve_attention``)."""


def _without_derived_misses(errors: list[Any]) -> list[Any]:
    """``errors`` less the "missing" ones of an attention part's derived fields (``DERIVED_FROM_HEADS``) when what
    they derive from is itself at fault: another error inside that attention part (an ``n_heads`` of "4" or left
    out, a bad ``mla`` width), or the model's ``d_model`` refused or missing. The error of their source says it."""
    faults = [tuple(error["loc"]) for error in errors]
    blamed = {
        tuple(error["loc"])[: tuple(error["loc"]).index("attention") + 1]
        for error in errors
        if "attention" in error["loc"] and (error["type"] != "missing" or error["loc"][-1] not in DERIVED_FROM_HEADS)
    }
    blamed |= {(*loc[:-1], "attention") for loc in faults if loc[-1:] == ("d_model",)}

    def underived(error: Any) -> bool:
        loc = tuple(error["loc"])
        return (
            error["type"] == "missing"
            and len(loc) >= 2
            and loc[-2] == "attention"
            and loc[-1] in DERIVED_FROM_HEADS
            and loc[:-1] in blamed
        )

    return [error for error in errors if not underived(error)]


def describe_validation_error(
    exc: ValidationError, option_names: Mapping[str, str] | None = None, unknown_hint: UnknownFieldHint | None = None
) -> str:
    """``"model.n_heads: n_heads (32) must be divisible by n_kv_heads (5)"``, one item per field, '; '-joined.

    ``option_names`` renames fields to the command-line options that set them (``{"seq_len": "--seq"}``), so the
    line names what the person typed: ``"--seq: must be greater than 0 (got 0)"``. ``unknown_hint`` says where
    an unknown field belongs.
    """
    parts = []
    errors = _without_derived_misses(exc.errors(include_url=False))
    for error in errors[:MAX_FIELDS_DESCRIBED]:
        path = _field_path(error["loc"])
        message = _phrase(error, unknown_hint)
        parts.append(f"{path}: {message}" if path else message)
    if len(errors) > MAX_FIELDS_DESCRIBED:
        parts.append(f"and {len(errors) - MAX_FIELDS_DESCRIBED:,} more")
    described = "; ".join(parts)
    for field, option in (option_names or {}).items():  # whole names: experts is not the end of shared_experts
        described = re.sub(rf"(?<![A-Za-z0-9_]){re.escape(field)}:", lambda _, option=option: f"{option}:", described)
    return described
