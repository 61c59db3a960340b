"""Options that only the simulated serving loop reads are refused where no loop runs, in one line. Before
(newuser4), ``mha plan ... --closed-form --lengths-file lens.json --slo-percentile 50 --ttft-ms 100`` printed the
closed form's means as if the lengths had been replayed and the targets read at p50, and ``--burstiness 0.2`` without
``--rate`` ran the closed loop unchanged; none of them was even checked (``--closed-form --burstiness -1``: exit 0)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from mha_cli.cli.app import app

ONE = ["plan", "llama-3-8b", "--target", "h100", "--tp", "1", "--isl", "512", "--osl", "64"]


@pytest.mark.parametrize(
    "option",
    [["--num-prompts", "50"], ["--lengths-file", "{lengths}"], ["--random-range-ratio", "0.5"],
     ["--burstiness", "-1"], ["--seed", "3"], ["--slo-percentile", "50"],
     ["--seed", "0"], ["--burstiness", "1"], ["--slo-percentile", "99"], ["--random-range-ratio", "0"]],
    ids=" ".join,
)  # fmt: skip
def test_a_loop_option_with_closed_form_is_refused(tmp_path, option):
    """The last four are the defaults, named: they passed (trial 257), as if the loop had read them."""
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
    named = CliRunner().invoke(app, [*ONE, "--concurrency", "4", "--num-prompts", "8", "--slo-percentile", "99"])
    assert named.exit_code == 2 and "--slo-percentile 99 says where" in named.output  # the default, named (review 263)
    assert CliRunner().invoke(app, [*ONE, "--concurrency", "4", "--num-prompts", "8", "--slo-percentile", "50",
                                    "--itl-ms", "100"]).exit_code == 0  # fmt: skip


def test_requests_past_the_planned_context_are_named_with_the_flag_that_admits_them(tmp_path):
    """A lengths file of 8,000 + 500 tokens, or --random-range-ratio 0.5 on 512 + 64, draws requests past --isl +
    --osl, the context the engine's max_model_len is sized for: vLLM refuses them. It said nothing (found by newuser
    trial 232); a note names the longest and the flags, a value the option takes (trial 372 #1: it wrote 8,500)."""
    lengths = tmp_path / "lengths.txt"
    lengths.write_text("8000 500\n")
    replayed = CliRunner().invoke(app, [*ONE, "--concurrency", "2", "--lengths-file", str(lengths), "--json"])
    notes = json.loads(replayed.stdout)["notes"]
    assert any(note.startswith("requests of the lengths file reach 8,500 tokens, past --isl + --osl (576)")
               and "give --max-model-len 8500" in note for note in notes)  # fmt: skip
    admitted = CliRunner().invoke(  # as the note says: the engine started at 8,500 admits them (trial 297 #2)
        app, [*ONE, "--concurrency", "2", "--lengths-file", str(lengths), "--max-model-len", "8500", "--json"]
    )
    found = json.loads(admitted.stdout)
    assert not any("reach" in note for note in found["notes"]) and "--max-model-len 8500" in found["launch"]["vllm"]
    drawn = CliRunner().invoke(app, [*ONE, "--concurrency", "2", "--random-range-ratio", "0.5", "--json"])
    # vLLM's random dataset draws up to ceil(512 x 1.5) + ceil(64 x 1.5) = 768 + 96 tokens
    assert any(
        "--random-range-ratio 0.5's draws can reach 864 tokens" in note for note in json.loads(drawn.stdout)["notes"]
    )
    plain = CliRunner().invoke(app, [*ONE, "--concurrency", "2", "--json"])
    assert not any("reach" in note for note in json.loads(plain.stdout)["notes"])


def test_a_range_ratio_beside_a_lengths_file_is_refused(tmp_path):
    """The file's lengths are replayed as they are: --random-range-ratio beside it changed nothing, with exit 0
    (found by newuser trial 239), as --burstiness without --rate would (refused above)."""
    lengths = tmp_path / "lengths.txt"
    lengths.write_text("1000 100\n2000 200\n")
    result = CliRunner().invoke(app, [*ONE, "--lengths-file", str(lengths), "--random-range-ratio", "0.5"])
    assert result.exit_code == 2
    assert "--random-range-ratio 0.5 draws lengths around --isl and --osl; --lengths-file replays its own" in (
        result.output
    )
    assert CliRunner().invoke(app, [*ONE, "--lengths-file", str(lengths), "--json"]).exit_code == 0


def test_a_lengths_file_longer_than_the_run_says_how_much_was_replayed(tmp_path):
    """200 short pairs then 2,000 long ones: the run replayed the short ones alone, silently (found by newuser trial
    239). It says so; a file the run covers gets no such note."""
    lengths = tmp_path / "lengths.txt"
    lengths.write_text("100 50\n" * 200 + "4000 500\n" * 2000)
    data = json.loads(
        CliRunner().invoke(app, [*ONE, "--concurrency", "4", "--lengths-file", str(lengths), "--json"]).stdout
    )
    replayed = data["simulated"]["requests"]
    assert replayed < 2200
    assert f"the lengths file holds 2,200 pairs and the busiest replica replayed its first {replayed:,}" in " ".join(
        data["notes"]
    )
    short = tmp_path / "short.txt"
    short.write_text("100 50\n" * 3)
    covered = json.loads(
        CliRunner().invoke(app, [*ONE, "--concurrency", "4", "--lengths-file", str(short), "--json"]).stdout
    )
    assert not any("lengths file holds" in note for note in covered["notes"])


def test_a_shared_prefix_longer_than_a_replayed_prompt_is_refused(tmp_path):
    """A 900-token prefix beside a lengths file with a 500-token prompt ran (found by newuser trial 239), where one
    past --isl is refused: the prefix is part of every prompt."""
    lengths = tmp_path / "lengths.txt"
    lengths.write_text("1000 100\n2000 200\n500 50\n")
    args = [*ONE, "--concurrency", "4", "--lengths-file", str(lengths)]  # --isl 512: within it, past the file's 500
    refused = CliRunner().invoke(app, [*args, "--shared-prefix", "505"])
    assert refused.exit_code == 2
    assert "--shared-prefix 505: the lengths file has a prompt of 500 tokens" in " ".join(refused.output.split())
    assert CliRunner().invoke(app, [*args, "--shared-prefix", "500", "--json"]).exit_code == 0


def test_the_header_of_a_replayed_run_says_the_files_lengths_beside_the_closed_forms(tmp_path):
    """The header read "512 in / 64 out" over a file of 2,000- and 3,000-token prompts (trial 302 #8): it names the
    file's pairs and their means, (2,000 + 3,000 + 100) / 3 = 1,700 in and (100 + 50 + 400) / 3 = 183 out, beside
    the --isl and --osl the closed form prices; a run without a file keeps its lengths."""
    lengths = tmp_path / "lens.txt"
    lengths.write_text("2000 100\n3000 50\n100 400\n")
    shown = CliRunner().invoke(
        app, [*ONE, "--concurrency", "4", "--lengths-file", str(lengths)], env={"COLUMNS": "300"}
    )
    assert shown.exit_code == 0, shown.output
    header = shown.output.splitlines()[0]
    assert (
        "requests of " in header
        and "lens.txt (its 3 pairs average 1,700 in / 183 out; the closed form at 512 in / 64 out)" in header
    )
    plain = CliRunner().invoke(app, [*ONE, "--concurrency", "4"], env={"COLUMNS": "300"})
    assert "; 512 in / 64 out, 4 user(s)" in plain.output.splitlines()[0]
    # the JSON says it too (it had only the closed form's isl and osl): the file, its pairs and their means by hand
    replayed = json.loads(CliRunner().invoke(app, [*ONE, "--concurrency", "4", "--lengths-file", str(lengths),
                                                   "--json"]).stdout)  # fmt: skip
    assert replayed["lengths_file"] == {"path": str(lengths), "pairs": 3, "mean_isl": 1700.0, "mean_osl": 550 / 3}
    assert (replayed["isl"], replayed["osl"]) == (512, 64)
    assert "lengths_file" not in json.loads(CliRunner().invoke(app, [*ONE, "--concurrency", "4", "--json"]).stdout)
