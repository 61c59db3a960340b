"""Launch notes when no vLLM line is written (trial 286 #1): a model no current vLLM loads (MiniMax-Text-01, last in
vLLM 0.23.0) priced on TensorRT-LLM gets its trtllm line and notes, not an internal error."""

from __future__ import annotations

from tests.conftest import reference_hf_config


def test_a_trtllm_plan_of_a_model_vllm_dropped_writes_its_line(cli):
    found = cli.json(
        "plan", str(reference_hf_config("minimax-text-01")), "--target", "8xh200", "--isl", "16384", "--osl", "1024",
        "--concurrency", "8", "--engine", "trtllm", "--closed-form",
    )  # fmt: skip
    assert "vllm" not in found["launch"] and found["launch"]["trtllm"].startswith("trtllm-serve ")
    assert "vllm: no line: vLLM 0.34.0 has no MiniMaxText01ForCausalLM (last in 0.23.0)" in found["launch_note"]


def test_the_trtllm_host_pool_note_still_follows_the_pick(cli):
    found = cli.json(
        "plan", "llama-3-8b", "--target", "8xh100", "--engine", "trtllm", "--kv-offload-gib", "50", "--isl", "4096",
        "--osl", "256", "--concurrency", "64", "--closed-form",
    )  # fmt: skip
    assert "trtllm-serve takes the host pool in its --extra_llm_api_options file" in found["launch_note"]
