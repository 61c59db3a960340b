"""``mha bench`` at a tiny size: the byte accounting is exact; timings are only checked to exist."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mha_cli.cli.app import app

runner = CliRunner()


def test_tiny_bench_reports_exact_bytes_and_a_backend_per_variant() -> None:
    args = ["bench", "--device", "cpu", "--seq", "64", "--batch", "2", "--d-model", "64", "--heads", "4"]
    args += ["--head-dim", "16", "--kv-heads", "2", "--warmup", "1", "--reps", "2", "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    rows = {row["label"]: row for row in data["rows"]}
    assert list(rows) == ["MHA", "GQA-2", "MQA", "MLA absorbed", "MLA naive"]
    fp32 = 4
    assert rows["MHA"]["cache_bytes_per_token"] == 2 * 4 * 16 * fp32
    assert rows["GQA-2"]["cache_bytes_per_token"] == 2 * 2 * 16 * fp32
    assert rows["MQA"]["cache_bytes_per_token"] == 2 * 16 * fp32
    assert rows["MLA absorbed"]["cache_bytes_per_token"] == (64 + 8) * fp32  # latent 4 x 16, rope 16 / 2
    assert rows["MLA naive"]["cache_bytes_per_token"] == 4 * (16 + 8 + 16) * fp32
    for row in rows.values():
        assert row["kv_bytes_read"] == row["cache_bytes_per_token"] * 64 * 2
        assert row["bytes_read"] == row["weight_bytes"] + row["kv_bytes_read"]
        assert row["median_ms"] > 0 and row["sdpa_backend"].split()[0] in {"math", "flash", "efficient", "cudnn"}
    assert rows["MHA"]["speedup_vs_mha"] == 1.0 and rows["MHA"]["bytes_vs_mha"] == 1.0
    for row in rows.values():  # every timed figure carries its spread
        assert row["min_ms"] <= row["p25_ms"] <= row["median_ms"] <= row["p75_ms"] <= row["max_ms"]
        assert row["iqr_ms"] == pytest.approx(row["p75_ms"] - row["p25_ms"], abs=2e-4)
        assert row["speedup_low"] <= row["speedup_vs_mha"] <= row["speedup_high"]
        assert row["gb_per_s_low"] <= row["effective_gb_per_s"] <= row["gb_per_s_high"]
    assert rows["MHA"]["within_noise"] is False


def rendered(rows: list, warnings: list[str], *, width: int) -> str:
    """The bench table of hand-made ``rows`` (a tiny shape, 5 repetitions) as a terminal of ``width`` shows it."""
    from rich.console import Console

    from mha_cli.cli.bench_cmd import render_bench
    from mha_cli.nn.bench import BenchResult

    result = BenchResult(
        device="cpu", device_name="cpu", torch_version="x", dtype="fp32", seq_len=16, batch=1, d_model=32, n_heads=4,
        head_dim=8, gqa_kv_heads=2, mla_kv_lora_rank=32, mla_rope_dim=4, warmup=1, reps=5, cpu_threads=2, rows=rows,
        warnings=warnings,
    )  # fmt: skip
    console = Console(record=True, width=width)
    render_bench(console, result)
    return console.export_text()


def test_a_ratio_inside_the_noise_is_flagged_in_the_row_the_warnings_and_the_table() -> None:
    """Hand-made timings (seconds): GQA's quartiles overlap MHA's, MQA's lie clear below them."""

    from mha_cli.nn.bench import Quartiles, bench_row, noise_warnings

    mha = Quartiles.of([0.010, 0.011, 0.012, 0.013, 0.014])  # ms: p25 11, median 12, p75 13
    assert (mha.p25, mha.median, mha.p75) == pytest.approx((11.0, 12.0, 13.0))
    gqa = Quartiles.of([0.009, 0.0105, 0.0115, 0.0125, 0.020])  # p25 10.5, p75 12.5: overlaps [11, 13]
    mqa = Quartiles.of([0.004, 0.0045, 0.005, 0.0055, 0.006])  # p25 4.5, p75 5.5: clear of MHA
    rows = [bench_row(label, 1, 64, 1000, 1000, times, mha, 2000, "flash (cpu)")
            for label, times in (("MHA", mha), ("GQA-2", gqa), ("MQA", mqa))]  # fmt: skip
    assert [row.within_noise for row in rows] == [False, True, False]
    assert rows[1].speedup_vs_mha == pytest.approx(12 / 11.5, abs=1e-3)
    assert (rows[1].speedup_low, rows[1].speedup_high) == pytest.approx((11 / 12.5, 13 / 10.5), abs=1e-3)
    assert rows[2].speedup_low == pytest.approx(11 / 5.5, abs=1e-3) and rows[2].iqr_ms == pytest.approx(1.0)
    warnings = noise_warnings(rows, reps=5)
    assert len(warnings) == 1 and "GQA-2 1.04x (0.88-1.24x)" in warnings[0] and "MQA" not in warnings[0]
    assert noise_warnings(rows, reps=1) == [
        "1 repetition: no spread to judge the ratios by; rerun with --reps 10 or more"
    ]
    text = rendered(rows, warnings, width=80)
    assert "1.04x~" in text and "2.40x~" not in text and "~ warning: within the noise" in text
    assert all(len(line) <= 80 for line in text.splitlines())


