"""The byte units are defined once (``core.byte_units``), in a leaf, and every other module imports them."""

from __future__ import annotations

import ast
from pathlib import Path

from mha_cli.core import byte_units

PACKAGE = Path(__file__).parent.parent / "mha_cli"


def test_units_by_hand():
    assert byte_units.GIB == 1024 * 1024 * 1024 == 1_073_741_824
    assert byte_units.MIB == 1024 * 1024 == 1_048_576


def test_the_units_module_is_a_leaf():
    tree = ast.parse((PACKAGE / "core" / "byte_units.py").read_text(encoding="utf-8"))
    assert not [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]


def test_no_other_module_defines_them():
    defined = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "byte_units.py":
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            names = [n for t in targets if t is not None for n in ast.walk(t) if isinstance(n, ast.Name)]  # a, B = ...
            defined += [f"{path.name}: {n.id}" for n in names if n.id in ("GIB", "MIB")]
    assert defined == []
