"""``benchmarks/step_ops.py``: a fixture row's steps op by op, which the priors_2025.md diagnoses read."""

import pytest

from tests.benchmark_modules import load_benchmark


@pytest.fixture(scope="module")
def step_ops():
    return load_benchmark("step_ops")


@pytest.fixture(scope="module")
def scout(step_ops):
    """#173: Llama 4 Scout on one B200, NVFP4, 128/128 under trtllm-bench's 30,000 queued requests."""
    return step_ops.fixture_row(173)


def test_decode_step_is_the_admitted_batch_at_the_mean_context(step_ops, scout):
    (_, decode), (_, prompt) = step_ops.row_steps(scout)
    assert (decode.sequences, decode.new_tokens, decode.context) == (2048, 1, 128 + 128 // 2)
    # the engine's 8,192-token budget holds 64 whole 128-token prompts
    assert (prompt.sequences, prompt.new_tokens) == (8192 // 128, 128)


def test_ops_and_overhead_add_up_to_the_step(step_ops, scout):
    """Every op the Stepper times is listed: their seconds and the fixed costs are the step's whole time."""
    profile = step_ops.prior_profile(scout.target, scout.weight_dtype, None, generation=scout.generation)
    stepper = scout.stepper.on(profile)
    for _, shape in step_ops.row_steps(scout):
        step = stepper.step(shape)
        times = step_ops.op_times(stepper, shape)
        assert sum(t.seconds for t in times) + step.overhead_s == pytest.approx(step.seconds, rel=1e-9)


def test_routed_experts_by_hand(step_ops, scout):
    """Scout routes each token to 1 of 16 experts: 2,048 decode tokens are 128 rows an expert; each of 48 MoE
    layers runs the gate and up halves (2 instances) and the down projection (1)."""
    profile = step_ops.prior_profile(scout.target, scout.weight_dtype, None, generation=scout.generation)
    (_, decode), _ = step_ops.row_steps(scout)
    experts = [t for t in step_ops.op_times(scout.stepper.on(profile), decode) if t.name.startswith("expert")]
    assert sorted((t.name, t.count, t.rows) for t in experts) == [
        ("expert 5120x8192", 48.0, 128),
        ("expert 8192x5120", 96.0, 128),
    ]
