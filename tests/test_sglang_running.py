"""SGLang's running-request cap by release (``core.engine.sglang_running``), by hand: the default is min(KV tokens //
2, clamp(int(tokens / context x 512), 2048, 4096)) (+ 1 row in 0.4.0-0.4.6); a given cap is taken as is to 0.5.9,
capped at that estimate in 0.5.10-0.5.13 and at tokens // 2 from 0.5.14; speculative decoding asks 32 (0.4.4) or 48
(0.4.5 on) when none is given. The plan admits min(what the pool holds, the cap)."""

from __future__ import annotations

import pytest

from mha_cli.core.engine.plan import plan_engine
from mha_cli.core.engine.settings import resolve_settings
from mha_cli.core.engine.sglang_running import Requested, requested_per_rank, running_limit, speculative_cap
from mha_cli.core.kv import kv_footprint
from mha_cli.core.presets import get_preset
from mha_cli.core.schemas import DeploymentSpec, SpeculativeSpec
from mha_cli.core.targets import load_targets

MILLION, LONG = 1_000_000, 131_072
"""A pool of 1,000,000 tokens at a 131,072-token context: int(1e6 / 131,072 x 512) = int(3,906.25) = 3,906."""


@pytest.mark.parametrize(
    ("tokens", "context", "release", "cap"),
    [
        (MILLION, LONG, (0, 5, 23), 3906),  # the estimate, between the clamp's ends
        (MILLION, LONG, (0, 5, 9), 3906),
        (MILLION, LONG, (0, 4, 6), 3907),  # ReqToTokenPool(size=max_num_reqs + 1)
        (MILLION, LONG, (0, 4, 7), 3906),  # the + 1 dropped
        (MILLION, 1024, (0, 5, 23), 4096),  # int(1e6 / 1,024 x 512) = 500,000: the ceiling
        (200_000, LONG, (0, 5, 23), 2048),  # int(781.25): the floor
        (3000, 8192, (0, 5, 15), 1500),  # the floor 2,048 over tokens // 2 = 1,500
    ],
)
def test_the_default_cap_is_the_pools_estimate_within_half_its_tokens(tokens, context, release, cap):
    assert running_limit(None, tokens, context, release).requests == cap


def test_a_given_cap_by_release_both_sides_of_0_5_10_and_0_5_14():
    over, under = Requested(5000, "--max-running-requests"), Requested(600, "--max-running-requests")
    assert running_limit(over, MILLION, LONG, (0, 5, 9)).requests == 5000  # the pool is sized at it
    assert running_limit(over, MILLION, LONG, (0, 5, 10)).requests == 3906  # min(5,000, the estimate)
    assert running_limit(over, MILLION, LONG, (0, 5, 13)).requests == 3906
    assert running_limit(over, MILLION, LONG, (0, 5, 14)).requests == 5000  # min(5,000, 500,000)
    assert running_limit(under, 1000, 8192, (0, 5, 13)).requests == 600  # min(600, the floor 2,048)
    assert running_limit(under, 1000, 8192, (0, 5, 14)).requests == 500  # min(600, 1,000 // 2)
    assert running_limit(under, 1000, 8192, (0, 5, 9)).requests == 600


def test_speculative_decoding_asks_32_in_0_4_4_and_48_from_0_4_5_divided_over_dp_ranks():
    assert [speculative_cap(r) for r in ((0, 4, 3), (0, 4, 4), (0, 4, 5), (0, 5, 23))] == [None, 32, 48, 48]
    assert requested_per_rank(None, True, 4, (0, 5, 15)) == Requested(12, "speculative decoding's 48 // 4 ranks")
    assert requested_per_rank(64, True, 4, (0, 5, 15)) == Requested(64, "--max-running-requests")  # given wins
    assert requested_per_rank(None, False, 1, (0, 5, 15)) is None
    assert requested_per_rank(None, True, 1, (0, 4, 3)) is None


H100 = load_targets()["h100-sxm"]
LLAMA = get_preset("llama-3-8b")
SPEC = SpeculativeSpec(
    method="eagle", num_speculative_tokens=3, acceptance_length=2.0, acceptance_source="test", drafter=LLAMA
)


def _plan(seq_len: int, release: str, **deployment):
    kv = kv_footprint(LLAMA, seq_len=seq_len, kv_dtype="bf16")
    spec = DeploymentSpec(engine="sglang", engine_version=release, gpu_memory_utilization=0.8, **deployment)
    settings = resolve_settings(spec, H100, 1)
    return settings, plan_engine(LLAMA, kv, H100, settings, weights_bytes_per_rank=16 * 2**30, sequences_per_replica=1)