def test_a_speedup_beyond_what_its_bytes_allow_is_flagged() -> None:
    """A busy CPU printed MQA 1,064x faster than MHA with no flag (trial 258): MHA's steps (p25 1,000 ms) against
    MQA's (p75 1.25 ms) reading 0.3 of MHA's bytes: 800x at the low end, 240x what 1 / 0.3 allows (over 16x)."""

    from mha_cli.nn.bench import Quartiles, bench_row, noise_warnings

    mha = Quartiles.of([0.9, 1.0, 1.05, 1.1, 1.2])  # ms: p25 1000, p75 1100
    mqa = Quartiles.of([0.0009, 0.001, 0.00105, 0.00125, 0.0013])  # p25 1.0, p75 1.25
    gqa = Quartiles.of([0.2, 0.21, 0.22, 0.23, 0.24])  # p25 210: 4.8x at 0.5 of the bytes, 2.4x what they allow
    rows = [bench_row("MHA", 16, 64, 0, 1000, mha, mha, 1000, "flash (cpu)"),
            bench_row("MQA", 1, 64, 0, 300, mqa, mha, 1000, "flash (cpu)"),
            bench_row("GQA-8", 8, 64, 0, 500, gqa, mha, 1000, "flash (cpu)")]  # fmt: skip
    assert [row.beyond_its_bytes for row in rows] == [False, True, False]
    warnings = noise_warnings(rows, reps=5)
    assert warnings == [
        "beyond what the bytes allow (over 16x 1 / bytes ratio): MQA 1,000.00x reading 0.30 of MHA's bytes; MHA's"
        " steps were slowed by something else (a busy machine, threads waiting for a core, swapping): rerun on an idle"
        " machine"
    ]
    text = rendered(rows, warnings, width=100)
    assert "1,000.00x!" in text and "! warning: beyond what the bytes allow" in text and "4.77x " in text
    assert "(fp32, torch x, 2 threads)" in text


def test_flagged_ratios_on_several_cpu_threads_name_the_threads() -> None:
    """Trial 350 #1: on 2 threads sharing 2 busy cores MHA took 8 ms a step, 0.18 ms on one thread; the warning
    blamed only "a busy machine". A row both beyond its bytes and in the noise shows both marks."""
    from mha_cli.nn.bench import Quartiles, bench_row, noise_warnings

    mha = Quartiles.of([0.004, 0.008, 0.008, 0.008, 0.012])  # ms: p25 8, p75 8 (a 4 ms scheduler tick)
    gqa = Quartiles.of([0.0001, 0.0001, 0.00015, 0.0002, 0.004])  # p25 0.1, p75 0.2: 40x low end at 0.5 the bytes
    rows = [bench_row("MHA", 4, 64, 0, 1000, mha, mha, 1000, "flash (cpu)"),
            bench_row("GQA-2", 2, 32, 0, 500, gqa, mha, 1000, "flash (cpu)")]  # fmt: skip
    assert rows[1].beyond_its_bytes and rows[1].within_noise  # its IQR (0.1) is over half its median (0.15)
    threads = noise_warnings(rows, reps=5, cpu_threads=2)[-1]
    assert threads == (
        "threads: torch ran each step on 2 CPU threads; where the cores are shared with other work a step waits for"
        " its slowest thread, a scheduler tick at a time: rerun with --threads 1"
    )
    assert not any(w.startswith("threads") for w in noise_warnings(rows, reps=5, cpu_threads=1))
    assert not any(w.startswith("threads") for w in noise_warnings(rows, reps=5, cpu_threads=None))  # a GPU
    calm = [
        rows[0],
        bench_row(
            "GQA-2", 2, 32, 0, 500, Quartiles.of([0.0039, 0.004, 0.004, 0.0041, 0.0042]), mha, 1000, "flash (cpu)"
        ),
    ]
    assert noise_warnings(calm, reps=5, cpu_threads=2) == []  # nothing flagged: nothing to blame
    text = rendered(rows, noise_warnings(rows, reps=5, cpu_threads=2), width=100)
    assert "53.33x!~" in text and "\nwarning: threads: torch ran" in text


