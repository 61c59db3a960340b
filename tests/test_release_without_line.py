"""A release whose launch line cannot be written is not told to run it, nor priced with a host tier it lacks.

``mha plan llama-3.1-8b --target 2xh100 --engine vllm@0.1`` printed only an SGLang line and the note "priced by vLLM V0
(0.1-0.7)'s rules: run the vllm line on a release of 0.1-0.7; vLLM V0 (0.1-0.7) has no --data-parallel-size: start
the vllm line once per replica; no vllm line: ...": two instructions about a line that is not there. And
``--engine vllm@0.10 --kv-offload-gib 100`` (or ``sglang@0.4.0``) priced a host KV tier those releases lack (vLLM's
``--kv-offloading-size`` is first in 0.11.1, SGLang's ``--hicache-size`` in 0.4.5.post3), exit 0, with no line of the
engine priced; ``--kv-cache-gib`` on a release without its flag was already refused in one line."""

import pytest

from mha_cli.core.errors import EXIT_BAD_INPUT

SEARCH = ("plan", "llama-3.1-8b", "--target", "2xh100", "--closed-form")


def test_no_instruction_to_run_a_line_that_was_not_written(cli):
    result = cli.json(*SEARCH, "--engine", "vllm@0.1")
    assert "vllm" not in result["launch"] and "sglang" in result["launch"]
    note = result["launch_note"]
    assert note.startswith("priced by vLLM V0 (0.1-0.7)'s rules; no vllm line: vLLM 0.1.x has no vllm serve")
    assert "run the vllm line" not in note and "start the vllm line" not in note


def test_a_written_line_is_still_told_which_releases_run_it(cli):
    result = cli.json(*SEARCH, "--engine", "vllm@0.5.0")
    assert "vllm" in result["launch"]
    assert "priced by vLLM V0 (0.1-0.7)'s rules: run the vllm line on a release of 0.1-0.7" in result["launch_note"]


@pytest.mark.parametrize(
    "engine, expected",
    [
        ("vllm@0.10", "vLLM's --kv-offloading-size (first in 0.11.1), which vLLM 0.10.x lacks: drop it or use"
         " --engine vllm@0.11.1 or later"),
        ("sglang@0.4.0", "SGLang's --hicache-size (first in 0.4.5.post3), which SGLang 0.4.0 lacks: drop it or use"
         " --engine sglang@0.4.5.post3 or later"),
    ],
)  # fmt: skip
def test_a_host_tier_on_a_release_without_its_flag_is_refused(cli, engine, expected):
    result = cli.run(*SEARCH, "--engine", engine, "--kv-offload-gib", "100", "--json")
    assert result.exit_code == EXIT_BAD_INPUT and result.stdout == ""
    assert result.stderr == f"error: --kv-offload-gib sets {expected}\n"


@pytest.mark.parametrize("engine", ["vllm@0.11.1", "vllm-v1", "sglang@0.4", "trtllm@0.21"])
def test_a_host_tier_on_a_release_with_its_flag_is_priced(cli, engine):
    result = cli.json(*SEARCH, "--engine", engine, "--kv-offload-gib", "100")
    assert result["launch"]
