"""Which release of vLLM and SGLang registers each architecture mha follows: ``data/engine_architectures.json``,
written by ``benchmarks/engine_architectures.py`` from every release's wheel (``core.engine.architectures_served``
reads what it means). A leaf: release checks that ``core.engine.generations`` runs read it too. Pure Python.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources

from mha_cli.core.engine.release_numbers import release_key


@lru_cache(maxsize=1)
def engines_table() -> dict[str, dict]:
    """Per engine: ``releases_read`` (oldest first) and, per architecture followed, its first release and the later
    releases read that lack it."""
    text = resources.files("mha_cli").joinpath("data/engine_architectures.json").read_text(encoding="utf-8")
    return json.loads(text)["engines"]


def releases_read(engine: str) -> list[str]:
    """Every release of ``engine`` (vLLM, SGLang) whose model registry was read, oldest first; empty for another."""
    return list(engines_table().get(engine, {}).get("releases_read", []))


def first_registered(engine: str, names: tuple[str, ...]) -> str | None:
    """The oldest release read of ``engine`` whose registry has one of the architectures ``names`` (their rows'
    ``first``); None where none does, or the table does not follow them."""
    rows = engines_table().get(engine, {}).get("architectures", {})
    firsts = [row["first"] for name in names if (row := rows.get(name)) and row.get("first")]
    return min(firsts, key=release_key, default=None)
