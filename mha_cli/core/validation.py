"""Turn a pydantic ``ValidationError`` into one line a person can act on."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError


def _phrase(error: Any) -> str:
    """What is wrong with one field, in plain words, quoting the value that was given."""
    kind, ctx, given = error["type"], error.get("ctx") or {}, error.get("input")
    if kind == "extra_forbidden":
        return "unknown field (check its spelling; `mha schema` lists the fields)"
    if kind == "missing":
        return "missing (required)"
    if kind == "greater_than":
        return f"must be greater than {ctx['gt']} (got {given!r})"
    if kind == "greater_than_equal":
        return f"must be at least {ctx['ge']} (got {given!r})"
    if kind == "less_than_equal":
        return f"must be at most {ctx['le']:,} (got {given!r})"
    if kind == "less_than":
        return f"must be less than {ctx['lt']:,} (got {given!r})"
    if kind == "literal_error":
        return f"must be one of {ctx['expected']} (got {given!r})"
    if kind in ("int_parsing", "int_from_float", "int_type"):
        return f"must be a whole number (got {given!r})"
    return str(error["msg"]).removeprefix("Value error, ")


def describe_validation_error(exc: ValidationError, option_names: Mapping[str, str] | None = None) -> str:
    """``"model.n_heads: n_heads (32) must be divisible by n_kv_heads (5)"``, one item per field, '; '-joined.

    ``option_names`` renames fields to the command-line options that set them (``{"seq_len": "--seq"}``), so the
    line names what the person typed: ``"--seq: must be greater than 0 (got 0)"``.
    """
    parts = []
    for error in exc.errors(include_url=False):
        path = ".".join(str(p) for p in error["loc"])
        message = _phrase(error)
        parts.append(f"{path}: {message}" if path else message)
    described = "; ".join(parts)
    for field, option in (option_names or {}).items():
        described = described.replace(f"{field}:", f"{option}:")
    return described
