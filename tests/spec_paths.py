"""Test helpers that edit or read a ``ModelSpec`` by path, or by the flat (schema 1) names the tests were written in."""

from collections.abc import Mapping
from typing import Any

from mha_cli.core.model_migration import FLAT_FIELDS
from mha_cli.core.schemas import ModelSpec


def copy_with(model: ModelSpec, changes: Mapping[str, Any]) -> ModelSpec:
    """``model`` with ``changes`` set at their paths (``"block.moe"``, ``"attention.rope"``), copied part by part
    and not validated again: for a change that derives nothing (a flag, a bias, a nested block replaced whole)."""
    by_part: dict[str, dict[str, Any]] = {}
    top: dict[str, Any] = {}
    for path, value in changes.items():
        part, _, name = path.partition(".")
        if name:
            by_part.setdefault(part, {})[name] = value
        else:
            top[part] = value
    for part, fields in by_part.items():
        inner = getattr(model, part)
        if any("." in name for name in fields):
            raise KeyError(f"{part}: copy_with sets a part's own fields; replace a nested block whole")
        top[part] = inner.model_copy(update=fields)
    return model.model_copy(update=top)


def flat_path(flat: str) -> str:
    """The dotted path of an old flat field (``tied_embeddings`` -> ``embeddings.tied``); a field that stayed at the
    top level (``d_model``) is its own path."""
    if flat in FLAT_FIELDS:
        part, name = FLAT_FIELDS[flat]
        return f"{part}.{name}"
    return flat


def read_path(model: Any, path: str) -> Any:
    """The value at a dotted ``path`` of a spec (``"attention.n_heads"``)."""
    for name in path.split("."):
        model = getattr(model, name)
    return model
