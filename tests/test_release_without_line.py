"""A release whose launch line cannot be written is not told to run it, nor priced with a host tier it lacks.

``mha plan llama-3.1-8b --target 2xh100 --engine vllm@0.1`` printed only an SGLang line and the note "priced by vLLM V0
(0.1-0.7)'s rules: run the vllm line on a release of 0.1-0.7; vLLM V0 (0.1-0.7) has no --data-parallel-size: start
the vllm line once per replica; no vllm line: ...": two instructions about a line that is not there. And
``--engine vllm@0.10 --kv-offload-gib 100`` (or ``sglang@0.4.0``) priced a host KV tier those releases lack (vLLM's
``--kv-offloading-size`` is first in 0.11.1, SGLang's ``--hicache-size`` in 0.4.5.post3), exit 0, with no line of the
engine priced; ``--kv-cache-gib`` on a release without its flag was already refused in one line."""

import pytest

from mha_cli.core.errors import EXIT_BAD_INPUT

SEARCH = ("plan", "llama-3-8b", "--target", "2xh100", "--closed-form")


def test_no_instruction_to_run_a_line_that_was_not_written(cli):
    result = cli.json(*SEARCH, "--engine", "vllm@0.1")
    assert "vllm" not in result["launch"] and "sglang" in result["launch"]
    note = result["launch_note"]
    assert note.startswith("priced by vLLM V0 (0.1-0.7)'s rules; no vllm line: vLLM 0.1.x has no vllm serve")
    assert "run the vllm line" not in note and "start the vllm line" not in note


def test_a_written_line_is_still_told_which_releases_run_it(cli):
    result = cli.json(*SEARCH, "--engine", "vllm@0.5.0")
    assert "vllm" in result["launch"]
    # was "... on a release of 0.1-0.7", the generation's range: its line's server is first in 0.2.0
    # (tests/test_launch_line_releases.py)
    assert "priced by vLLM V0 (0.1-0.7)'s rules: run the vllm line on a release of 0.2.0-0.7.x" in result["launch_note"]


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


def test_a_disaggregated_plan_without_a_vllm_line_names_no_vllm_proxy(cli):
    """``--disaggregated --engine vllm@0.8.0`` (NixlConnector first in 0.9.0) wrote only SGLang's lines, and its note
    still said where vLLM's toy proxy is and that "both" engines need NIXL."""
    old = cli.json("plan", "llama-3.1-8b", "--target", "4xh100", "--disaggregated", "--engine", "vllm@0.8.0")
    assert sorted(old["launch"]) == ["sglang"]
    assert old["launch_note"].startswith(
        "one command a line, prefill workers on the first GPUs; SGLang needs NIXL installed (pip install nixl); no vllm"
        " line: vLLM 0.8.0 has no --kv-transfer-config"
    )
    assert "proxy" not in old["launch_note"]
    new = cli.json("plan", "llama-3.1-8b", "--target", "4xh100", "--disaggregated")
    assert sorted(new["launch"]) == ["sglang", "vllm"]
    assert (
        "vLLM's proxy tests/v1/kv_connector/nixl_integration/toy_proxy_server.py is in its source tree"
        in (new["launch_note"])
        and "both engines need NIXL installed" in new["launch_note"]
    )
