"""The base class of the project's pydantic models.

Schemas are built on first use (``defer_build``), not at import: a command pays only for the
models it touches, which keeps ``mha kv`` close to the cost of importing its libraries.

The modules that define models, and the command modules typer reads signatures from, do not use
``from __future__ import annotations``: with it every field's annotation is a string that pydantic (and
typer, for a command's parameters) compiles and evaluates at class creation, about 0.1 ms a field, some
10 ms of ``mha kv``'s start-up; without it Python evaluates them from the cached bytecode. A name that is
defined later, or imported only under ``TYPE_CHECKING``, is quoted where it is used.

Small immutable records on the start-up path are ``typing.NamedTuple`` classes rather than frozen dataclasses:
a frozen dataclass generates and compiles six methods when its class is created, about 1.5 ms a class at every
start, a NamedTuple about a fifth of that. Copies with changes are ``record._replace(field=...)``; such a record
is also a tuple (it unpacks, and equals a tuple of the same values), and a list field gets no default.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class Record(BaseModel):
    """A pydantic model whose validator is built when first needed."""

    model_config = ConfigDict(defer_build=True)


def empty_list() -> list[Any]:
    """A field's ``default_factory`` for ``[]``. Not the builtin ``list``: pydantic reads the factory's signature,
    and a builtin's is parsed from its text with ``tokenize`` (importing it, several ms of a start-up)."""
    return []


def empty_dict() -> dict[Any, Any]:
    """A field's ``default_factory`` for ``{}`` (see ``empty_list``)."""
    return {}
