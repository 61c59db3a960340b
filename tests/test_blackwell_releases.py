"""An engine release that predates NVIDIA Blackwell is refused on a Blackwell target in one line, by every command
that prices an engine (``core.engine.blackwell_releases``; trial 351 #1: ``--engine vllm@0.8 --target 8xb300`` was
priced and its launch line offered). vLLM's wheels before 0.9.0 are CUDA 12.4 builds (0.9.0's release notes);
TensorRT-LLM first names a Blackwell part in 0.17.0 (its release notes); SGLang's wheels before 0.4.6 pin CUDA 12.4
builds (their METADATA)."""

import pytest
import yaml

from tests.test_target_file import H100

REFUSED_VLLM = (
    "does not run on b300 (compute capability 10.3, Blackwell): vLLM's wheels before 0.9.0 are built with CUDA 12.4,"
    " which compiles no Blackwell kernels (0.9.0's release notes: the default wheel moved to CUDA 12.8, with its first"
    " Blackwell kernels); use --engine vllm@0.9 or later"
)


@pytest.mark.parametrize(
    "command",
    [("kv", "llama-3-8b", "--target", "b300"),
     ("plan", "llama-3-8b", "--target", "8xb300", "--closed-form"),
     ("check", "llama-3-8b", "--target", "b300"),
     ("recommend", "--params", "7B", "--seq", "8192", "--target", "b300"),
     ("plan", "llama-3-8b", "--target", "8xb300", "--disaggregated")],  # refused up front, not "give more GPUs"
)  # fmt: skip
def test_vllm_before_0_9_is_refused_on_blackwell_by_every_command(cli, command):
    result = cli.run(*command, "--engine", "vllm@0.8.5")
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines()[-1] == f"error: --engine vllm@0.8.5 {REFUSED_VLLM}"


@pytest.mark.parametrize(
    ("engine", "target", "refused"),
    [("vllm-v0", "rtx-5090", "--engine vllm-v0 does not run on rtx-5090 (compute capability 12.0, Blackwell)"),
     ("vllm@0.9", "b300", None), ("vllm", "b300", None),
     ("vllm@0.8", "h100", None),  # Hopper: 9.0
     ("trtllm@0.16", "b200", "--engine trtllm@0.16 does not run on b200 (compute capability 10.0, Blackwell):"
                             " TensorRT-LLM added Blackwell support in 0.17.0"),
     ("trtllm@0.17", "b200", None),
     ("sglang@0.4", "rtx-5080", None),  # SGLang 0.4.10 starts on an RTX 5080: the engine log 510
     # 0.4.5 pins torch 2.5.1 (CUDA 12.4); 0.4.6 is the first wheel with a 'blackwell' extra (trial 359 #1)
     ("sglang@0.4.5", "b200", "--engine sglang@0.4.5 does not run on b200 (compute capability 10.0, Blackwell):"
                              " SGLang's wheels before 0.4.6 pin torch 2.5.1"),
     ("sglang@0.4.0", "gb300", "use --engine sglang@0.4.6 or later"),
     ("sglang@0.4.6", "b200", None), ("sglang@0.4.5", "h200", None)],
)  # fmt: skip
def test_the_first_blackwell_release_of_each_engine(cli, engine, target, refused):
    result = cli.run("kv", "llama-3-8b", "--target", target, "--engine", engine)
    if refused is None:
        assert result.exit_code == 0, result.output
    else:
        assert result.exit_code == 2 and refused in result.output


def test_a_target_files_compute_capability_decides(cli, tmp_path):
    """A chip of the user's: 11.0 is past Blackwell's first, so vLLM 0.8 is refused; another vendor's part (which
    has no compute capability) is not checked (AMD's gfx950 against vLLM's ROCm releases is not read)."""
    rubin = tmp_path / "rubin.yaml"
    rubin.write_text(yaml.safe_dump({**H100, "name": "a later NVIDIA part", "compute_capability": 11.0}))
    result = cli.run("kv", "llama-3-8b", "--target", str(rubin), "--engine", "vllm@0.8")
    assert result.exit_code == 2 and "(compute capability 11.0, Blackwell)" in result.output
    amd = tmp_path / "amd.yaml"
    amd.write_text(yaml.safe_dump({**{k: v for k, v in H100.items() if k != "compute_capability"}, "vendor": "AMD"}))
    assert cli.run("kv", "llama-3-8b", "--target", str(amd), "--engine", "vllm@0.8").exit_code == 0
