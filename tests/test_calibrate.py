"""``mha calibrate`` and the profiles it writes: the fit's arithmetic on known timings, the store's refusals, one real
run on this CPU, and verify predicting with the profile it wrote."""

from __future__ import annotations

import json

import pytest

from mha_cli.core.cost.calibration import Sample, profile_from_samples
from mha_cli.core.cost.store import load_profile, read_profile
from mha_cli.core.errors import BadInputError

DISPATCH_S = 5e-6


def _synthetic_samples() -> list[Sample]:
    """Timings of a device with exactly 10 GB/s of weight bandwidth, 4 GB/s of cache bandwidth, 100 GFLOP/s,
    5 us per operator, and an all-reduce of 50 us + bytes at 2 GB/s over 4 ranks."""
    samples = [Sample(kind="dispatch", size=300, work=0.0, seconds=300 * DISPATCH_S, dispatches=300)]
    for size in (2**20, 2**24):
        samples.append(Sample(kind="weight", size=size, work=size, seconds=DISPATCH_S + size / 10e9))
        samples.append(Sample(kind="cache", size=size, work=size, seconds=DISPATCH_S + size / 4e9))
    for rows in (1, 64):
        flops = 2.0 * rows * 2048 * 2048
        samples.append(Sample(kind="matmul", size=rows, work=flops, seconds=DISPATCH_S + flops / 100e9))
        samples.append(Sample(kind="attention", size=rows, work=flops, seconds=DISPATCH_S + flops / 50e9))
    for size in (4096, 2**20, 2**24):
        samples.append(
            Sample(kind="all_reduce", size=size, work=size, seconds=50e-6 + 1.5 * size / 2e9, ranks=4)
        )  # 2 (n - 1) / n = 1.5 at n = 4
    return samples


def test_the_fit_recovers_the_rates_and_fixed_costs_it_was_given():
    profile = profile_from_samples(
        _synthetic_samples(), name="t", device="cpu", device_name="test cpu", dtype="fp32", created="now", link="gloo"
    )
    assert profile.dispatch_overhead_s == pytest.approx(DISPATCH_S)
    assert profile.weight_bandwidth.rates == pytest.approx([10e9, 10e9])
    assert profile.cache_bandwidth.rates == pytest.approx([4e9, 4e9])
    assert profile.matmul.rates == pytest.approx([100e9, 100e9])
    assert profile.attention_flops.rates == pytest.approx([50e9, 50e9])
    assert profile.collective.latency_s == pytest.approx(50e-6)
    assert profile.collective.bandwidth_bytes_per_s == pytest.approx(2e9)
    assert profile.kind == "calibrated" and "PRIOR" in profile.constants["step_overhead_s"]


def test_a_fit_without_a_kind_of_measurement_says_which(tmp_path):
    samples = [s for s in _synthetic_samples() if s.kind != "cache"]
    with pytest.raises(Exception, match="no cache measurement"):
        profile_from_samples(samples, name="t", device="cpu", device_name="x", dtype="fp32", created="now", link="")


def test_bad_profiles_are_one_line_refusals(tmp_path, monkeypatch):
    monkeypatch.setenv("MHA_DATA_DIR", str(tmp_path))
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(BadInputError, match="not a profile JSON file"):
        read_profile(broken)
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"name": "x"}))
    with pytest.raises(BadInputError, match="not a valid profile"):
        read_profile(wrong)
    with pytest.raises(BadInputError, match="no profile named 'nothing-here'"):
        load_profile("nothing-here")
    with pytest.raises(BadInputError, match="must be 1-64 letters"):
        load_profile("bad name!")
    with pytest.raises(BadInputError, match="is a folder"):
        load_profile(str(tmp_path) + "/")
    assert load_profile("h200-prior").kind == "prior"


@pytest.mark.parametrize("constant", ["Infinity", "-Infinity", "NaN"])
def test_a_profile_with_a_non_finite_figure_is_refused(tmp_path, constant):
    """A profile whose rates read Infinity (Python's json writes and reads it) was taken, and every time priced as NaN
    with exit 0, verify printing PASS (found by newuser trial 239)."""
    prior = load_profile("h100-sxm-prior")
    text = json.dumps(prior.model_dump(mode="json"))
    rates = json.dumps(prior.weight_bandwidth.rates)
    path = tmp_path / "odd.json"
    path.write_text(text.replace(rates, "[" + ", ".join([constant] * len(prior.weight_bandwidth.rates)) + "]", 1))
    with pytest.raises(BadInputError, match=f"is not a valid profile: {constant} is not a measured figure"):
        read_profile(path)
    (tmp_path / "fine.json").write_text(text)  # the control: the same file with its own rates is read
    assert read_profile(tmp_path / "fine.json").weight_bandwidth.rates == prior.weight_bandwidth.rates


