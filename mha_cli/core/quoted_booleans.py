"""A config.json boolean written as a string (``"use_sliding_window": "false"``), refused in one line.

Readers disagree on it: transformers' config classes keep the string, and Python reads any non-empty string as true
(Qwen2's ``if self.use_sliding_window`` turns a ``"false"`` window on), while compressed-tensors' pydantic models read
``"false"`` as false. So a figure from such a file would depend on which reader one follows: a sliding window, an
attention bias, a zero point per group (trial 299 #1). Where it sits in the file is named, with the fix.
"""

from typing import Any

from mha_cli.core.errors import BadInputError

QUOTED = ("true", "false", "yes", "no", "on", "off")
"""String values read as a quoted boolean, compared without case (``"False"`` too): pydantic's spellings of one that
are words (not ``"0"`` or ``"t"``, which a string field may well hold)."""
FREE_TEXT = frozenset({"id2label", "label2id"})
"""Objects whose strings are names, not settings: a classifier's labels may be "true" and "false" (review 301 #2)."""


def refuse_quoted_booleans(config: dict[str, Any], origin: str) -> None:
    """Raise ``BadInputError`` naming the first field of ``config`` (nested objects and lists included, as
    ``quantization_config.config_groups.group_0.weights.symmetric``) whose value is a ``QUOTED`` word (``"false"``),
    outside ``FREE_TEXT``."""
    found = _first_quoted(config, "")
    if found is None:
        return
    where, value = found
    meant = "true" if value.strip().lower() in ("true", "yes", "on") else "false"
    raise BadInputError(
        f"{origin}: {where} is the string {value!r}, not a boolean: write {meant} without quotes (transformers reads"
        ' any non-empty string as true, compressed-tensors reads "false" as false: no figure can follow both)'
    )


def _first_quoted(node: Any, where: str) -> tuple[str, str] | None:
    """(the dotted path, the string) of the first quoted boolean under ``node``, depth first; None: none."""
    if isinstance(node, str):
        return (where, node) if node.strip().lower() in QUOTED else None
    children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, child in children:
        if key in FREE_TEXT:
            continue
        found = _first_quoted(child, f"{where}.{key}" if where else str(key))
        if found is not None:
            return found
    return None
