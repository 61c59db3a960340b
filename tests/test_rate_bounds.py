"""``--rate`` is bounded on both sides, and the refusal says so. Before (newuser4), ``mha plan ... --rate 1e9``
answered "--rate 1e+09: give requests per second greater than 0", a bound the value already met."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from mha_cli.cli.app import app

ONE = ["plan", "llama-3-8b", "--target", "h100", "--tp", "1", "--closed-form"]
DISAGGREGATED = ["plan", "llama-3-8b", "--target", "2xh100", "--disaggregated", "--closed-form"]


@pytest.mark.parametrize("base", [ONE, DISAGGREGATED], ids=["one-deployment", "disaggregated"])
@pytest.mark.parametrize(("rate", "shown"), [("1e9", "1e+09"), ("0", "0"), ("inf", "inf"), ("1e-9", "1e-09")])
def test_a_rate_out_of_bounds_names_both_bounds(base, rate, shown):
    result = CliRunner().invoke(app, [*base, "--rate", rate])
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert f"--rate {shown}: give requests per second from 0.001 (one every 1,000 s) to below 1e+09" in said


def test_a_rate_inside_the_bounds_is_priced():
    result = CliRunner().invoke(app, [*ONE, "--rate", "5"])
    assert result.exit_code == 0, result.output


def test_a_rate_past_what_it_serves_shows_ttft_and_end_to_end_growing(cli):
    """``--rate 100`` on one H100 (21.4 req/s at most) printed a TTFT of 75.9 ms beside "requests pile up": the figure
    is a request's once admitted, its wait grows (found by newuser trial 236). JSON keeps the admitted figures."""
    over = cli.run(*ONE, "--rate", "100")
    rows = {line.split("  ")[1].strip(): line for line in over.output.splitlines() if line.startswith("  ")}
    assert "grows" in rows["TTFT"] and "grows" in rows["end to end"] and "grows" not in rows["ITL (per output token)"]
    data = cli.json(*ONE, "--rate", "100")
    assert data["saturated"] and f"once admitted: {data['ttft_ms']:,.1f} ms" in " ".join(over.output.split())
    under = cli.run(*ONE, "--rate", "5")
    assert "grows" not in under.output
