"""The config file's JSON Schema, with each field's docstring as its description.

Field docstrings are read from the source here, on demand, rather than by pydantic at class
creation (``use_attribute_docstrings``), which would cost every command ~40 ms at import.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import textwrap
from typing import Any

from pydantic import BaseModel

from mha_cli.core import schemas
from mha_cli.core.schemas import MhaConfig

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def attribute_docstrings(cls: type) -> dict[str, str]:
    """``{field: docstring}`` for each annotated class attribute followed by a string literal."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0].body  # type: ignore[attr-defined]
    docs: dict[str, str] = {}
    for statement, following in itertools.pairwise(body):
        is_field = isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)
        is_doc = isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
        if is_field and is_doc and isinstance(following.value.value, str):  # type: ignore[union-attr]
            docs[statement.target.id] = inspect.cleandoc(following.value.value)  # type: ignore[union-attr]
    return docs


def _derived_fields_optional(schema: dict[str, Any]) -> None:
    """The attention fields a spec derives when they are left out (``schemas.resolve_attention``) are optional in
    a file, as ``mha`` reads it; and the schema describes the layout ``mha`` writes, version 2 (a version-1 file,
    flat, is read by the migration, not described here)."""
    attention = schema["$defs"]["AttentionSpec"]
    derived = {"n_kv_heads", "head_dim", "variant"}
    attention["required"] = [name for name in attention.get("required", []) if name not in derived]
    schema["properties"]["schema_version"] = {
        "const": schemas.CONFIG_SCHEMA_VERSION,
        "default": schemas.CONFIG_SCHEMA_VERSION,
        "description": "The layout this schema describes: the model in parts. mha also reads version 1 (every model"
        " field at the top level), which this schema does not describe.",
    }


def config_json_schema() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of ``MhaConfig`` with field descriptions."""
    schema = MhaConfig.model_json_schema()
    schema["$schema"] = JSON_SCHEMA_DIALECT
    schema["title"] = "mha config file"
    _derived_fields_optional(schema)
    for name, node in [("MhaConfig", schema), *schema.get("$defs", {}).items()]:
        cls = getattr(schemas, name, None)  # the models core.schemas defines; others (SchemeRule) keep pydantic's
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)) or "properties" not in node:
            continue
        for field, doc in attribute_docstrings(cls).items():
            if field in node["properties"]:
                node["properties"][field].setdefault("description", doc)
    return schema
