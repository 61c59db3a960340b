"""The parts every experiment stands on: the no-attention control, the n-gram floor, seed spreads,
worker processes and the learning-rate schedule. Exact values, computed by hand or by brute force."""

from __future__ import annotations

import math
import time
from collections import Counter

import pytest
import torch

from mha_cli.core.schemas import ModelSpec
from mha_cli.experiments import jobs as jobs_module
from mha_cli.experiments.common import report_header, train_all
from mha_cli.experiments.data import IGNORE_INDEX
from mha_cli.experiments.jobs import default_workers, run_jobs, workers_for
from mha_cli.experiments.lm import build_lm
from mha_cli.experiments.ngram import KneserNey
from mha_cli.experiments.seeds import chance_apart, clearly_below, seed_spread
from mha_cli.experiments.train import TrainSettings, block_means
from tests.children import living_children

TINY = ModelSpec(name="tiny", d_model=32, n_layers=2, n_heads=4, vocab_size=40, d_ff=64)


def test_without_attention_a_position_sees_only_its_own_token():
    torch.manual_seed(0)
    bare = build_lm(TINY, attention=False)
    tokens = torch.randint(0, 40, (2, 9))  # (b, s)
    changed = tokens.clone()
    changed[:, :4] = (changed[:, :4] + 1) % 40  # earlier tokens differ, the last five do not
    with torch.no_grad():
        assert torch.equal(bare(tokens)[:, 4:], bare(changed)[:, 4:])
        full = build_lm(TINY)
        assert not torch.allclose(full(tokens)[:, 4:], full(changed)[:, 4:])  # the control: attention looks back


def _grams(text: bytes, k: int) -> Counter:
    return Counter(text[i : i + k] for i in range(len(text) - k + 1))


def _discount(counts: Counter) -> float:
    n1 = sum(1 for c in counts.values() if c == 1)
    n2 = sum(1 for c in counts.values() if c == 2)
    return n1 / (n1 + 2 * n2)


def _level(counts: Counter, h: bytes, w: bytes, lower: float) -> float:
    """One interpolation step of the formula, written out: counts of grams h + w."""
    d = _discount(counts)
    after = {g: c for g, c in counts.items() if g[:-1] == h}
    total = sum(after.values())
    return max(after.get(h + w, 0) - d, 0) / total + d * len(after) / total * lower


TEXT = b"abcabdabcabxab"


def test_kneser_ney_order_3_matches_the_formula_written_out():
    model = KneserNey(torch.tensor(list(TEXT)), order=3)
    continuation_1 = Counter(g[1:] for g in _grams(TEXT, 2))  # distinct bytes before each byte
    continuation_2 = Counter(g[1:] for g in _grams(TEXT, 3))  # distinct bytes before each bigram
    for w in (b"c", b"d", b"x", b"z"):
        p1 = _level(continuation_1, b"", w, 1 / 256)
        p2 = _level(continuation_2, b"b", w, p1)
        p3 = _level(_grams(TEXT, 3), b"ab", w, p2)  # the top order: raw counts
        assert model.probability(b"zzab", w[0]) == pytest.approx(p3, rel=1e-12)
        # a one-byte context: the top order in use is 2, with raw bigram counts
        assert model.probability(b"b", w[0]) == pytest.approx(_level(_grams(TEXT, 2), b"b", w, p1), rel=1e-12)


@pytest.mark.parametrize("order", [2, 3, 4])
def test_kneser_ney_probabilities_sum_to_one(order):
    model = KneserNey(torch.tensor(list(TEXT * 3)), order=order)
    for context in (b"ab", b"cab", b"zz", b"zab", b"a", b"xq"):  # seen, unseen, short contexts
        assert sum(model.probability(context, w) for w in range(256)) == pytest.approx(1.0, abs=1e-12)


def test_kneser_ney_bits_score_only_targets_and_higher_orders_fit_repeats_better():
    text = torch.tensor(list(b"the cat sat on the mat. " * 20))
    inputs, targets = text[:-1].reshape(1, -1)[:, :40], text[1:].reshape(1, -1)[:, :40].clone()
    targets[:, :10] = IGNORE_INDEX
    bits = [KneserNey(text, order).bits(inputs, targets) for order in (1, 2, 4)]
    assert bits[0] > bits[1] > bits[2] > 0
    uniform = KneserNey(torch.tensor([0]), 1)  # one byte seen once: D = 1, P(anything) = the uniform floor
    assert uniform.discount[1] == 1.0 and uniform.probability(b"", 7) == pytest.approx(1 / 256)


def test_seed_spread_and_when_two_figures_are_apart():
    spread = seed_spread([2.0, 2.5, 3.0])
    assert (spread.mean, spread.low, spread.high, spread.range) == (2.5, 2.0, 3.0, 1.0)
    assert spread.std == pytest.approx(0.5)
    assert clearly_below(seed_spread([1.0, 1.9]), spread)
    assert not clearly_below(seed_spread([1.0, 2.0]), spread)  # touching ranges overlap
    assert chance_apart(3, 3) == pytest.approx(0.1)
    with pytest.raises(ValueError):
        seed_spread([])


def _square(x: int) -> int:
    return x * x


