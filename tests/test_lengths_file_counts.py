"""``--lengths-file``: a token count is a whole number, as everywhere in mha (docs/input-limits.md: booleans, strings
and floats are not counts). Before (newuser4), a JSON ``true`` ran as 1 token, ``50.9`` as 50, ``"100"`` as 100, and
``1e400`` or ``Infinity`` ended in an internal error (exit 70) instead of one line and exit 2."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from mha_cli.cli.app import app
from mha_cli.core.errors import BadInputError
from mha_cli.core.serve.workload import read_lengths


@pytest.mark.parametrize(
    "document",
    ["[[true, 5]]", "[[100, 50.9]]", '[["100", "50"]]', "[[1e400, 5]]", "[[Infinity, 5]]", "[[NaN, 5]]",
     '[{"input_len": 100, "output_len": 50.5}]', '[{"input_len": false, "output_len": 5}]', '["ab"]', "[[100, 5e1]]"],
)  # fmt: skip
def test_a_json_count_that_is_not_a_whole_number_is_refused(tmp_path, document):
    path = tmp_path / "lengths.json"
    path.write_text(document)
    with pytest.raises(BadInputError, match=r"entry 0: give two token counts \(input, output\), whole numbers"):
        read_lengths(path)


def test_whole_numbers_still_read(tmp_path):
    path = tmp_path / "lengths.json"
    path.write_text('[[10, 2], {"prompt_len": 7, "output_len": 3}]')
    assert read_lengths(path) == [(10, 2), (7, 3)]
    text = tmp_path / "lengths.txt"
    text.write_text("128 64\n256,32\n")
    assert read_lengths(text) == [(128, 64), (256, 32)]
    text.write_text("100 50.5\n")
    with pytest.raises(BadInputError, match=r"line 1: give two token counts"):
        read_lengths(text)


def test_the_cli_answers_infinity_with_exit_2(tmp_path):
    path = tmp_path / "lengths.json"
    path.write_text("[[1e400, 5]]")
    args = ["plan", "llama-3-8b", "--target", "h100", "--tp", "1", "--num-prompts", "4", "--lengths-file", str(path)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "entry 0: give two token counts" in result.output


def test_requests_past_the_models_context_are_said_so(cli, tmp_path):
    """A lengths file of one 300,000 + 100 request on Llama-3.1-8B: the note said the engine's max_model_len was sized
    for --isl + --osl, not that 300,100 tokens is also past the 131,072 the engines derive (found by newuser trial
    254)."""
    lengths = tmp_path / "big.txt"
    lengths.write_text("300000 100\n")
    found = cli.json("plan", "llama-3.1-8b", "--target", "h100", "--tp", "1", "--lengths-file", str(lengths))
    note = next(note for note in found["notes"] if "lengths file" in note)
    assert "past the length derived from llama-3.1-8b's config.json" in note and "vLLM derives 131,072" in note

    sglang = cli.json("plan", "llama-3.1-8b", "--target", "h100", "--tp", "1", "--lengths-file", str(lengths),
                      "--engine", "sglang")  # fmt: skip
    note = next(note for note in sglang["notes"] if "lengths file" in note)  # its engine's words alone (review 259)
    assert "SGLang derives 131,072" in note and "vLLM derives" not in note


def test_a_gate_fails_when_the_lengths_file_runs_past_the_launched_context(tmp_path):
    """Trial 377 #2: a 9,050-token request against the launch line's --max-model-len 1280 (--isl + --osl) was
    simulated as served and --fail-if-misses passed; the engine refuses it. Now it is a miss (exit 1), and with
    --max-model-len 9050 the gate judges the latency alone (exit 0)."""
    import json

    path = tmp_path / "long.txt"
    path.write_text("9000 50\n")
    runner = CliRunner()
    args = ["plan", "llama-3-8b", "--target", "h100", "--tp", "1", "--lengths-file", str(path), "--ttft-ms", "1000",
            "--fail-if-misses", "--json"]  # fmt: skip
    missed = runner.invoke(app, args)
    assert missed.exit_code == 1
    found = json.loads(missed.stdout)
    assert found["meets_targets"] is False
    assert (
        "context: requests of up to 9,050 tokens, past the engine's max_model_len (give --max-model-len 9050)"
        in found["misses"]
    )
    assert runner.invoke(app, [*args, "--max-model-len", "9050"]).exit_code == 0


def test_a_search_picks_nothing_when_the_lengths_file_runs_past_its_context(tmp_path):
    """Review 378 #1: the search picked a layout launched at --max-model-len 1280 for a file holding a 9,050-token
    request, and the gate passed; every candidate now misses on the context, and there is no pick (exit 1)."""
    import json

    path = tmp_path / "long.txt"
    path.write_text("9000 50\n500 50\n")
    result = CliRunner().invoke(
        app, ["plan", "llama-3-8b", "--target", "2xh100", "--lengths-file", str(path), "--ttft-ms", "1000",
              "--fail-if-misses", "--json"],
    )  # fmt: skip
    assert result.exit_code == 1
    found = json.loads(result.stdout)
    assert found["chosen"] is None and found["launch"] == {}
    assert all(not c["meets_targets"] and c["misses"][-1].startswith("context: ") for c in found["candidates"])
