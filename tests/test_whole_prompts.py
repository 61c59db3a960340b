"""TensorRT-LLM runs a prompt whole, the running decodes first (``core.cost.serving.whole_prompt_running``): the
closed form caps what runs as its micro-batch scheduler does, and agrees with the simulated loop, an independent
implementation of that scheduler (``core.serve.schedulers._trtllm``)."""

from __future__ import annotations

import pytest

from mha_cli.core.cost.serving import whole_prompt_running


def test_a_prompt_starts_only_beside_the_decodes_the_budget_leaves():
    # 8,192 tokens a step: an 8,192-token prompt starts alone, an 8,000-token one beside 192 decodes, so 193 run
    assert whole_prompt_running(8192, 8192) == 1
    assert whole_prompt_running(8000, 8192) == 193
    assert whole_prompt_running(1, 8192) == 8192


def test_trtllm_closed_form_runs_what_the_simulated_scheduler_runs(cli):
    """Llama-3-8B, 8,192-token prompts on one H100 with TensorRT-LLM's 8,192-token budget: the pool admits 55 such
    requests, but each prompt waits until no other request decodes, so one runs at a time (the simulated loop's
    max_running) and 15 of 16 users wait; before, the closed form ran all 16 at 5x the simulated tokens/s."""
    args = ("plan", "llama-3-8b", "--target", "h100", "--tp", "1", "--engine", "trtllm", "--isl", "8192",
            "--osl", "256", "--concurrency", "16")  # fmt: skip
    found = cli.json(*args)
    assert found["memory"]["engine"]["admitted_per_replica"] == 55
    assert found["running_per_replica"] == found["simulated"]["max_running"] == 1
    assert found["queued_per_replica"] == 15
    assert found["output_tokens_per_s"] == pytest.approx(found["simulated"]["output_tokens_per_s"], rel=0.1)
    assert any("starts only when no other request decodes" in note for note in found["notes"])
    # the control: vLLM chunks the prompts and runs all 16 at once
    vllm = cli.json(*args[:7], "vllm", *args[8:])
    assert vllm["running_per_replica"] == 16 and vllm["queued_per_replica"] == 0


def test_each_micro_batch_and_each_draft_token_counts(cli):
    """Review 288 #1 and #3: under pipeline stages each micro-batch has its own max_num_tokens, so 2 stages run 2
    whole 8,192-token prompts' requests, as the simulated loop does; a decode takes 1 + its draft tokens of the
    budget (MicroBatchScheduler: beam width + getNumDraftTokens), so at 8,100-token prompts and k = 3 a prompt starts
    beside (8,192 - 8,100) // 4 = 23 decodes: 24 run, in the closed form and the simulated loop alike."""
    staged = cli.json("plan", "llama-3-8b", "--target", "2xh100", "--engine", "trtllm", "--tp", "1", "--pp", "2",
                      "--isl", "8192", "--osl", "256", "--concurrency", "64")  # fmt: skip
    assert staged["running_per_replica"] == staged["simulated"]["max_running"] == 2
    drafted = cli.json("plan", "llama-3-8b", "--target", "h100", "--engine", "trtllm", "--tp", "1", "--isl", "8100",
                       "--osl", "256", "--concurrency", "300", "--draft", "llama-3.2-1b", "--num-speculative-tokens",
                       "3", "--acceptance-length", "2.5")  # fmt: skip
    assert whole_prompt_running(8100, 8192, 4) == 24
    assert drafted["running_per_replica"] == drafted["simulated"]["max_running"] == 24


def test_a_prompt_over_the_budget_is_priced_chunked_and_said(cli):
    """Review 288 #8: the closed form prices a 12,000-token prompt chunked (context chunking on), and says so; the
    simulated loop refuses it, as trtllm-serve does with chunking off (its default)."""
    found = cli.json("plan", "llama-3-8b", "--target", "h100", "--engine", "trtllm", "--tp", "1", "--isl", "12000",
                     "--osl", "256", "--concurrency", "8", "--closed-form")  # fmt: skip
    assert any("over TensorRT-LLM's max_num_tokens (8,192): priced chunked" in note for note in found["notes"])
    refused = cli.run("plan", "llama-3-8b", "--target", "h100", "--engine", "trtllm", "--tp", "1", "--isl", "12000",
                      "--osl", "256", "--concurrency", "8")  # fmt: skip
    assert refused.exit_code == 2 and "every prompt must fit max_num_tokens (8,192)" in refused.output
    assert "give --max-num-batched-tokens 12000 (trtllm-serve's --max_num_tokens)" in refused.output  # trial 318 #2
    fits = cli.json("plan", "llama-3-8b", "--target", "h100", "--engine", "trtllm", "--tp", "1", "--isl", "12000",
                    "--osl", "256", "--concurrency", "8", "--max-num-batched-tokens", "12000")  # fmt: skip
    assert "--max_num_tokens 12000" in fits["launch"]["trtllm"]
