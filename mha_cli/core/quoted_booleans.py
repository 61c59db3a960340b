"""A config.json boolean written as a string (``"use_sliding_window": "false"``), refused in one line.

Readers disagree on it: transformers' config classes keep the string, and Python reads any non-empty string as true
(Qwen2's ``if self.use_sliding_window`` turns a ``"false"`` window on), while compressed-tensors' pydantic models read
``"false"`` as false. So a figure from such a file would depend on which reader one follows: a sliding window, an
attention bias, a zero point per group (trial 299 #1). Where it sits in the file is named, with the fix.
"""

from typing import Any

from mha_cli.core.errors import BadInputError

QUOTED = ("true", "false")
"""String values read as a quoted boolean, compared without case (``"False"`` too)."""


def refuse_quoted_booleans(config: dict[str, Any], origin: str) -> None:
    """Raise ``BadInputError`` naming the first field of ``config`` (nested objects and lists included, as
    ``quantization_config.config_groups.group_0.weights.symmetric``) whose value is ``"true"`` or ``"false"``."""
    found = _first_quoted(config, "")
    if found is None:
        return
    where, value = found
    raise BadInputError(
        f"{origin}: {where} is the string {value!r}, not a boolean: write {value.lower()} without quotes (transformers"
        ' reads any non-empty string as true, compressed-tensors reads "false" as false: no figure can follow both)'
    )


def _first_quoted(node: Any, where: str) -> tuple[str, str] | None:
    """(the dotted path, the string) of the first quoted boolean under ``node``, depth first; None: none."""
    if isinstance(node, str):
        return (where, node) if node.strip().lower() in QUOTED else None
    children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, child in children:
        found = _first_quoted(child, f"{where}.{key}" if where else str(key))
        if found is not None:
            return found
    return None