def test_control_the_pool_binds_at_long_requests_not_the_cuda_graph_batch():
    """8,192-token requests: the pool holds some tens of them, far under 2,048; before, the graph batch (256) was the
    cap; it does not bind here either, so the admitted count is the pool's."""
    settings, plan = _plan(8192, "0.5.23")
    assert settings.cuda_graph_bs == 256 and settings.max_num_seqs == 4096  # the default's ceiling before the pool
    tokens = plan.kv_tokens
    assert plan.max_num_seqs == min(tokens // 2, max(min(int(tokens / 8192 * 512), 4096), 2048))
    assert plan.admitted_per_replica == int(plan.max_concurrency) < 256


def test_short_requests_are_capped_at_sglangs_default_not_the_graph_batch():
    """64-token requests on an H100 at 0.8: some 5,500 fit the pool; SGLang 0.5.23 runs 4,096 (the estimate's
    ceiling), where the graph batch, 256, was priced before; 0.5.9 alike."""
    for release in ("0.5.23", "0.5.9"):
        _, plan = _plan(64, release)
        assert plan.kv_tokens // 64 > 4096 and plan.max_num_seqs == 4096 == plan.admitted_per_replica
        assert any(f"SGLang {release}'s max_running_requests 4,096" in note for note in plan.notes)


def test_speculative_decoding_caps_at_48_and_a_given_cap_above_half_the_pool_is_cut_from_0_5_14():
    _, plan = _plan(64, "0.5.23", speculative=SPEC)
    assert plan.max_num_seqs == plan.admitted_per_replica == 48
    huge = 1_000_000
    _, newer = _plan(64, "0.5.14", max_num_seqs=huge)
    _, older = _plan(64, "0.5.13", max_num_seqs=huge)
    assert newer.max_num_seqs == newer.kv_tokens // 2
    assert older.max_num_seqs == 4096  # the estimate's ceiling


def test_a_pool_under_one_request_starts_and_aborts_longer_prompts(cli):
    """Gemma-3-27B at 33,280 tokens on one H100 under SGLang: 17,407 tokens of pool. SGLang raises "Not enough
    memory" only for a pool of none; here it starts, with max_req_len = min(33,280, 17,407) - 1 = 17,406 and
    max_req_input_len 5 under it, 17,401, and aborts every prompt that long or longer (``validate_input_length``;
    review 295 #2: the 5 were missed). It was refused as a start-up failure quoting that error
    (trial 294 #2). Control: a pool of none still would not start."""
    report = cli.json("kv", "gemma-3-27b-it", "--target", "h100", "--seq", "33280", "--engine", "sglang")
    engine = report["memory"]["engine"]
    assert engine["kv_tokens"] == 17_407 and not engine["starts"]
    assert "aborts every prompt of 17,401 tokens or more" in engine["refusal"]
    assert "Not enough memory" not in engine["refusal"]
    result = cli.run("plan", "gemma-3-27b-it", "--target", "h100", "--tp", "1", "--isl", "32768", "--osl", "512",
                     "--engine", "sglang", "--closed-form")  # fmt: skip
    assert result.exit_code == 2 and "sglang starts, but serves no request of this length" in result.output
    text = cli.run("kv", "gemma-3-27b-it", "--target", "h100", "--seq", "33280", "--engine", "sglang").output
    assert "no request fits" in text and "SGLang would log" in text
    none = cli.json("kv", "llama-3.1-70b", "--target", "h100", "--engine", "sglang", "--weight-dtype", "fp8")
    assert none["memory"]["engine"]["kv_tokens"] == 0
    assert none["memory"]["engine"]["refusal"].startswith("RuntimeError: Not enough memory")


def test_users_waiting_on_the_running_cap_are_told_so(cli):
    """SGLang's speculative decoding caps its running requests at 48 (0.4.5+), far below what its pool holds: the
    wait note read as if memory admitted 48 (newuser trial 302 #3). The cap and its flag are named; the control,
    --max-num-seqs 256, runs every user and says nothing of it."""
    args = ["plan", "llama-3.1-70b", "--target", "8xh100", "--tp", "8", "--concurrency", "128", "--draft",
            "llama-3.2-1b", "--num-speculative-tokens", "3", "--acceptance-length", "2.5", "--engine", "sglang",
            "--closed-form"]  # fmt: skip
    capped = cli.json(*args)
    assert capped["memory"]["engine"]["admitted_per_replica"] == 48
    assert any(note.startswith("the 48 request(s) run at once are sglang's running cap (max_running_requests)")
               for note in capped["notes"])  # fmt: skip
    lifted = cli.json(*args, "--max-num-seqs", "256")
    assert not any("running cap" in note for note in lifted["notes"])
