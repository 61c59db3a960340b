"""``mha plan`` says what an alias typed as ``--target`` was taken to mean, as ``kv`` and ``recommend`` do: a notice
line on stderr, and in the JSON (``target_alias_note`` when searching, ``memory.alias_note`` for one deployment).
Before, neither form said it and the search's JSON had no field for it."""

import json

import pytest

ARGS = ("plan", "llama-3-8b", "--isl", "1024", "--osl", "128", "--concurrency", "8", "--closed-form")
MEANT = "h100 -> h100-sxm (NVIDIA H100 SXM5 80GB)"


@pytest.mark.parametrize("pinned", [(), ("--tp", "1")], ids=["search", "one-deployment"])
def test_plan_says_what_the_alias_meant(cli, pinned):
    text = cli.run(*ARGS, "--target", "h100", *pinned)
    assert text.exit_code == 0, text.output
    assert text.stderr.strip() == f"target {MEANT}"
    shown = cli.run(*ARGS, "--target", "h100", *pinned, "--json")
    assert shown.exit_code == 0 and shown.stderr.strip() == f"target {MEANT}"
    found = json.loads(shown.stdout)
    assert (found["target_alias_note"] if not pinned else found["memory"]["alias_note"]) == MEANT


def test_plan_by_id_says_nothing(cli):
    shown = cli.run(*ARGS, "--target", "h100-sxm", "--json")
    assert shown.exit_code == 0 and shown.stderr == ""
    assert "target_alias_note" not in json.loads(shown.stdout)


def test_check_says_what_the_alias_meant_as_the_other_commands_do(cli):
    """Trial 343 #7: ``mha check --target h100`` said it only in the JSON's ``memory.alias_note``."""
    for json_flag in ((), ("--json",)):
        shown = cli.run("check", "llama-3-8b", "--target", "h100", *json_flag)
        assert shown.exit_code == 0 and shown.stderr.strip() == f"target {MEANT}"
    assert cli.run("check", "llama-3-8b", "--target", "h100-sxm").stderr == ""
