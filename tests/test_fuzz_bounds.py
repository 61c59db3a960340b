"""Bounds before work: long target names, device counts and quantities are refused at once, quoting a prefix."""

from __future__ import annotations

import time

import pytest

from mha_cli.core.errors import BadInputError, one_line, shown
from mha_cli.core.targets import MAX_DEVICES, resolve_target


@pytest.mark.parametrize(
    "spec",
    ["1xa" + " " * 50_000 + "b", "a" * 50_000, "9" * 4301 + "xa100", "8x" + "h" * 100],
    ids=["spaces", "letters", "4301-digit-count", "long-name"],
)
def test_long_target_specs_are_refused_at_once(spec):
    start = time.perf_counter()
    with pytest.raises(BadInputError, match="too long") as info:
        resolve_target(spec)
    assert time.perf_counter() - start < 2.0  # was 12 s (spaces) and a hang through recommend --target
    assert len(str(info.value)) < 200


@pytest.mark.parametrize(("spec", "count"), [("4096xa100", 4096), ("0008xh100", 8), ("2*4090", 2)])
def test_device_counts_within_bounds(spec, count):
    assert resolve_target(spec).n_devices == count


@pytest.mark.parametrize("spec", ["4097xa100", "0xa100", "99999999999999999999xa100"])
def test_device_counts_out_of_bounds_are_bad_input(spec):
    with pytest.raises(BadInputError, match=f"between 1 and {MAX_DEVICES:,}"):
        resolve_target(spec)


def test_shown_quotes_a_short_prefix_on_one_line():
    assert shown("a\nb") == "'a\\nb'"
    assert shown("x" * 20_000) == repr("x" * 40) + "... (20,000 characters)"
    assert shown(10**5000) == "a 16,610-bit integer" and shown(12) == "12"  # str() of 10**5000 would raise
    assert one_line("a\nb" + "c" * 300, 10) == "a\\nbccccccc... (303 characters)"


@pytest.mark.parametrize(
    "args",
    [
        ["kv", "llama-3-8b", "--seq", "1" * 20_000 + "!"],
        ["recommend", "--params", "1" * 20_000 + "!"],
        ["recommend", "--params", "7B", "--target", "1xa" + " " * 50_000 + "b"],
        ["targets", "1xa" + " " * 50_000 + "b"],
        ["kv", "x" * 20_000],
    ],
    ids=["kv-seq", "recommend-params", "recommend-target", "targets", "kv-source"],
)
def test_cli_refuses_huge_arguments_in_one_short_line(cli, args):
    start = time.perf_counter()
    result = cli.run(*args)
    assert time.perf_counter() - start < 2
    assert result.exit_code == 2, result.output
    assert result.stdout == "" and result.stderr.count("\n") == 1 and len(result.stderr) < 300
