"""Options that only the simulated serving loop reads are refused where no loop runs, in one line. Before
(newuser4), ``mha plan ... --closed-form --lengths-file lens.json --slo-percentile 50 --ttft-ms 100`` printed the
closed form's means as if the lengths had been replayed and the targets read at p50, and ``--burstiness 0.2`` without
``--rate`` ran the closed loop unchanged; none of them was even checked (``--closed-form --burstiness -1``: exit 0)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from mha_cli.cli.app import app

ONE = ["plan", "llama-3-8b", "--target", "h100", "--tp", "1", "--isl", "512", "--osl", "64"]


@pytest.mark.parametrize(
    "option",
    [["--num-prompts", "50"], ["--lengths-file", "{lengths}"], ["--random-range-ratio", "0.5"],
     ["--burstiness", "-1"], ["--seed", "3"], ["--slo-percentile", "50"]],
    ids=lambda option: option[0],
)  # fmt: skip
def test_a_loop_option_with_closed_form_is_refused(tmp_path, option):
    lengths = tmp_path / "lengths.txt"
    lengths.write_text("100 50\n")
    args = [*ONE, "--closed-form", "--rate", "2", *(word.format(lengths=lengths) for word in option)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert f"--closed-form skips the simulated serving loop, which alone reads {option[0]}" in result.output


def test_burstiness_without_rate_is_refused():
    result = CliRunner().invoke(app, [*ONE, "--concurrency", "4", "--num-prompts", "8", "--burstiness", "0.2"])
    assert result.exit_code == 2, result.output
    assert "--burstiness shapes the gaps between --rate's arrivals: add --rate" in result.output


def test_the_loop_options_still_run_with_the_loop():
    args = [*ONE, "--rate", "2", "--num-prompts", "8", "--burstiness", "0.5", "--seed", "1", "--slo-percentile", "50",
            "--ttft-ms", "1000"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert CliRunner().invoke(app, [*ONE, "--closed-form", "--rate", "2"]).exit_code == 0


def test_a_percentile_without_a_target_to_read_there_is_refused():
    """--slo-percentile only says where --ttft-ms and --itl-ms are read: without either it changed nothing, exit 0
    (found by newuser trial 232), as --burstiness without --rate is refused."""
    result = CliRunner().invoke(app, [*ONE, "--concurrency", "4", "--num-prompts", "8", "--slo-percentile", "50"])
    assert result.exit_code == 2, result.output
    assert "--slo-percentile 50 says where --ttft-ms and --itl-ms are read: add one, or leave it out" in result.output
    assert CliRunner().invoke(app, [*ONE, "--concurrency", "4", "--num-prompts", "8", "--slo-percentile", "50",
                                    "--itl-ms", "100"]).exit_code == 0  # fmt: skip
