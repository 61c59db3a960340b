"""A model spec changed in a few fields and validated again, so what derives from them is derived anew."""

from collections.abc import Iterable, Mapping
from typing import Any

from mha_cli.core.schemas import ModelSpec


def with_fields(model: ModelSpec, changes: Mapping[str, Any], derive: Iterable[str] = ()) -> ModelSpec:
    """``model`` validated again with ``changes`` set, each key a field's path (``"attention.n_heads"``,
    ``"n_layers"``), and the ``derive`` paths left out so that validation derives them again
    (``"attention.variant"`` after the head counts change)."""
    fields = model.model_dump()
    for path in derive:
        *parts, name = path.split(".")
        _part(fields, parts).pop(name, None)
    for path, value in changes.items():
        *parts, name = path.split(".")
        _part(fields, parts)[name] = value
    return ModelSpec.model_validate(fields)


def _part(fields: dict[str, Any], parts: list[str]) -> dict[str, Any]:
    """The dict at ``parts`` inside ``fields`` (a dumped spec): ``["attention", "mla"]`` is its MLA block."""
    for part in parts:
        inner = fields.get(part)
        if not isinstance(inner, dict):
            raise KeyError(f"{'.'.join(parts)} is no part of this spec (at {part})")
        fields = inner
    return fields
