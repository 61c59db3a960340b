"""A 2025 row that states its benchmark client has its TTFT read off that client's run simulated
(``benchmarks/fit_priors.py``, ``GenerationRow.simulated_ttft_ms``), not the closed form's steady state.

- The client blocks say what each row's notes say (prompts, concurrency, how lengths were drawn).
- A burst, counted by hand: ``vllm bench serve --request-rate inf --max-concurrency 512`` with 400 prompts sends all
  400 at t = 0; with 8,192 tokens a step and 2,048-token prompts the i-th prompt (from 0) ends no earlier than step
  ceil((i + 1) / 4), so the mean TTFT is about 50 prompt steps, where the closed form prices one.
- A row stating no client keeps the closed form's TTFT.
"""

from __future__ import annotations

import math
import re

import pytest

from mha_cli.core.cost.priors import prior_profile
from mha_cli.core.cost.serving import predict_serving
from mha_cli.core.cost.work import decode_shape, prefill_shape
from tests.benchmark_modules import load_benchmark


@pytest.fixture(scope="module")
def fit_priors():
    return load_benchmark("fit_priors")


@pytest.fixture(scope="module")
def rows(fit_priors):
    return fit_priors.load_generation_rows()


def shipped_profile(row):
    return prior_profile(row.target, row.weight_dtype, None, generation=row.generation, release=row.release)


def test_the_client_blocks_say_what_the_rows_notes_say(fit_priors):
    import yaml

    raw = yaml.safe_load(fit_priors.ROWS_2025_FILE.read_text())
    stated = [row for row in raw if "client" in row.get("mha", {})]
    assert len(stated) == 31  # InferenceX's 22 H100 rows and Vultr's 9 B200 rows
    for row in stated:
        mha, client = row["mha"], row["mha"]["client"]
        notes = " ".join(str(row["notes"]).split())
        if mha["source_id"].startswith("inferencex-issue-828/"):
            prompts, users = map(int, re.search(r"(\d+) prompts at --max-concurrency (\d+)", notes).groups())
            assert (client["num_prompts"], mha["concurrency"]) == (prompts, users)
            # InferenceX draws each length from [int(0.8 L), L]: 819-1,024 and 6,553-8,192 around the means recorded
            for nominal, mean in ((1024, 922), (8192, 7373)):
                low, high = (
                    math.floor(mean * (1 - client["range_ratio"])),
                    math.ceil(mean * (1 + client["range_ratio"])),
                )
                assert abs(low - int(0.8 * nominal)) <= 1 and abs(high - nominal) <= 1
        else:
            assert "50 prompts at c=1, 400 above" in notes
            assert client["num_prompts"] == (50 if mha["concurrency"] == 1 else 400)
            assert client["range_ratio"] == 0.0  # vllm bench serve's default: every prompt 2,048, every output 512


def test_a_burst_of_400_prompts_waits_about_50_prompt_steps_by_hand(fit_priors, rows):
    row = next(r for r in rows if r.source.startswith("vultr-b200") and r.case.concurrency == 512)
    assert (row.client.num_prompts, row.case.isl, row.case.osl) == (400, 2048, 512)
    budget = row.engine.max_num_batched_tokens
    assert budget == 8192  # vllm serve's default on a GPU of >= 70 GiB
    profile = shipped_profile(row)
    stepper = row.stepper.on(profile)
    # a step of the first wave: at least 8,192 - 400 prompt tokens (the decodes take the rest of the budget) ...
    least = stepper.step(prefill_shape(2048, sequences=3), prefill_shape(1648)).seconds
    # ... at most 8,192 prompt tokens beside 400 decodes at the longest context
    most = stepper.step(prefill_shape(2048, sequences=4), decode_shape(400, 2048 + 512)).seconds
    # all 400 sent at t = 0 (400 < 512 users); request i's prompt ends after ceil((i + 1) x 2,048 / 8,192) steps at
    # the soonest (the step it ends in may be short, so one fewer full step is counted) and ceil((i + 1) x 2,048 /
    # 7,792) at the latest; 512 output tokens outlast the wave's ~100 steps, so no request ends before all started
    soonest = sum(math.ceil((i + 1) * 2048 / budget) - 1 for i in range(400)) / 400
    latest = sum(math.ceil((i + 1) * 2048 / (budget - 400)) for i in range(400)) / 400
    assert (soonest, latest) == (49.5, pytest.approx(53.20, abs=0.01))
    front_end = profile.request_overhead_s
    ttft = row.predict(None)["ttft_ms"] / 1e3
    assert front_end + soonest * least <= ttft <= front_end + latest * most
    closed = predict_serving(row.case, profile, None, stepper=stepper).ttft_ms / 1e3
    assert closed < front_end + 2 * most  # the steady state: one prompt step and a short wait, not the burst


def test_a_lone_users_simulated_ttft_is_the_closed_forms(rows):
    """One user, 50 prompts: nothing to queue behind, so the run's TTFT is the prompt's steps and the front end."""
    row = next(r for r in rows if r.source.startswith("vultr-b200") and r.case.concurrency == 1)
    profile = shipped_profile(row)
    closed = predict_serving(row.case, profile, None, stepper=row.stepper.on(profile))
    # the closed form adds half a decode step (an arrival mid-step); a lone user's send finds the engine idle
    assert row.predict(None)["ttft_ms"] == pytest.approx(
        closed.ttft_ms - closed.decode_step.seconds * 1e3 / 2, rel=0.02
    )


def test_a_row_stating_no_client_keeps_the_closed_form(rows):
    row = next(r for r in rows if r.client is None and "ttft_ms" in r.measured)
    profile = shipped_profile(row)
    closed = predict_serving(row.case, profile, None, stepper=row.stepper.on(profile))
    assert row.predict(None)["ttft_ms"] == closed.ttft_ms


def test_the_fit_figures_are_priced_without_the_simulation(rows, monkeypatch):
    """The step fit reads ITL and tokens/s only (``generation_loss``): no simulated run in its loop."""
    row = next(r for r in rows if r.client is not None)
    monkeypatch.setattr(type(row), "simulated_ttft_ms", lambda *_: pytest.fail("simulated in the fit's loop"))
    assert set(row.predict(None, ("itl_ms", "tokens_per_s_per_gpu"))) == {"itl_ms", "tokens_per_s_per_gpu"}
