"""The base class of the project's pydantic models.

Schemas are built on first use (``defer_build``), not at import: a command pays only for the
models it touches, which keeps ``mha kv`` close to the cost of importing its libraries.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Record(BaseModel):
    """A pydantic model whose validator is built when first needed."""

    model_config = ConfigDict(defer_build=True)
