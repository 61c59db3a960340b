"""A release that cannot load the model's RoPE scaling is refused in one line: ``--engine vllm@0.3`` on Llama 3.1
(``rope_type: llama3``, first read by vLLM 0.5.3) was priced and given a launch line (found by newuser trial 236)."""

import pytest

from mha_cli.core.errors import EXIT_BAD_INPUT


@pytest.mark.parametrize("engine", ["vllm@0.3", "vllm@0.5.2", "vllm@0.4"])
def test_a_vllm_before_llama3_rope_scaling_is_refused(cli, engine):
    result = cli.run("plan", "llama-3.1-70b", "--target", "8xh100", "--engine", engine, "--tp", "8", "--closed-form")
    assert result.exit_code == EXIT_BAD_INPUT and result.stdout == ""
    release = engine.split("@")[1]
    assert result.stderr.startswith(f"error: vLLM {release} cannot load llama-3.1-70b's llama3 RoPE scaling")
    assert result.stderr.rstrip().endswith("give --engine vllm@0.5.3 or later")


@pytest.mark.parametrize(
    ("model", "engine"),
    [("llama-3.1-70b", "vllm@0.5.3"), ("llama-3.1-70b", "vllm"), ("llama-3.1-70b", "sglang@0.4"),
     ("llama-3-8b", "vllm@0.4")],  # Llama 3 has no rope_scaling: 0.4 loads it
)  # fmt: skip
def test_a_release_that_reads_it_or_a_model_without_it_is_priced(cli, model, engine):
    result = cli.run("plan", model, "--target", "8xh100", "--engine", engine, "--tp", "8", "--closed-form")
    assert result.exit_code == 0, result.output