def test_calibrate_on_this_cpu_writes_a_profile_and_refuses_to_overwrite_it(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("MHA_DATA_DIR", str(tmp_path))
    # --allow-unstable: one attempt kept whatever the verdict (CI machines are shared; the verdict is tested below
    # on hand-made passes)
    result = cli.json("calibrate", "--device", "cpu", "--dtype", "fp32", "--name", "ci-cpu", "--allow-unstable")
    profile = result["profile"]
    [verdict] = result["attempts"]
    assert set(verdict["held_out"]) == {"decode", "prefill"} and verdict["worst"]["spread"] >= 1
    assert profile["constants"]["stability"].startswith("stable" if verdict["stable"] else "UNSTABLE")
    path = tmp_path / "profiles" / "ci-cpu.json"
    assert result["path"] == str(path) and read_profile(path).name == "ci-cpu"
    assert profile["kind"] == "calibrated" and profile["device"] == "cpu" and profile["dtype"] == "fp32"
    assert {row["phase"] for row in result["check"]} == {"decode", "prefill"}
    assert 0 < profile["dispatch_overhead_s"] < 1e-3
    assert all(rate > 0 for rate in profile["weight_bandwidth"]["rates"])
    assert profile["relative_error"] == max(0.05, *(abs(row["ratio"] - 1) for row in result["check"]))
    before = path.read_bytes()
    again = cli.run("calibrate", "--device", "cpu", "--dtype", "fp32", "--name", "ci-cpu", "--allow-unstable")
    assert again.exit_code == 2 and "pass --force" in again.output and path.read_bytes() == before

    verify = cli.json("verify", "gpt2", "--device", "cpu", "--seq", "64", "--kv-dtype", "fp32", "--profile", "ci-cpu")
    assert verify["predicted_decode_ms"] > 0 and verify["predicted_prefill_ms"] > 0
    assert verify["prediction_ratio"] == pytest.approx(verify["decode_ms"] / verify["predicted_decode_ms"])
    assert verify["prediction_profile"] == "ci-cpu (calibrated)"


def test_verify_without_a_profile_of_this_cpu_says_how_to_make_one(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("MHA_DATA_DIR", str(tmp_path))
    report = cli.json("verify", "gpt2", "--device", "cpu", "--seq", "32", "--layers", "1")
    assert report["predicted_decode_ms"] is None and report["prediction_ratio"] is None
    assert any("mha calibrate --device cpu" in note for note in report["notes"])


def test_calibrate_refuses_bad_options_before_measuring(cli):
    for args, message in [
        (["--dtype", "int8"], "give bf16, fp16 or fp32"),
        (["--tp", "0"], "1 to 64 local ranks"),
        (["--name", "a/b"], "must be 1-64 letters"),
    ]:
        result = cli.run("calibrate", "--device", "cpu", *args)
        assert result.exit_code == 2 and message in result.output


def test_the_all_reduce_over_two_local_ranks_is_measured_and_fitted():
    from mha_cli.calibrate.collective import SIZES, all_reduce_samples

    samples = all_reduce_samples(2, "cpu")
    assert [s.size for s in samples] == SIZES and all(s.seconds > 0 and s.ranks == 2 for s in samples)
    assert samples[-1].seconds > samples[0].seconds  # 16 MiB takes longer than 4 KiB over gloo
    profile = profile_from_samples(
        [*_synthetic_samples()[:-3], *samples], name="t", device="cpu", device_name="x", dtype="fp32", created="now",
        link="gloo",
    )  # fmt: skip
    assert profile.collective.latency_s >= 0 and profile.collective.bandwidth_bytes_per_s > 0


# The stability judgement (calibrate.stability), on hand-made passes: no timing, no flakiness.


JITTER = [1.0, 1.04, 0.97, 1.02, 0.99]
"""Each hand-made pass's speed: the machine's ordinary noise, 1.07x from the fastest to the slowest."""


def _passes(slow: dict[int, float] | None = None, kind: str = "weight", size: float = 2**24) -> list[list[Sample]]:
    """Five passes over the synthetic device, each a little off (+/- 4%); ``slow`` {pass: factor} slows the
    ``kind`` sample at ``size`` in those passes."""
    base = _synthetic_samples()[:-3]  # no all-reduce: it is measured once, not in passes
    passes = []
    for n, factor in enumerate(JITTER):
        one = []
        for sample in base:
            hit = slow and n in slow and (sample.kind, sample.size) == (kind, size)
            one.append(sample.model_copy(update={"seconds": sample.seconds * factor * (slow[n] if hit else 1)}))
        passes.append(one)
    return passes


def _check(decode: float = 1.1, prefill: float = 0.9):
    from mha_cli.calibrate.stability import CheckRow

    return [
        CheckRow(phase="decode", measured_ms=decode, predicted_ms=1.0, ratio=decode, dispatches=100),
        CheckRow(phase="prefill", measured_ms=prefill, predicted_ms=1.0, ratio=prefill, dispatches=100),
    ]


def test_a_stable_calibration_is_judged_stable():
    from mha_cli.calibrate.stability import judge_stability

    verdict = judge_stability(_passes(), _check())
    assert verdict.stable and verdict.over_limit == 0
    assert verdict.worst.spread == pytest.approx(1.04 / 0.97)  # the jitter's slowest over its fastest
    assert verdict.held_out == {"decode": 1.1, "prefill": 0.9}
    assert "passes within 1.07x" in verdict.summary and "x1.10 decode" in verdict.summary


def test_one_pass_three_times_slower_is_unstable_and_names_the_rate():
    from mha_cli.calibrate.stability import judge_stability

    verdict = judge_stability(_passes({0: 3.0}, "weight", 2**24), _check())  # pass 1 three times the others
    assert not verdict.stable and verdict.over_limit == 1
    assert verdict.worst.rate == "GEMV bandwidth at 16 MiB" and verdict.worst.spread == pytest.approx(3.0 / 0.97)
    assert "GEMV bandwidth at 16 MiB varied 3.1x between passes, over the 2.25x limit" in verdict.summary
    assert "held-out decoder x1.10 decode, x0.90 prefill (within 0.67-1.5)" in verdict.summary
    # the other rates: the slowest spread wins, the count says how many are over
    matmul = judge_stability(_passes({0: 2.5, 1: 2.5}, "matmul", 1), _check())
    assert matmul.worst.rate == "matmul at 1 rows" and not matmul.stable
    dispatch = judge_stability(_passes({4: 10.0}, "dispatch", 300), _check())
    assert dispatch.worst.rate == "operator dispatch" and "varied 10.2x" in dispatch.summary


def test_a_held_out_ratio_outside_the_band_is_unstable():
    from mha_cli.calibrate.stability import judge_stability

    verdict = judge_stability(_passes(), _check(decode=18.4))
    assert not verdict.stable and verdict.over_limit == 0
    assert verdict.summary == (
        "the held-out decoder ran at x18.40 decode, x0.90 prefill of its prediction, outside 0.67-1.5"
    )
    assert not judge_stability(_passes(), _check(decode=0.45, prefill=1.56)).stable  # the second run
    assert not judge_stability(_passes(), _check(prefill=0.66)).stable


def test_the_thresholds_are_inclusive():
    from mha_cli.calibrate.stability import CHECK_BAND, MAX_SPREAD, judge_stability

    assert (MAX_SPREAD, CHECK_BAND) == (2.25, (1 / 1.5, 1.5))
    assert judge_stability(_passes(), _check(decode=1.5, prefill=1 / 1.5)).stable
    # a pass exactly MAX_SPREAD x the fastest (pass 3 runs at 0.97: 2.25 x 0.97 over 0.97)
    assert judge_stability(_passes({0: 2.25 * 0.97}, "cache", 2**20), _check()).worst.spread == pytest.approx(2.25)
    assert judge_stability(_passes({0: 2.25 * 0.97}, "cache", 2**20), _check()).stable
    assert not judge_stability(_passes({0: 2.3 * 0.97}, "cache", 2**20), _check()).stable


def test_passes_that_measured_different_sizes_are_refused():
    from mha_cli.calibrate.stability import judge_stability

    passes = _passes()
    passes[3] = passes[3][:-1]
    with pytest.raises(ValueError, match="pass 4 measured other sizes"):
        judge_stability(passes)
    assert judge_stability(passes[:1], _check()).worst is None  # one pass: no spread to judge


# The CLI: the measurement replaced by hand-made passes (calibrate.run.measure_passes and check_profile), so the
# retries, the refusal and the profile written or not are tested in seconds, without timing anything.


@pytest.fixture
def fake_measurement(monkeypatch, tmp_path):
    """Each call of ``measure_passes`` returns the next of ``queue`` (a list of pass lists); the check returns
    ``ratios``. Returns the state: ``calls`` counts the measurements."""
    import mha_cli.calibrate.run as run

    monkeypatch.setenv("MHA_DATA_DIR", str(tmp_path))
    state = {"queue": [], "calls": 0, "ratios": (1.1, 0.9)}

    def measure_passes(target, torch_dtype, on_stage):
        state["calls"] += 1
        return state["queue"].pop(0)

    monkeypatch.setattr(run, "measure_passes", measure_passes)
    monkeypatch.setattr(run, "check_profile", lambda profile, *args: _check(*state["ratios"]))
    return state


def test_calibrate_refuses_an_unstable_machine_after_retrying_and_writes_nothing(cli, tmp_path, fake_measurement):
    fake_measurement["queue"] = [_passes({0: 3.0}) for _ in range(3)]
    result = cli.run("calibrate", "--device", "cpu", "--name", "t1")
    assert result.exit_code == 1 and fake_measurement["calls"] == 3  # the first attempt and two retries
    assert result.stdout == "" and result.stderr.count("\n") == 1  # one line
    assert result.stderr.startswith("error: this machine was too busy to calibrate in 3 attempts, no profile written.")
    assert "GEMV bandwidth at 16 MiB varied 3.1x between passes" in result.stderr
    assert "Rerun on an idle machine" in result.stderr and "--allow-unstable" in result.stderr
    assert not (tmp_path / "profiles" / "t1.json").exists()

    fake_measurement.update(queue=[_passes() for _ in range(3)], calls=0, ratios=(18.4, 1.0))
    held_out = cli.run("calibrate", "--device", "cpu", "--name", "t1", "--json")
    assert held_out.exit_code == 1 and fake_measurement["calls"] == 3
    assert json.loads(held_out.stdout)["written"] is False  # --json: the verdict's object (exit-codes.md)
    assert "the held-out decoder ran at x18.40 decode, x1.00 prefill of its prediction, outside 0.67-1.5" in (
        held_out.stderr
    )
    assert not (tmp_path / "profiles").exists() or not any((tmp_path / "profiles").iterdir())


def test_calibrate_retries_and_writes_the_stable_attempt(cli, tmp_path, fake_measurement):
    fake_measurement["queue"] = [_passes({0: 3.0}), _passes()]
    result = cli.json("calibrate", "--device", "cpu", "--name", "t1")
    assert fake_measurement["calls"] == 2 and [a["stable"] for a in result["attempts"]] == [False, True]
    profile = read_profile(tmp_path / "profiles" / "t1.json")
    assert profile.constants["stability"].startswith("stable, attempt 2 of 3: passes within 1.07x")
    assert profile.relative_error == pytest.approx(0.1)  # the held-out check's larger error


def test_allow_unstable_keeps_one_attempt_and_says_so(cli, tmp_path, fake_measurement):
    fake_measurement.update(queue=[_passes({0: 3.0})], ratios=(18.4, 1.0))
    result = cli.run("calibrate", "--device", "cpu", "--name", "t1", "--allow-unstable")
    assert result.exit_code == 0 and fake_measurement["calls"] == 1
    assert "UNSTABLE, kept by --allow-unstable: GEMV bandwidth at 16 MiB varied 3.1x" in result.stdout
    profile = read_profile(tmp_path / "profiles" / "t1.json")
    assert profile.constants["stability"].startswith("UNSTABLE, kept by --allow-unstable")
    assert profile.relative_error == pytest.approx(17.4)  # its band is the error it measured
    mixed = cli.run("calibrate", "--from", str(tmp_path), "--allow-unstable")
    assert mixed.exit_code == 2 and "--allow-unstable goes with measuring this machine" in mixed.output


def test_an_unstable_machine_still_gets_its_json_object(cli, tmp_path, monkeypatch):
    """Every attempt unstable: exit 1 with one line, and under --json stdout was empty where exit-codes.md promises a
    verdict's object (found by newuser trials 257, 258): now {written: false, error, attempts}."""
    import mha_cli.calibrate.run as run
    from mha_cli.calibrate.stability import Stability, UnstableCalibrationError

    monkeypatch.setenv("MHA_DATA_DIR", str(tmp_path))
    busy = Stability(stable=False, worst=None, over_limit=3, held_out={}, max_spread=1.5, band=(0.8, 1.2),
                     summary="3 rates spread past 1.5x")  # fmt: skip

    def unstable(**_: object) -> None:
        raise UnstableCalibrationError(busy, 3, [busy, busy, busy])

    monkeypatch.setattr(run, "run_calibration", unstable)
    result = cli.run("calibrate", "--device", "cpu", "--dtype", "fp32", "--json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["written"] is False and len(data["attempts"]) == 3
    assert data["error"].startswith("this machine was too busy to calibrate in 3 attempts")
    plain = cli.run("calibrate", "--device", "cpu", "--dtype", "fp32")
    assert plain.exit_code == 1 and plain.stdout == ""
