"""Which release of vLLM and SGLang registers each architecture mha follows: ``data/engine_architectures.json``,
written by ``benchmarks/engine_architectures.py`` from every release's wheel (``core.engine.architectures_served``
reads what it means). A leaf: release checks that ``core.engine.generations`` runs read it too. Pure Python.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources


@lru_cache(maxsize=1)
def engines_table() -> dict[str, dict]:
    """Per engine: ``releases_read`` (oldest first) and, per architecture followed, its first release and the later
    releases read that lack it."""
    text = resources.files("mha_cli").joinpath("data/engine_architectures.json").read_text(encoding="utf-8")
    return json.loads(text)["engines"]


def releases_read(engine: str) -> list[str]:
    """Every release of ``engine`` (vLLM, SGLang) whose model registry was read, oldest first; empty for another."""
    return list(engines_table().get(engine, {}).get("releases_read", []))
