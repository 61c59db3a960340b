"""The guide's three rings, read from the source: imports run one way (cli -> core, torch ring -> core; the torch
ring never renders), and no two modules import each other, even through an import inside a function.

The import graph is built from every ``import`` statement of every module (``ast``), so a lazy import counts like
a top-level one: a cycle that only shows at run time is a cycle."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).parent.parent / "mha_cli"
TORCH_RING = ("nn", "verify", "parallel", "hook", "experiments", "calibrate")


def _module_name(path: Path) -> str:
    name = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return name.removesuffix(".__init__")


def import_graph() -> dict[str, set[str]]:
    """Every mha_cli module -> the mha_cli modules (and ``torch``) it imports anywhere in its body."""
    modules = {_module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                continue
            for target in targets:
                if target in modules and target != name:
                    graph[name].add(target)
                elif target.split(".")[0] == "torch":
                    graph[name].add("torch")
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_no_two_modules_import_each_other():
    assert cycles(import_graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    """Control: the two cycles issue 25 named, rebuilt as a graph, are found."""
    graph = {"verify_cmd": {"verify_tp"}, "verify_tp": {"run", "verify_cmd"}, "run": {"worker"},
             "worker": {"verify_tp"}, "budget": {"width"}, "width": {"budget"}, "leaf": set()}  # fmt: skip
    assert sorted(cycles(graph)) == [["budget", "width"], ["run", "verify_cmd", "verify_tp", "worker"]]


def test_imports_run_one_way():
    """core imports neither torch nor another ring; the torch ring never imports the CLI (workers return results,
    the CLI renders them)."""
    graph = import_graph()
    for name, targets in graph.items():
        ring = name.split(".")[1] if "." in name else ""
        if ring == "core":
            outward = {t for t in targets if t == "torch" or t.split(".")[1] in ("cli", *TORCH_RING)}
            assert not outward, (name, outward)
        if ring in TORCH_RING:
            assert not {t for t in targets if t.startswith("mha_cli.cli")}, name
