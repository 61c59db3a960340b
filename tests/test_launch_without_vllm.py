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


def test_the_trtllm_host_pool_note_follows_the_pick_without_a_vllm_line(cli):
    """Review 288 #7: the note was keyed on the vllm line's --kv-offloading-size, so with no vllm line it was read
    from a line that does not exist (the crash above); it follows the pick's host pool."""
    found = cli.json(
        "plan", str(reference_hf_config("minimax-text-01")), "--target", "8xh200", "--isl", "16384", "--osl", "1024",
        "--concurrency", "8", "--engine", "trtllm", "--kv-offload-gib", "100", "--closed-form",
    )  # fmt: skip
    assert "vllm" not in found["launch"]
    assert "trtllm-serve takes the host pool in its --extra_llm_api_options file" in found["launch_note"]


def test_the_trtllm_speculative_note_follows_the_deployment(cli):
    """The drafter's note was keyed on the vllm line's --speculative-config the same way; it follows the deployment
    (a search's candidates carry no speculative comparison, so not the pick either)."""
    found = cli.json(
        "plan", "llama-3-8b", "--target", "2xh100", "--engine", "trtllm", "--isl", "2048", "--osl", "256",
        "--concurrency", "8", "--draft", "llama-3.2-1b", "--num-speculative-tokens", "3", "--acceptance-length",
        "2.5", "--closed-form",
    )  # fmt: skip
    assert "trtllm-serve takes speculative decoding in its --extra_llm_api_options file" in found["launch_note"]
