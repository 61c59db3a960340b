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


def test_calibrate_on_this_cpu_writes_a_profile_and_refuses_to_overwrite_it(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("MHA_DATA_DIR", str(tmp_path))
    result = cli.json("calibrate", "--device", "cpu", "--dtype", "fp32", "--name", "ci-cpu")
    profile = result["profile"]
    path = tmp_path / "profiles" / "ci-cpu.json"
    assert result["path"] == str(path) and read_profile(path).name == "ci-cpu"
    assert profile["kind"] == "calibrated" and profile["device"] == "cpu" and profile["dtype"] == "fp32"
    assert {row["phase"] for row in result["check"]} == {"decode", "prefill"}
    assert 0 < profile["dispatch_overhead_s"] < 1e-3
    assert all(rate > 0 for rate in profile["weight_bandwidth"]["rates"])
    assert profile["relative_error"] == max(0.05, *(abs(row["ratio"] - 1) for row in result["check"]))
    before = path.read_bytes()
    again = cli.run("calibrate", "--device", "cpu", "--dtype", "fp32", "--name", "ci-cpu")
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
