"""The parts every experiment stands on: the no-attention control, the n-gram floor, seed spreads,
worker processes and the learning-rate schedule. Exact values, computed by hand or by brute force."""

from __future__ import annotations

import math
from collections import Counter

import pytest
import torch

from mha_cli.core.schemas import ModelSpec
from mha_cli.experiments.data import IGNORE_INDEX
from mha_cli.experiments.jobs import default_workers, run_jobs
from mha_cli.experiments.lm import build_lm
from mha_cli.experiments.ngram import KneserNey
from mha_cli.experiments.seeds import chance_apart, clearly_below, seed_spread
from mha_cli.experiments.train import TrainSettings

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


def test_kneser_ney_probabilities_sum_to_one_and_match_the_formula():
    text = torch.tensor(list(b"abracadabra abracadabra"))
    model = KneserNey(text, order=2)
    for context in (b"a", b"r", b"z", b""):
        assert sum(model.probability(context, w) for w in range(256)) == pytest.approx(1.0, abs=1e-12)
    # Order 2 by hand: P(b | a) = max(c(ab) - D2, 0) / c(a.) + D2 * T(a.) / c(a.) * P1(b)
    bigrams = Counter(bytes(text[i : i + 2].tolist()) for i in range(len(text) - 1))
    after_a = {g: c for g, c in bigrams.items() if g[:1] == b"a"}
    n1 = sum(1 for c in bigrams.values() if c == 1)
    n2 = sum(1 for c in bigrams.values() if c == 2)
    d2 = n1 / (n1 + 2 * n2)
    continuation = Counter(g[1:] for g in bigrams)  # distinct bytes before each byte
    c1 = sum(1 for c in continuation.values() if c == 1)
    c2 = sum(1 for c in continuation.values() if c == 2)
    d1 = c1 / (c1 + 2 * c2)
    total_1 = sum(continuation.values())
    p1_b = max(continuation[b"b"] - d1, 0) / total_1 + d1 * len(continuation) / total_1 / 256
    total_a = sum(after_a.values())
    expected = max(after_a[b"ab"] - d2, 0) / total_a + d2 * len(after_a) / total_a * p1_b
    assert model.probability(b"xa", ord("b")) == pytest.approx(expected, rel=1e-12)


def test_kneser_ney_bits_score_only_targets_and_higher_orders_fit_repeats_better():
    text = torch.tensor(list(b"the cat sat on the mat. " * 20))
    inputs, targets = text[:-1].reshape(1, -1)[:, :40], text[1:].reshape(1, -1)[:, :40].clone()
    targets[:, :10] = IGNORE_INDEX
    bits = [KneserNey(text, order).bits(inputs, targets) for order in (1, 2, 4)]
    assert bits[0] > bits[1] > bits[2] > 0
    uniform = KneserNey(torch.tensor([0]), 1)  # one byte seen: P(anything else) from the uniform floor only
    assert uniform.probability(b"", 7) == pytest.approx(uniform.discount[1] / 256)


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


def test_cosine_schedule_warms_up_then_decays_to_its_floor():
    flat = TrainSettings(steps=100, learning_rate=1.0, warmup_steps=10)
    assert [flat.lr_factor(i) for i in (0, 9, 50, 99)] == [0.1, 1.0, 1.0, 1.0]  # the default stays constant
    decay = TrainSettings(steps=110, learning_rate=1.0, warmup_steps=10, final_lr_fraction=0.1)
    assert decay.lr_factor(10) == pytest.approx(1.0)
    assert decay.lr_factor(60) == pytest.approx(0.55)  # half way: the cosine is at its middle
    assert decay.lr_factor(110) == pytest.approx(0.1)
    assert all(decay.lr_factor(i) >= decay.lr_factor(i + 1) for i in range(10, 110))
    assert math.isclose(decay.lr_factor(0), 0.1)
