"""``benchmarks/run_split.py``: a client row's simulated run split into decode-only and prompt steps (priors_2025.md,
sglmoe)."""

import pytest

from tests.benchmark_modules import load_benchmark


@pytest.fixture(scope="module")
def run_split():
    return load_benchmark("run_split")


@pytest.fixture(scope="module")
def lone_user(run_split):
    """#17: DeepSeek-V3.1 on 8 x MI300X, SGLang 0.5.7, one user, 10 prompts of sglang.bench_serving's random dataset
    ('Successful requests: 10 | Total input tokens: 6101', the row's quote)."""
    return run_split.run_split(run_split.fixture_row(17))


def test_every_prompt_token_in_a_prompt_step(lone_user):
    """The prompt steps compute the run's published input tokens, each of the 10 prompts (at most 1,000 tokens,
    under the chunk budget) alone in its own step; no decode-only step computes a prompt token."""
    assert lone_user.prompt.prompt_tokens == 6101
    assert lone_user.prompt.steps == 10
    assert lone_user.decode.prompt_tokens == 0


def test_each_decode_step_counted_once(lone_user):
    """The simulator's one-user run takes a decode-only step per generated token, as many as the quote's 'Total
    generated tokens: 4210'; the step-time grid priced through ``StepCost.seconds`` adds none (it added 59)."""
    assert lone_user.decode.steps == 4210


def test_one_user_decodes_one_sequence_a_step(lone_user):
    """At one user a decode-only step decodes that user's sequence, and a prompt step decodes nothing beside it."""
    assert lone_user.decode.rows == lone_user.decode.steps > 0
    assert lone_user.prompt.rows == 0


def test_steps_priced_as_the_run_figures(run_split, lone_user):
    """The split counts the run ``fit_priors`` reads the row's figures from, and restores the simulator's pricing."""
    assert lone_user.figures.keys() == {"ttft_ms", "itl_ms", "tokens_per_s_per_gpu"}
    assert run_split.step_cost.StepCost.__name__ == "StepCost"
