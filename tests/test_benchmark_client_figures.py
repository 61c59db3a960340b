"""A 2025 row that states its benchmark client has ALL its figures read off one run of that client simulated
(``benchmarks/fit_priors.py``, ``GenerationRow.simulated_figures``): mean TTFT, mean TPOT (the rows' ``itl_ms``) and
output tokens/s per GPU, as ``mha plan``'s "simulated serving loop" table prints them; a row stating none keeps the
closed form; the fit reaches the simulated figures by a fixed point (``fit_generation``), never simulating inside
its descent (priors_2025.md, simitl).

The hand-checkable case: ``vllm bench serve`` at ``--max-concurrency 8``, 16 prompts of exactly 1,000 + 20 tokens on
one H100 (llama-3-8b, vllm@0.15.1: 8,192 tokens a step). The run moves in two waves: 8 requests sent at t = 0, their
8,000 prompt tokens in one step, 19 decode steps of 8 together, all end, the next 8 are sent. Each request's TPOT is
the wave's 19 decode steps over 19; the closed form spreads the 7 others' prompts over every request's life.
"""

from __future__ import annotations

import math

import pytest

from mha_cli.core.cost.priors import prior_profile
from mha_cli.core.cost.serving import predict_serving
from mha_cli.core.serve.step_cost import StepCost

ISL, OSL, USERS, PROMPTS = 1000, 20, 8, 16


def hand_row(fit_priors, client: dict | None, index: int = 0):
    """A 2025 row as the fixture writes one: vLLM 0.15.1, llama-3-8b bf16 on one H100, 1,000 + 20 tokens, 8 users."""
    mha = {
        "use": True, "split": "fit", "generation": "vllm-v1", "source_id": "by-hand", "engine": "vllm",
        "target": "h100-sxm", "weight_dtype": "bf16", "kv_dtype": "bf16", "preset": "llama-3-8b", "isl": ISL,
        "osl": OSL, "tp": 1, "concurrency": USERS, "batching": "continuous",
        "measured": {"ttft_ms": 100.0, "itl_ms": 10.0, "tokens_per_s_per_gpu": 500.0},
    }  # fmt: skip
    if client is not None:
        mha["client"] = client
    return fit_priors.GenerationRow(index, {"url": "https://example.org", "engine_version": "0.15.1", "mha": mha})


def shipped(row):
    return prior_profile(row.target, row.weight_dtype, None, generation=row.generation, release=row.graph_release)


def test_equal_requests_in_two_waves_are_priced_by_hand_off_one_simulated_run(fit_priors, monkeypatch):
    row = hand_row(fit_priors, {"num_prompts": PROMPTS, "range_ratio": 0.0})
    assert (row.engine.max_num_batched_tokens, row.case.concurrency, row.case.replicas) == (8192, USERS, 1)
    assert row.engine.max_num_seqs >= USERS  # all 8 run at once: 8,000 prompt tokens fit one step's 8,192
    profile = shipped(row)
    cost = StepCost(row.stepper.on(profile))
    prompts = cost.seconds(0, 0, [(ISL, 0)] * USERS)  # one step: the wave's 8 prompts, no decode beside them
    decodes = sum(cost.decode_seconds(USERS, ISL + k) for k in range(OSL - 1))  # then 19 steps of 8 decodes
    wave = profile.request_overhead_s + prompts + decodes  # a wave: sent, front end, prompts, decodes
    calls = []
    real = fit_priors.simulate_deployment
    monkeypatch.setattr(fit_priors, "simulate_deployment", lambda *a, **k: calls.append(1) or real(*a, **k))
    found = row.predict(None)
    assert len(calls) == 1  # one run gives every figure
    assert found["itl_ms"] == pytest.approx(decodes / (OSL - 1) * 1e3, rel=1e-9)  # mean TPOT: the decodes alone
    assert found["tokens_per_s_per_gpu"] == pytest.approx(PROMPTS * OSL / (2 * wave), rel=1e-9)
    assert found["ttft_ms"] == pytest.approx((profile.request_overhead_s + prompts) * 1e3, rel=1e-9)
    closed = row.predict(None, simulated=False)
    # the closed form puts the 7 others' prompts in each request's life: its ITL is several times the waves' (2.67x
    # at the constants since rows7's refit, which price prompts at 0.42 of peak; over 3x at 0.2 before)
    assert closed["itl_ms"] > 2.5 * found["itl_ms"]
    assert closed["itl_ms"] == predict_serving(row.case, profile, row.ceiling, stepper=row.stepper.on(profile)).itl_ms


