"""A release inside the releases known that was never published is refused, as one past its series' end is:
``--engine vllm@0.10.1.2`` (vLLM has 0.10.1.1, then 0.10.2) or ``sglang@0.5.8.post9`` was priced, exit 0, with
launch lines "written for" a release that does not exist; ``vllm@0.10.9`` was already refused."""

import pytest

from mha_cli.core.errors import EXIT_BAD_INPUT


@pytest.mark.parametrize(
    "engine, expected",
    [
        ("vllm@0.10.1.2", "vLLM 0.10.1.2 was never released (0.10.1.1, then 0.10.2): give --engine vllm@0.10.1.1"),
        ("sglang@0.5.8.post9", "SGLang 0.5.8.post9 was never released (0.5.8.post1, then 0.5.9): give --engine"
         " sglang@0.5.8.post1"),
        ("sglang@0.5.0", "SGLang 0.5.0 was never released (0.4.10.post2, then 0.5.1): give --engine sglang@0.5.1"),
    ],
)  # fmt: skip
def test_a_release_never_published_is_refused(cli, engine, expected):
    for command in (("kv", "llama-3.1-8b", "--target", "h100"), ("plan", "llama-3.1-8b", "--target", "h100")):
        result = cli.run(*command, "--engine", engine, "--json")
        assert result.exit_code == EXIT_BAD_INPUT and result.stdout == ""
        assert result.stderr == f"error: {expected}, or another release\n"


@pytest.mark.parametrize(
    "engine", ["vllm@0.10.1.1", "vllm@0.10.1.post1", "vllm@0.10", "vllm@0.10.2rc1", "sglang@0.5.8.post1", "trtllm@1.0.0rc4",
               "vllm@0.34.1", "vllm@0.1.0"],
)  # fmt: skip
def test_a_published_pre_or_newer_release_still_prices(cli, engine):
    assert cli.run("kv", "llama-3-8b", "--target", "h100", "--engine", engine, "--json").exit_code == 0
