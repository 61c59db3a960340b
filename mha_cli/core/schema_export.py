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


def config_json_schema() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of ``MhaConfig`` with field descriptions."""
    schema = MhaConfig.model_json_schema()
    schema["$schema"] = JSON_SCHEMA_DIALECT
    schema["title"] = "mha config file"
    for name, node in [("MhaConfig", schema), *schema.get("$defs", {}).items()]:
        cls = getattr(schemas, name, None)  # every model of the file is defined in core.schemas
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)) or "properties" not in node:
            continue
        for field, doc in attribute_docstrings(cls).items():
            if field in node["properties"]:
                node["properties"][field].setdefault("description", doc)
    return schema
