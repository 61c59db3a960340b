"""A search's JSON says what its front table says: a point the closed form passes but a simulated run of its layout at
no more users missed is marked ``ruled_out_by`` (the table's "no: p99 itl at 12"). The JSON had ``meets_targets:
true`` there, and a script taking the best such point got a deployment the search rejected, at 916 tokens/s per GPU
against the pick's 239 (found by newuser trial 230); the plot drew it as meeting the targets."""

import pytest

from tests.conftest import Cli

LAYOUT = ("tp", "pp", "replicas")


@pytest.fixture(scope="module")
def searched():
    return Cli().json("plan", "llama-3-8b", "--target", "4xa100", "--isl", "2048", "--osl", "256",
                           "--ttft-ms", "500", "--itl-ms", "30")  # fmt: skip


def test_each_ruling_names_a_simulated_miss_of_its_layout_at_no_more_users(searched):
    candidates = searched["candidates"]
    ruled = [(i, c["ruled_out_by"]) for i, c in enumerate(candidates) if c["ruled_out_by"] is not None]
    assert ruled  # this search rules points out: the check below is not empty
    for index, by in ruled:
        point, run = candidates[index], candidates[by]
        assert point["meets_targets"] and point["simulated"] is None
        assert run["simulated"] is not None and not run["meets_targets"] and run["misses"]
        assert [run["deployment"][k] for k in LAYOUT] == [point["deployment"][k] for k in LAYOUT]
        assert run["concurrency"] <= point["concurrency"]


def test_the_best_point_the_json_passes_is_the_pick(searched):
    candidates = searched["candidates"]
    passing = [i for i, c in enumerate(candidates) if c["meets_targets"] and c["ruled_out_by"] is None]
    best = max(candidates[i]["output_tokens_per_s_per_gpu"] for i in passing)
    assert best == candidates[searched["chosen"]]["output_tokens_per_s_per_gpu"]
    ruled_best = max(c["output_tokens_per_s_per_gpu"] for c in candidates if c["ruled_out_by"] is not None)
    assert ruled_best > best  # what a script reading meets_targets alone took
