"""Shared fixtures: paths to the reference configs, a CLI runner that parses --json output, and the serving-rows
benchmark (``benchmarks/fit_priors.py``) with its rows priced."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

if (workers := int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))) > 1:
    # pytest-xdist's workers (addopts: -n auto) share the cores: each torch gets its share of threads, set before
    # torch is first imported, rather than every worker running a thread per core (the family sweep took 153 s beside
    # another worker, 67 s alone)
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // workers)))
from typer.testing import CliRunner

from mha_cli.cli.app import app

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"
HF_FIXTURES = FIXTURES / "hf_configs"


def reference_hf_config(name: str) -> Path:
    """A published config.json from our fixtures (see tests/fixtures/hf_configs/SOURCES.md)."""
    return HF_FIXTURES / f"{name}.json"


class Cli:
    """Runs ``mha`` in-process; ``json`` parses stdout of a ``--json`` run."""

    def __init__(self) -> None:
        self.runner = CliRunner()

    def run(self, *args: str):
        return self.runner.invoke(app, list(args))

    def json(self, *args: str) -> dict:
        result = self.run(*args, "--json")
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)


@pytest.fixture(autouse=True)
def fresh_consoles():
    """Each test's consoles read its own environment: rich fixes a console's width (``COLUMNS``) when it is made,
    and the CLI makes one per process, so a console kept from an earlier test would wrap at that test's width."""
    from mha_cli.cli.output import stderr_console, stdout_console

    stdout_console.cache_clear()
    stderr_console.cache_clear()


@pytest.fixture
def cli() -> Cli:
    return Cli()


@pytest.fixture
def one_stage_search(monkeypatch):
    """``mha plan``'s search over one-stage layouts only (pp 1): for tests of what a pick without pipeline stages
    launches (DP attention), where a pipeline layout of the same GPUs would now be the pick."""
    from mha_cli.core.cost import search

    every = search.layouts
    monkeypatch.setattr(search, "layouts", lambda *args: [(tp, pp) for tp, pp in every(*args) if pp == 1])


@pytest.fixture(scope="module")
def fit_priors():
    """``benchmarks/fit_priors.py`` loaded as a module (``tests.benchmark_modules``)."""
    from tests.benchmark_modules import load_benchmark

    return load_benchmark("fit_priors")


@pytest.fixture
def fitted_names(fit_priors, monkeypatch):
    """``fitted_names(rows)``: (the names ``fit_priors.fit_generation`` fits over ``rows``, the start it fits from),
    its descent, client ratios and prefill launch fit replaced, so only the choice of names is run."""

    def names_over(rows: list) -> tuple[list[str], dict[str, float]]:
        seen: dict = {}

        def descent(rows, start, *, names, objective):
            seen["names"], seen["start"] = list(names), dict(start)
            return start

        monkeypatch.setattr(fit_priors, "fit", descent)
        monkeypatch.setattr(fit_priors, "client_ratios", lambda rows, constants: {})
        monkeypatch.setattr(fit_priors, "fit_prefill_launch", lambda rows, constants: constants)
        fit_priors.fit_generation(rows, dict(fit_priors.START))
        return seen["names"], seen["start"]

    return names_over


@pytest.fixture(scope="module")
def rows(fit_priors):
    """Every usable 2025 serving row, priced by its generation (``fit_priors.load_generation_rows``)."""
    return fit_priors.load_generation_rows()
