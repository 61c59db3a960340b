"""TensorRT-LLM runs on NVIDIA GPUs only (``core.engine.settings.TRTLLM_VENDOR``): an AMD, Google, Apple or Intel
target is refused in one line, once, by every command that plans an engine; vLLM and SGLang still plan there."""

import pytest

REFUSAL = "TensorRT-LLM runs on NVIDIA GPUs only; mi300x is AMD's"


@pytest.mark.parametrize(
    "args",
    [
        ("kv", "llama-3-8b", "--target", "mi300x", "--engine", "trtllm"),
        ("kv", "llama-3-8b", "--target", "mi300x", "--engine", "trtllm@0.12"),
        ("plan", "llama-3-8b", "--target", "mi300x", "--engine", "trtllm-pytorch", "--tp", "1", "--closed-form"),
        ("plan", "llama-3-8b", "--target", "8xmi300x", "--engine", "trtllm", "--closed-form"),
        ("plan", "llama-3-8b", "--target", "8xmi300x", "--engine", "trtllm", "--disaggregated", "--closed-form"),
    ],
)
def test_trtllm_is_refused_off_nvidia_in_one_line(cli, args):
    result = cli.run(*args)
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.count(REFUSAL) == 1 and "Traceback" not in result.stderr


def test_trtllm_still_plans_on_nvidia_and_the_others_on_amd(cli):
    assert (
        cli.json("kv", "llama-3-8b", "--target", "h100", "--engine", "trtllm")["memory"]["engine"]["name"] == "trtllm"
    )
    for engine in ("vllm", "sglang"):
        plan = cli.json("kv", "llama-3-8b", "--target", "mi300x", "--engine", engine)
        assert plan["memory"]["engine"]["kv_tokens"] > 0
