"""A simulated run whose latencies are a transient's says so (trial 289 #3, #4; ``core.cost.plan.transient_note``):
an open loop over its capacity whose default 200 requests never filled the engine read an ITL of 37.2 ms where the
closed form's steady state is 100.8 (2,000 requests: 100.1), and a closed loop of 10,000 users, one request each,
read a TTFT below its own roofline bound."""

from __future__ import annotations

import pytest

RATE = ("plan", "llama-3-8b", "--target", "h100", "--tp", "1", "--rate", "100", "--isl", "1024", "--osl", "128")


def test_an_open_loop_that_never_filled_the_engine_says_so_and_how_many_would(cli):
    found = cli.json(*RATE)
    simulated = found["simulated"]
    assert simulated["saturated"] and simulated["requests"] == simulated["max_running"] == 200
    note = next(note for note in found["notes"] if "never filled the engine" in note)
    assert "(at most 200 running where the closed form runs 378)" in note and note.endswith("--num-prompts 1890 for it")
    steady = cli.json(*RATE, "--num-prompts", "1890")  # 5 x 378, as the note says
    assert steady["simulated"]["max_running"] > 378
    assert steady["simulated"]["itl_ms"]["mean"] == pytest.approx(steady["itl_ms"], rel=0.05)  # the closed form's
    assert not any("never filled the engine" in note for note in steady["notes"])


def test_a_closed_loop_of_one_request_a_user_says_it_is_one_burst(cli):
    found = cli.json("plan", "llama-3-8b", "--target", "h100", "--tp", "1", "--isl", "1024", "--osl", "128",
                     "--concurrency", "10000")  # fmt: skip
    assert found["simulated"]["requests"] == 10_000
    assert any(note.startswith("each of the 10,000 users sent one request") for note in found["notes"])
    assert not any("one burst" in note for note in cli.json(*RATE[:6], "--concurrency", "64")["notes"])