def test_threads_are_set_for_the_bench_and_restored_after() -> None:
    import torch

    before = torch.get_num_threads()
    asked = 2 if before == 1 else 1  # not the count already set (review 353 #7: conftest sets 1 under xdist)
    args = [*TINY, "--kv-heads", "2", "--reps", "1", "--threads", str(asked), "--json"]
    data = json.loads(runner.invoke(app, args).stdout)
    assert data["cpu_threads"] == asked and torch.get_num_threads() == before


def test_an_unknown_device_is_a_one_line_error() -> None:
    result = runner.invoke(app, ["bench", "--device", "tpu"])
    assert result.exit_code == 2 and "unknown device 'tpu'" in result.output


TINY = ["bench", "--device", "cpu", "--seq", "16", "--d-model", "32", "--heads", "4", "--head-dim", "8"]


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [("--batch", "0", "--batch must be at least 1 (got 0)"),
     ("--head-dim", "0", "--head-dim must be at least 1 (got 0)"),
     ("--kv-lora-rank", "0", "--kv-lora-rank must be at least 1 (got 0)"),
     ("--d-model", "-1", "--d-model must be at least 1 (got -1)"),
     ("--heads", "0", "--heads must be at least 1 (got 0)"),
     ("--kv-heads", "0", "--kv-heads must be at least 1 (got 0)"),
     ("--seq", "1", "--seq must be at least 2 (got 1)"),
     ("--seq", "0", "--seq: token count '0' must be positive"),  # named, as kv names it (trial 260 #6)
     ("--reps", "0", "--reps must be at least 1 (got 0)"),
     ("--warmup", "-1", "--warmup must be at least 0 (got -1)"),
     ("--threads", "0", "--threads must be at least 1 (got 0)")],
)  # fmt: skip
def test_every_number_is_checked_before_running(option: str, value: str, message: str) -> None:
    args = [*TINY, "--kv-heads", "2"]
    if option in args:  # one value an option (a second, different one is refused: cli.repeated_options)
        args[args.index(option) + 1] = value
    else:
        args += [option, value]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.output.strip() == f"error: {message}"


def test_unset_means_the_default_and_zero_is_never_unset() -> None:
    data = json.loads(runner.invoke(app, [*TINY, "--kv-heads", "2", "--reps", "1", "--warmup", "0", "--json"]).stdout)
    assert data["batch"] == 4 and data["seq_len"] == 16 and data["mla_kv_lora_rank"] == 32  # 4 x head-dim


def test_help_states_the_seq_and_batch_defaults() -> None:
    words = runner.invoke(app, ["bench", "--help"], terminal_width=100).stdout.split()
    text = " ".join(word for word in words if word != "│")  # a help line may wrap inside the options box
    assert "Default: 8192." in text and "Default: 4." in text


def test_the_table_fits_80_columns_without_cutting_headers_or_cells() -> None:
    result = runner.invoke(app, [*TINY, "--kv-heads", "2", "--reps", "1", "--warmup", "0"], terminal_width=80)
    assert result.exit_code == 0, result.output
    assert "…" not in result.stdout
    lines = result.stdout.splitlines()
    assert all(len(line.rstrip()) <= 80 for line in lines)
    assert any(line.split()[:3] == ["variant", "heads", "B/token"] for line in lines)
    assert any(line.startswith("MLA absorbed") for line in lines)


def test_a_failed_cpu_allocation_counts_as_out_of_memory():
    import torch

    from mha_cli.nn.device import is_out_of_memory

    with pytest.raises(RuntimeError) as info:
        torch.empty(2**62, dtype=torch.uint8)  # far beyond any machine: the allocator refuses at once
    assert is_out_of_memory(info.value)
    assert not is_out_of_memory(RuntimeError("shape mismatch"))


