"""``mha schema``: the JSON Schema of the config file, for editors and CI validation."""

from __future__ import annotations

import json as jsonlib
from typing import TYPE_CHECKING

from mha_cli.cli.options import JsonOpt
from mha_cli.cli.output import write_stdout
from mha_cli.core.schema_export import config_json_schema

if TYPE_CHECKING:
    from mha_cli.cli.app import CommandRegistry


def schema(json: JsonOpt = False) -> None:
    """Print the JSON Schema of the config file (`mha recommend --out` writes, `mha verify` reads).

    The output is JSON either way; ``--json`` is accepted so every command takes it.
    """
    write_stdout(jsonlib.dumps(config_json_schema(), indent=2) + "\n")


def register(registry: CommandRegistry) -> None:
    registry.add("schema", schema)