def test_a_row_stating_no_client_keeps_the_closed_form_for_every_figure(fit_priors, monkeypatch):
    row = hand_row(fit_priors, None)
    monkeypatch.setattr(fit_priors, "simulate_deployment", lambda *_a, **_k: pytest.fail("simulated"))
    profile = shipped(row)
    closed = predict_serving(row.case, profile, row.ceiling, stepper=row.stepper.on(profile))
    assert row.predict(None) == {
        "ttft_ms": closed.ttft_ms, "itl_ms": closed.itl_ms,
        "tokens_per_s_per_gpu": closed.output_tokens_per_s_per_gpu,
    }  # fmt: skip


def test_the_fits_loss_is_the_closed_form_times_each_client_rows_ratio_and_simulates_nothing(fit_priors, monkeypatch):
    stated = hand_row(fit_priors, {"num_prompts": PROMPTS, "range_ratio": 0.0}, index=1)
    plain = hand_row(fit_priors, None, index=2)
    ratios = fit_priors.client_ratios([stated, plain], dict(fit_priors.START))
    assert set(ratios) == {1}  # a row without a client has none: its closed form is its prediction
    run, closed = stated.predict(fit_priors.START), stated.predict(fit_priors.START, simulated=False)
    assert ratios[1] == {key: run[key] / closed[key] for key in ("itl_ms", "tokens_per_s_per_gpu")}
    assert ratios[1]["itl_ms"] < 0.6  # the waves' TPOT, well under the closed form's (0.55 at these constants)
    monkeypatch.setattr(fit_priors, "simulate_deployment", lambda *_a, **_k: pytest.fail("simulated in the loss"))
    loss = fit_priors.generation_loss([stated, plain], fit_priors.START, ratios=ratios)
    by_hand = []
    for row, scale in ((stated, ratios[1]), (plain, {})):
        for key, value in row.predict(fit_priors.START, ("itl_ms", "tokens_per_s_per_gpu"), simulated=False).items():
            by_hand.append(abs(math.log(value * scale.get(key, 1.0) / row.measured[key])))
    assert loss == pytest.approx(sum(by_hand) / 4, rel=1e-12)
    # with the ratios, the loss reads the simulated run's figures (the measured ones here are made up)
    assert loss == pytest.approx(
        sum(abs(math.log(run[k] / stated.measured[k])) for k in ratios[1]) / 4 + sum(by_hand[2:]) / 4, rel=1e-12
    )


def fixed_point(fit_priors, monkeypatch, fits: list[float]) -> tuple[dict, list[float]]:
    """``fit_generation`` with each descent returning the next of ``fits`` as its matmul efficiency: (what it
    returns, the matmul efficiency each round's ratios were simulated at)."""
    start = dict(fit_priors.START)
    simulated_at: list[float] = []
    answers = iter(fits)
    monkeypatch.setattr(
        fit_priors,
        "client_ratios",
        lambda rows, constants: simulated_at.append(constants["matmul_efficiency"]) or {7: {}},
    )
    monkeypatch.setattr(fit_priors, "fit", lambda rows, first, **_: first | {"matmul_efficiency": next(answers)})
    monkeypatch.setattr(fit_priors, "fit_prefill_launch", lambda rows, constants: constants)
    return fit_priors.fit_generation([], start), simulated_at


def test_the_fixed_point_refits_at_each_rounds_constants_until_none_moves_one_percent(fit_priors, monkeypatch):
    found, simulated_at = fixed_point(fit_priors, monkeypatch, [0.5, 0.4, 0.398, 0.1])
    # round 1 at the start, round 2 at 0.5 (moved 20%), round 3 at 0.4: 0.398 moved 0.5%, so it stops there
    assert simulated_at == [0.8, 0.5, 0.4]
    assert found["matmul_efficiency"] == 0.398


def test_the_fixed_point_stops_after_four_fits(fit_priors, monkeypatch, capsys):
    found, simulated_at = fixed_point(fit_priors, monkeypatch, [0.5, 0.25, 0.5, 0.25, 0.5])
    assert simulated_at == [0.8, 0.5, 0.25, 0.5]
    assert found["matmul_efficiency"] == 0.25
    assert "not reached in 4 rounds" in capsys.readouterr().out
