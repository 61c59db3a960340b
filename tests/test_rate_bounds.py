"""``--rate`` is bounded on both sides, and the refusal says so. Before (newuser4), ``mha plan ... --rate 1e9``
answered "--rate 1e+09: give requests per second greater than 0", a bound the value already met."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from mha_cli.cli.app import app

ONE = ["plan", "llama-3-8b", "--target", "h100", "--tp", "1", "--closed-form"]
DISAGGREGATED = ["plan", "llama-3-8b", "--target", "2xh100", "--disaggregated", "--closed-form"]


@pytest.mark.parametrize("base", [ONE, DISAGGREGATED], ids=["one-deployment", "disaggregated"])
@pytest.mark.parametrize(("rate", "shown"), [("1e9", "1e+09"), ("0", "0"), ("inf", "inf")])
def test_a_rate_out_of_bounds_names_both_bounds(base, rate, shown):
    result = CliRunner().invoke(app, [*base, "--rate", rate])
    assert result.exit_code == 2, result.output
    assert f"--rate {shown}: give requests per second above 0 and below 1e+09" in result.output


def test_a_rate_inside_the_bounds_is_priced():
    result = CliRunner().invoke(app, [*ONE, "--rate", "5"])
    assert result.exit_code == 0, result.output