def test_bench_predicts_each_row_with_a_given_profile(cli, tmp_path, monkeypatch):
    """The cost model prices each variant's attention step (its ops alone, the operators it dispatched counted)."""
    import json

    from mha_cli.core.cost.priors import prior_profile
    from mha_cli.core.targets import load_targets

    profile = prior_profile(load_targets()["h100-sxm"]).model_copy(update={"device": "cpu", "name": "stand-in"})
    path = tmp_path / "stand-in.json"
    path.write_text(profile.model_dump_json())
    result = cli.json("bench", "--device", "cpu", "--seq", "64", "--batch", "1", "--d-model", "64", "--heads", "4",
                      "--head-dim", "16", "--kv-heads", "2", "--reps", "2", "--warmup", "1", "--profile", str(path))  # fmt: skip
    assert result["prediction_profile"].startswith("stand-in")
    for row in result["rows"]:
        assert row["predicted_ms"] > 0 and row["prediction_ratio"] == row["median_ms"] / row["predicted_ms"]
    # GQA reads less cache than MHA: the cost model says so too
    mha, gqa = result["rows"][0], result["rows"][1]
    assert gqa["predicted_ms"] <= mha["predicted_ms"]
    assert json.loads(path.read_text())["name"] == "stand-in"
    assert not any(warning.startswith("profile:") for warning in result["warnings"])


def test_bench_and_verify_say_their_profile_was_kept_unstable(cli, tmp_path):
    """Trial 374 #3: a profile calibrate kept with --allow-unstable (its +/- 248%) priced bench's rows (x0.00) and
    verify's steps with no word of it; calibrate --from said so. Both now carry the profile's own line."""
    from mha_cli.core.cost.priors import prior_profile
    from mha_cli.core.targets import load_targets

    unstable = {"stability": "UNSTABLE, kept by --allow-unstable: GEMV varied 3.1x"}
    profile = prior_profile(load_targets()["h100-sxm"]).model_copy(
        update={"device": "cpu", "name": "shaky", "kind": "calibrated", "constants": unstable}
    )
    path = tmp_path / "shaky.json"
    path.write_text(profile.model_dump_json())
    line = "shaky was measured unstable (kept by --allow-unstable): GEMV varied 3.1x"
    result = cli.json("bench", "--device", "cpu", "--seq", "32", "--batch", "1", "--d-model", "64", "--heads", "4",
                      "--head-dim", "16", "--kv-heads", "2", "--reps", "2", "--warmup", "1", "--profile", str(path))  # fmt: skip
    assert f"profile: {line}" in result["warnings"]
    small = Path(__file__).resolve().parents[1] / "outputs" / "configs" / "125m-2k-4090.yaml"
    report = cli.json("verify", str(small), "--device", "cpu", "--layers", "1", "--seq", "16", "--reps", "1",
                      "--profile", str(path))  # fmt: skip
    assert f"predicted times: {line}" in report["notes"]


def test_a_variant_slower_than_mha_though_it_reads_less_is_flagged() -> None:
    """Trial 303 #5: MQA at 0.25x reading 0.44 of MHA's bytes had no flag; only ratios within the noise (~) and
    beyond the bytes (!) did. MHA p75 1.1 ms against MQA's p25 4.0 ms: the high end 0.275x, under 1; GQA at 0.9x
    with overlapping ranges is noise, not flagged so; MLA reading more than MHA is not flagged either."""
    from mha_cli.nn.bench import Quartiles, bench_row, noise_warnings

    mha = Quartiles.of([0.9, 1.0, 1.05, 1.1, 1.2])  # ms: p25 1.0, p75 1.1
    mqa = Quartiles.of([3.9, 4.0, 4.2, 4.4, 4.5])  # p25 4.0: slower beyond the noise
    gqa = Quartiles.of([1.0, 1.05, 1.15, 1.2, 1.3])  # overlaps MHA's range
    mla = Quartiles.of([3.9, 4.0, 4.2, 4.4, 4.5])  # as slow, but reads more bytes than MHA
    rows = [bench_row("MHA", 16, 64, 0, 1000, mha, mha, 1000, "flash (cpu)"),
            bench_row("MQA", 1, 64, 0, 440, mqa, mha, 1000, "flash (cpu)"),
            bench_row("GQA-8", 8, 64, 0, 500, gqa, mha, 1000, "flash (cpu)"),
            bench_row("MLA", 1, 64, 0, 1200, mla, mha, 1000, "flash (cpu)")]  # fmt: skip
    assert [row.slower_reading_less for row in rows] == [False, True, False, False]
    assert noise_warnings(rows, reps=5)[-1].startswith(
        "slower than MHA though reading fewer bytes: MQA 0.25x reading 0.44 of MHA's bytes; at this size"
    )
