"""``plan --disaggregated``: the pick's load is one its simulated loop meets the targets at, so the splits table, the
verdict and the simulated line beside them agree.

Before, Llama-3.1-8B on 4 x H100 (4,096 in, 256 out, ITL <= 12 ms) picked 2 x tp1 prefill + 1 x tp2 decode at its
closed-form goodput, 17.38 req/s (1,112 tokens/s per GPU, "meets: yes"), beside its own simulated TPOT mean of
12.1 ms and a note that the loop missed. Ranking the splits by their simulated runs at the closed form's loads picks
1 x tp2 + 1 x tp2 (992 tokens/s per GPU, TPOT mean 11.2 ms), but that is no better: the same pick at 17.0 req/s
(1,088 tokens/s per GPU) meets in the loop (TPOT mean 11.94 ms). The search now lowers a split's load where its loop
misses to the most the loop meets the targets at, by bisection (``core.cost.disaggregated_confirm``).

Since vLLM V1's constants price a plan without --engine (2026-12-08), the same plan at ITL <= 12 ms is bound by its
prefill workers, its loop well within the target; the scenario is at ITL <= 7 ms: 1 x tp2 prefill + 1 x tp2 decode
at its closed-form goodput, 10.68 req/s, runs a TPOT mean of 7.02 ms in its loop."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from mha_cli.cli.app import app
from mha_cli.core.cost.disaggregated import Split
from mha_cli.core.cost.disaggregated_confirm import HALVINGS, confirm_splits
from mha_cli.core.serve.disaggregated import SimulatedSplit
from mha_cli.core.serve.stats import LatencyStats

ARGS = ["plan", "llama-3.1-8b", "--target", "4xh100", "--disaggregated", "--isl", "4096", "--osl", "256", "--itl-ms",
        "7"]  # fmt: skip


def _plan(*more: str) -> dict:
    result = CliRunner().invoke(app, [*ARGS, *more, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _workers(split: dict) -> tuple[int, int, int, int]:
    return split["prefill_workers"], split["prefill_tp"], split["decode_workers"], split["decode_tp"]


def test_the_pick_runs_at_a_load_its_simulated_loop_meets():
    found = _plan()
    pick, simulated = found["splits"][found["chosen"]], found["simulated"]
    assert _workers(pick) == (1, 2, 1, 2)
    assert pick["meets_targets"] and simulated["tpot_ms"]["mean"] <= 7.0  # before: 7.02 at 10.68 req/s
    assert simulated["rate_rps"] == pick["rate_rps"]  # the row and the simulated line are one load
    # lowered from the closed form's goodput, 10.68 req/s, by bisection (within 10.68 / 2**8 of the most it meets)
    assert pick["goodput_rps"] > pick["rate_rps"] >= 10.5
    assert pick["output_tokens_per_s_per_gpu"] == pick["rate_rps"] * 256 / 4
    below = found["splits"][found["chosen"] + 1]  # the next, lowered too, sells less
    assert pick["output_tokens_per_s_per_gpu"] > below["output_tokens_per_s_per_gpu"]
    assert not [note for note in found["notes"] if note.startswith("the pick's simulated loop misses")]
    lowered = [note for note in found["notes"] if note.startswith("the pick's simulated loop missed")]
    assert lowered and "10.7 req/s" in lowered[0] and f"{pick['rate_rps']:.3g} req/s" in lowered[0]
    assert "mean TPOT 7.02 ms > 7 ms" in lowered[0]  # to the decimal that shows the miss ("7.0 > 7.0" before)


def test_the_closed_form_alone_keeps_the_closed_form_pick():
    found = _plan("--closed-form")
    pick = found["splits"][found["chosen"]]
    assert found["simulated"] is None and pick["rate_rps"] == pick["goodput_rps"]
    assert round(pick["rate_rps"], 2) == 10.68  # 17.38 at ITL 12 ms on the default constants


def test_at_a_fixed_rate_a_split_its_loop_misses_is_not_picked():
    """At --rate 10.6 req/s the same split's loop misses the ITL (TPOT mean 7.01 ms); the load is the user's, so it
    is not lowered: the split misses, and no other split serves 10.6 req/s within 7 ms. Before: picked, "yes"."""
    found = _plan("--rate", "10.6")
    top = found["splits"][0]
    assert _workers(top) == (1, 2, 1, 2)
    assert not top["meets_targets"] and top["rate_rps"] == 10.6
    assert top["misses"] == ["itl (simulated: mean TPOT 7.01 ms > 7 ms (p99 7.2 ms))"]
    assert found["chosen"] is None and found["simulated"] is None and found["winner"] == "neither"
    assert any("the pick is confirmed in the simulated loop" in note for note in found["notes"])


def _split(tokens_per_gpu: float) -> Split:
    """A split on 4 GPUs, 100 tokens out a request, at the load that sells ``tokens_per_gpu``."""
    rate = tokens_per_gpu * 4 / 100
    return Split(prefill_tp=1, prefill_workers=1, decode_tp=1, decode_workers=1, prefill_dp=1, decode_dp=1, gpus=4,
                 goodput_rps=rate, bottleneck="decode", prefill_pool_rps=rate, decode_pool_rps=rate, rate_rps=rate,
                 ttft_ms=100.0, queue_ms=0.0, prefill_ms=50.0, transfer_ms=1.0, itl_ms=10.0, decode_batch=8,
                 output_tokens_per_s_per_gpu=tokens_per_gpu, meets_targets=True)  # fmt: skip


def _loop(split: Split, rate: float) -> SimulatedSplit:
    """A loop whose TPOT mean is 11 ms, but for the split of 40 req/s: 10 ms + 1 ms per req/s past 20."""
    tpot = 10.0 + max(0.0, rate - 20.0) if split.goodput_rps == 40 else 11.0
    stats = LatencyStats(mean=tpot, median=tpot, p90=tpot, p99=tpot)
    return SimulatedSplit(requests=1, rate_rps=rate, ttft_ms=stats, tpot_ms=stats, duration_s=1.0, max_running=1)


def _at_load(split: Split, rate: float) -> Split:
    return split.model_copy(update={"rate_rps": rate, "output_tokens_per_s_per_gpu": rate * 100 / split.gpus})


def test_a_split_lowered_below_the_next_gives_the_pick_to_it():
    """Split A (1,000 tokens/s per GPU at 40 req/s) meets ITL <= 11 ms in its loop only up to 21 req/s (525 tokens/s
    per GPU); B (800) and C (600) meet at their loads. B is picked; C, which cannot beat B, is never run."""
    ran: list[float] = []

    def run(split: Split, rate: float) -> SimulatedSplit:
        ran.append(rate)
        return _loop(split, rate)

    a, b, c = _split(1000), _split(800), _split(600)
    found = confirm_splits([a, b, c], run, _at_load, ttft_ms=None, itl_ms=11.0, fixed_rate=False)
    assert found.chosen == 0 and found.splits[:2] == [b, c] and found.simulated.rate_rps == 32
    lowered = found.splits[2]  # A, at the most load its loop meets (bisection: within 40 / 2**8 of 21 req/s)
    assert lowered.meets_targets and 21 - 40 / 2**HALVINGS <= lowered.rate_rps <= 21
    assert lowered.output_tokens_per_s_per_gpu == lowered.rate_rps * 100 / 4 < 800
    assert ran[0] == 40 and ran[-1] == 32 and len(ran) == 1 + HALVINGS + 1  # A, its bisection, B; never C (24)


def test_a_split_whose_loop_misses_at_every_load_tried_is_not_picked():
    """The edge of the bisection: A's loop misses ITL <= 11 ms (TPOT mean 20 ms) at every load down to 40 / 2**8
    req/s, so A is not lowered but marked missed at its closed-form load, with the loop's figures; B, next, meets at
    its own load and is the pick. With no split left that meets, there is no pick."""
    ran: list[float] = []

    def run(split: Split, rate: float) -> SimulatedSplit:
        ran.append(rate)
        tpot = 20.0 if split.goodput_rps == 40 else 10.0
        stats = LatencyStats(mean=tpot, median=tpot, p90=tpot, p99=tpot)
        return SimulatedSplit(requests=1, rate_rps=rate, ttft_ms=stats, tpot_ms=stats, duration_s=1.0, max_running=1)

    a, b = _split(1000), _split(800)
    found = confirm_splits([a, b], run, _at_load, ttft_ms=None, itl_ms=11.0, fixed_rate=False)
    assert ran == [40, *(40 / 2**k for k in range(1, HALVINGS + 1)), 32]  # A, its 8 halvings to 0.156, then B
    assert found.chosen == 0 and found.splits[0] is b and found.simulated.rate_rps == 32 and found.notes == []
    missed = found.splits[1]
    assert not missed.meets_targets and missed.rate_rps == 40  # not lowered: no load tried met the target
    assert missed.misses == ["itl (simulated: mean TPOT 20.0 ms > 11 ms (p99 20.0 ms))"]
    alone = confirm_splits([a], run, _at_load, ttft_ms=None, itl_ms=11.0, fixed_rate=False)
    assert alone.chosen is None and alone.simulated is None and not alone.splits[0].meets_targets


def test_the_splits_footnote_says_which_rows_the_loop_decided():
    """At --itl-ms 7 the closed form's two best splits (1 x tp2 prefill + 1 x tp2 decode, and 2 x tp1 + 1 x tp2, both
    10.68 req/s) miss in their loops and are lowered, to 10.52 and 10.39 req/s: the first is picked and the row the
    loop lowered too is listed below it. The footnote said "(the pick, and any split above it)" and "req/s: the
    pick's load": no row sat above the pick, and the row below it was lowered too. (At --itl-ms 11 on the default
    constants, which priced a plan without --engine before 2026-12-08.)"""
    args = ARGS
    found = json.loads(CliRunner().invoke(app, [*args, "--json"]).stdout)
    pick, below = found["splits"][0], found["splits"][1]
    assert found["chosen"] == 0 and (pick["prefill_workers"], pick["prefill_tp"]) == (1, 2)
    assert _workers(below) == (2, 1, 1, 2)
    assert below["meets_targets"] and below["rate_rps"] < below["goodput_rps"]  # run by the loop, lowered, below
    shown = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.stdout.split())
    assert (
        "meets: the simulated loop's verdict for the splits it ran (in the closed form's order while one could beat"
        " the best it confirmed; the pick among them), else the closed form's; req/s: where a split's loop missed the"
        " targets at the closed form's goodput, the most load it meets them at; at --rate, what its pools serve of it"
        " ('grows' for a TTFT whose queue has no end)" in text
    )


def test_a_value_past_its_target_is_printed_to_the_decimal_that_shows_it():
    """Review 408 #10: the miss read "2,000 ms > 2,000 ms" for 1,999.6 past 1,999.5 (now "> 1,999.5", the target as
    typed), "20.8 > --itl-ms 20.8" for a p99
    of 20.83, "7.0 > 7.0" for 7.003: the value gets the decimals its target, as typed, needs beside it."""
    from mha_cli.core.quantities import format_ms, format_past

    for value, target, places, said in ((1999.6, 1999.5, 0, "2,000"), (20.83, 20.8, 1, "20.83"),
                                         (2000.3, 2000, 0, "2,000.3"), (7.003, 7, 1, "7.003"), (28.47, 28.4, 1, "28.5"),
                                         (5415.2, 2000, 0, "5,415")):  # fmt: skip
        assert format_past(value, target, places) == said
        assert float(said.replace(",", "")) > float(format_ms(target).replace(",", ""))
