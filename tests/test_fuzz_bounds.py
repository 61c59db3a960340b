"""Bounds before work: long target names, device counts and quantities are refused at once, quoting a prefix; a
context at any size is priced in work that does not grow with it."""

from __future__ import annotations

import json
import time

import pytest

from mha_cli.core.errors import BadInputError, one_line, shown
from mha_cli.core.targets import MAX_DEVICES, resolve_target
from tests.conftest import HF_FIXTURES


@pytest.mark.parametrize(
    "spec",
    ["1xa" + " " * 50_000 + "b", "a" * 50_000, "9" * 4301 + "xa100", "8x" + "h" * 100],
    ids=["spaces", "letters", "4301-digit-count", "long-name"],
)
def test_long_target_specs_are_refused_at_once(spec):
    start = time.perf_counter()
    with pytest.raises(BadInputError, match="too long") as info:
        resolve_target(spec)
    assert time.perf_counter() - start < 2.0  # was 12 s (spaces) and a hang through recommend --target
    assert len(str(info.value)) < 200


@pytest.mark.parametrize(("spec", "count"), [("4096xa100", 4096), ("0008xh100", 8), ("2*4090", 2)])
def test_device_counts_within_bounds(spec, count):
    assert resolve_target(spec).n_devices == count


@pytest.mark.parametrize("spec", ["4097xa100", "0xa100", "99999999999999999999xa100"])
def test_device_counts_out_of_bounds_are_bad_input(spec):
    with pytest.raises(BadInputError, match=f"between 1 and {MAX_DEVICES:,}"):
        resolve_target(spec)


def test_shown_quotes_a_short_prefix_on_one_line():
    assert shown("a\nb") == "'a\\nb'"
    assert shown("x" * 20_000) == repr("x" * 40) + "... (20,000 characters)"
    assert shown(10**5000) == "a 16,610-bit integer" and shown(12) == "12"  # str() of 10**5000 would raise
    assert one_line("a\nb" + "c" * 300, 10) == "a\\nbccccccc... (303 characters)"


@pytest.mark.parametrize(
    "args",
    [
        ["kv", "llama-3-8b", "--seq", "1" * 20_000 + "!"],
        ["recommend", "--params", "1" * 20_000 + "!"],
        ["recommend", "--params", "7B", "--target", "1xa" + " " * 50_000 + "b"],
        ["targets", "1xa" + " " * 50_000 + "b"],
        ["kv", "x" * 20_000],
    ],
    ids=["kv-seq", "recommend-params", "recommend-target", "targets", "kv-source"],
)
def test_cli_refuses_huge_arguments_in_one_short_line(cli, args):
    start = time.perf_counter()
    result = cli.run(*args)
    assert time.perf_counter() - start < 2
    assert result.exit_code == 2, result.output
    assert result.stdout == "" and result.stderr.count("\n") == 1 and len(result.stderr) < 300


@pytest.fixture
def counted_steps(monkeypatch):
    """Every step the cost model prices (``Stepper.step`` and a chunk's attention, ``Stepper.context_seconds``)."""
    from mha_cli.core.cost.stepper import Stepper

    calls: list[str] = []
    step, context = Stepper.step, Stepper.context_seconds
    monkeypatch.setattr(Stepper, "step", lambda self, *shapes: calls.append("step") or step(self, *shapes))
    monkeypatch.setattr(Stepper, "context_seconds", lambda self, shape: calls.append("ctx") or context(self, shape))
    return calls


FUZZ_HANGS = {  # issue 38: killed after 60 s, CPU-bound (a step of the cost model per chunk of the prompt)
    "kv-1G": ["kv", "qwen3-8b", "--seq", "1G", "--target", "a100-80gb", "--json"],
    "recommend-1G": ["recommend", "--params", "100M", "--seq", "1G", "--target", "64xtpu-v6e", "--batch", "22",
                     "--kv-dtype", "fp8", "--weight-dtype", "fp8", "--tp", "8", "--vocab", "1000", "--json"],
    "llama-21847796": ["kv", str(HF_FIXTURES / "llama-3-8b.json"), "--seq", "21847796", "--target", "1xh100", "--json"],
}  # fmt: skip


@pytest.mark.parametrize("args", list(FUZZ_HANGS.values()), ids=list(FUZZ_HANGS))
def test_contexts_of_any_size_are_priced_in_steps_that_do_not_grow(cli, counted_steps, args):
    """The fuzzer's hangs: 524,288 chunks of 2,048 tokens (A100, TPU) or 2,667 of 8,192 are each priced one by one
    no more; the plan says the engine would not start, and the prompt's time is at least its attention's FLOPs."""
    result = cli.run(*args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    engine, latency = data["engine"], data["latency"]
    # the engine refuses the context, or (recommend: its design written for it, the RoPE table of 2^30 positions,
    # 256 GiB, priced) has no memory left for one block
    refused = ("max seq len", "No available memory for the cache blocks")
    assert not engine["starts"] and any(why in engine["refusal"] for why in refused) and not data["memory"]["fits"]
    chunks = -(-data["kv"]["seq_len"] // engine["max_num_batched_tokens"])
    # all latencies, ways out repriced included (recommend-1G's, refused for want of memory, tries more ways: 1,753)
    assert chunks > 2_500 and len(counted_steps) < 2_000
    assert latency["prefill_ms"] > latency["prefill_bound_ms"] > latency["decode_bound_ms"] > 0


def test_a_billion_token_prompt_costs_its_attention_flops_on_the_datasheet(cli):
    """Qwen3-8B at 2^30 tokens on an A100: the bound is the causal attention's FLOPs at the dense peak (by hand:
    36 layers x n (n + 1) / 2 pairs x 4 x 32 heads x 128 FLOPs; the matmuls add 2 x 8.2e9 x n, 5e-5 of it)."""
    n = 2**30
    flops = 36 * n * (n + 1) // 2 * 4 * 32 * 128
    latency = cli.json("kv", "qwen3-8b", "--seq", "1G", "--target", "a100-80gb")["latency"]
    assert latency["prefill_bound_ms"] == pytest.approx(flops / 312e12 * 1e3, rel=1e-3)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--d-model", "1" + "0" * 20], "--d-model: must be at most 1,048,576 (got 1000"),  # a hang: its heads' divisors
        (["--max-num-batched-tokens", "1" + "0" * 20, "--target", "h100"],  # exit 70: DeploymentSpec refused it later
         "--max-num-batched-tokens: must be at most 17,179,869,184"),
    ],
    ids=["d-model-1e20", "step-1e20"],
)  # fmt: skip
def test_recommend_bounds_its_widths_and_steps_as_the_model_and_deployment_do(cli, args, message):
    """Found by ``benchmarks/fuzz_cli.py --examples 2000 --seed 1``: refused in one line before any shape is tried."""
    result = cli.run("recommend", "--params", "70B", *args, "--json")
    assert result.exit_code == 2 and result.stdout == "" and result.stderr.count("\n") == 1
    assert message in result.stderr