def test_jobs_give_the_same_results_in_order_with_any_worker_count():
    seen: list[int] = []
    assert run_jobs(_square, [3, 1, 2], workers=1, on_done=seen.append) == [9, 1, 4] == seen
    seen.clear()
    assert run_jobs(_square, [3, 1, 2], workers=2, on_done=seen.append) == [9, 1, 4]
    assert sorted(seen) == [1, 4, 9]
    assert default_workers(torch.device("meta")) == 1
    assert 1 <= default_workers(torch.device("cpu")) <= 2


def test_workers_asked_past_the_usable_cores_are_capped_and_said(monkeypatch):
    """``--workers 12`` on 2 cores started 12 torch processes (135 s against 19 s with 2): the count is capped at the
    usable cores (a fake count here, no process started) and the cap said; an ask within them is kept."""
    cpu = torch.device("cpu")
    monkeypatch.setattr(jobs_module, "usable_cores", lambda: 2)
    capped = workers_for(12, cpu, jobs=12)
    assert (capped.asked, capped.used, capped.cores) == (12, 2, 2)
    assert capped.said == "12 asked, 2 used: 2 usable cores"
    kept = workers_for(2, cpu, jobs=12)
    assert (kept.used, kept.said) == (2, "2 workers")
    assert workers_for(None, cpu, jobs=12).said == "2 workers"  # the default: the cores, at most 2
    assert workers_for(8, cpu, jobs=1).said == "8 asked, 1 used: 1 training"
    monkeypatch.setattr(jobs_module, "usable_cores", lambda: 1)
    assert workers_for(4, cpu, jobs=3).said == "4 asked, 1 used: 1 usable core"


def test_the_report_and_results_say_how_many_workers_ran_of_those_asked(monkeypatch):
    monkeypatch.setattr(jobs_module, "usable_cores", lambda: 1)
    results, environment = train_all("parts", _square, [3, 1, 2], seed=0, device=torch.device("cpu"), workers=3)
    assert results == [9, 1, 4]  # one process: the same results, in order
    assert (environment.workers, environment.workers_asked, environment.usable_cores) == (1, 3, 1)
    header = report_header("Parts", "mha experiment parts", environment)
    assert "1 worker process (3 asked, 1 used: 1 usable core)," in header


def _sleep_or_fail(seconds: float) -> float:
    if seconds < 0:
        raise ValueError("this job failed")
    time.sleep(seconds)
    return seconds


def test_a_failing_job_ends_the_run_without_waiting_for_the_others():
    started = time.perf_counter()
    with pytest.raises(ValueError, match="this job failed"):
        run_jobs(_sleep_or_fail, [120.0, -1.0, 120.0], workers=2)
    assert time.perf_counter() - started < 60  # the 120 s jobs were terminated, not waited for
    assert living_children() == []


def test_cosine_schedule_warms_up_then_decays_to_its_floor():
    flat = TrainSettings(steps=100, learning_rate=1.0, warmup_steps=10)
    assert [flat.lr_factor(i) for i in (0, 9, 50, 99)] == [0.1, 1.0, 1.0, 1.0]  # the default stays constant
    decay = TrainSettings(steps=110, learning_rate=1.0, warmup_steps=10, final_lr_fraction=0.1)
    assert decay.lr_factor(10) == pytest.approx(1.0)
    assert decay.lr_factor(60) == pytest.approx(0.55)  # half way: the cosine is at its middle
    assert decay.lr_factor(110) == pytest.approx(0.1)
    assert all(decay.lr_factor(i) >= decay.lr_factor(i + 1) for i in range(10, 110))
    assert math.isclose(decay.lr_factor(0), 0.1)


def test_training_curves_are_block_means():
    assert block_means([1.0, 2.0, 3.0, 4.0, 5.0], 2) == [1.5, 3.5, 5.0]  # the last block is shorter
    assert len(block_means([0.0] * 1500)) == 150


def test_the_usable_cores_where_the_platform_has_no_affinity_are_the_machine_s(monkeypatch):
    """Where ``os.sched_getaffinity`` is missing (macOS, Windows), the cap is ``os.cpu_count()``, and 1 where even
    that is unknown: ``--workers 12`` then runs on what the machine has, and says so."""
    import os

    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 3)
    assert jobs_module.usable_cores() == 3
    assert workers_for(12, torch.device("cpu"), jobs=12).said == "12 asked, 3 used: 3 usable cores"
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert jobs_module.usable_cores() == 1
    assert workers_for(None, torch.device("cpu"), jobs=12).used == 1


def test_a_worker_ends_silently_on_the_pools_sigterm_and_leaves_ctrl_c_to_the_parent():
    """A spawned worker inherited the console's quiet-exit handler: pool.terminate's SIGTERM printed "error: stopped
    by SIGTERM" once per worker beside the parent's "error: interrupted" (newuser trial 241)."""
    import subprocess
    import sys

    code = (
        "import signal; from mha_cli.cli.signals import install_quiet_exit; install_quiet_exit();"
        " from mha_cli.experiments.jobs import _ignore_interrupts; _ignore_interrupts();"
        " print(signal.getsignal(signal.SIGTERM) == signal.SIG_DFL, signal.getsignal(signal.SIGINT) == signal.SIG_IGN)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "True"]
