"""Turn a pydantic ``ValidationError`` into one line a person can act on."""

from __future__ import annotations

from pydantic import ValidationError


def describe_validation_error(exc: ValidationError) -> str:
    """``"model.n_heads: n_heads (32) must be divisible by n_kv_heads (5)"``, one item per field, '; '-joined."""
    parts = []
    for error in exc.errors(include_url=False):
        path = ".".join(str(p) for p in error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = "unknown field (check its spelling; `mha schema` lists the fields)"
        elif error["type"] == "missing":
            message = "missing (required)"
        parts.append(f"{path}: {message}" if path else message)
    return "; ".join(parts)
