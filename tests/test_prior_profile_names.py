"""The profile a plan names is one ``--profile`` takes back: a plan on an engine prints its prior as
``h100-sxm-prior@sglang-0.5``, and ``--profile h100-sxm-prior@sglang-0.5`` was refused ("profile name ... must be 1-64
letters, digits, '.', '_' or '-'"), so a user could not pin the profile the plan said it used."""

import json

import pytest

from mha_cli.core.errors import EXIT_BAD_INPUT

PLAN = ("plan", "llama-3.1-8b", "--target", "h100", "--tp", "1", "--closed-form", "--json")


@pytest.mark.parametrize("engine", ["sglang@0.5.8", "vllm@0.10.2", "trtllm"])
def test_the_prior_a_plan_names_is_taken_back_by_profile(cli, engine):
    default = cli.run(*PLAN, "--engine", engine)
    assert default.exit_code == 0, default.output
    named = json.loads(default.stdout)["profile"]["name"]
    assert "@" in named
    pinned = cli.run(*PLAN, "--engine", engine, "--profile", named)
    assert pinned.exit_code == 0, pinned.output
    assert json.loads(pinned.stdout) == json.loads(default.stdout)


def test_a_prior_of_an_unknown_generation_is_refused_in_one_line(cli):
    result = cli.run(*PLAN, "--profile", "h100-sxm-prior@sglang-9")
    assert result.exit_code == EXIT_BAD_INPUT and result.stdout == ""
    assert result.stderr.startswith("error: profile 'h100-sxm-prior@sglang-9': 'sglang-9' is not an engine generation")
    assert result.stderr.count("\n") == 1
