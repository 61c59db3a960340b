"""``mha calibrate --from``: benchmark clients' result files read as their tools write them, and a profile fitted
to real vLLM runs on this machine (``benchmarks/vllm_cpu/results``, kept in the repo) through the simulated loop,
checked on runs it did not fit against the closed-form model (the floor that must lose)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mha_cli.cli.app import app
from mha_cli.core.errors import BadInputError
from mha_cli.core.serve.bench_results import collect, read_results

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "vllm_cpu" / "results"
TINY_LLAMA = REPO / "benchmarks" / "vllm_cpu" / "models" / "tiny-llama" / "config.json"
FORMATS = REPO / "tests" / "fixtures" / "bench_results"
# the server's settings (benchmarks/vllm_cpu/results/manifest.json): what the fit must be told
SERVER = ["--max-num-seqs", "32", "--max-num-batched-tokens", "2048", "--block-size", "128", "--kv-cache-gib", "1"]
FIT_RUNS = ["c1_i128", "c4_i128", "c16_i128", "c1_i1024", "c4_i1024", "c8_i1024", "c16_i1024", "c64_i1024"]
HELD_OUT = ["c4_i128", "c8_i1024", "c16_i1024"]


def test_a_vllm_result_is_read_as_the_file_says():
    path = RESULTS / "tiny-llama_c16_i1024_o128.json"
    raw = json.loads(path.read_text())
    (run,) = read_results(path)
    assert run.tool == "vllm bench serve" and run.model == raw["model_id"] == "tiny-llama"
    assert run.max_concurrency == raw["max_concurrency"] == 16 and run.rate is None  # request_rate "inf"
    assert run.lengths == list(zip(raw["input_lens"], raw["output_lens"], strict=True))
    assert run.ttft_ms.mean == raw["mean_ttft_ms"] and run.ttft_ms.p99 == raw["p99_ttft_ms"]
    assert run.tpot_ms.median == raw["median_tpot_ms"] and run.e2e_ms.p90 == raw["p90_e2el_ms"]
    assert run.send_times[0] == 0.0 and len(run.send_times) == raw["completed"]


@pytest.mark.parametrize(
    ("name", "tool", "ttft_p99", "tpot_mean", "e2e_mean"),
    [
        ("sglang_bench_serving_example.jsonl", "SGLang bench_serving", 110.53004685864357, 8.9720468799962, 1200.1068),
        ("genai_perf_example.json", "genai-perf", 106.74240963000005, 8.905950687499999, 1183.8896),
        ("guidellm_example.json", "GuideLLM", 121.0, 8.972046879996201, 1200.1068),  # request_latency in seconds
    ],
)
def test_other_clients_results_are_read_by_their_documented_paths(name, tool, ttft_p99, tpot_mean, e2e_mean):
    (run,) = read_results(FORMATS / name)
    assert run.tool == tool and run.model == "meta-llama/Llama-3.1-8B-Instruct"
    assert run.max_concurrency == 8 and run.rate is None and len(run.lengths) == 32
    assert run.lengths[0] == (512, 128)
    assert run.ttft_ms.p99 == pytest.approx(ttft_p99) and run.tpot_ms.mean == pytest.approx(tpot_mean)
    assert run.e2e_ms.mean == pytest.approx(e2e_mean, rel=1e-6)


def test_files_it_cannot_read_are_one_line_naming_what_is_wrong(tmp_path):
    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}')
    with pytest.raises(BadInputError, match="not a result file mha reads"):
        read_results(other)
    raw = json.loads((RESULTS / "tiny-llama_c4_i128_o64.json").read_text())
    del raw["p99_ttft_ms"]
    missing = tmp_path / "missing.json"
    missing.write_text(json.dumps(raw))
    with pytest.raises(BadInputError, match="has no 'p99_ttft_ms'"):
        read_results(missing)
    with pytest.raises(BadInputError, match=r"absent\.json: no such file"):
        read_results(tmp_path / "absent.json")
    (tmp_path / "empty").mkdir()
    with pytest.raises(BadInputError, match="holds no"):
        collect([tmp_path / "empty"])
    with pytest.raises(BadInputError, match="matches no file"):
        collect([tmp_path / "nothing_*.json"])
    matched = collect([RESULTS / "tiny-llama_c*_i128_o64.json"])  # a quoted pattern: the closed-loop short runs
    assert len(matched) == 7 and {run.model for run in matched} == {"tiny-llama"}


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("mean_ttft_ms", -5, "its mean TTFT is -5 ms: a latency is never negative"),
        ("p99_tpot_ms", -0.5, "its p99 TPOT is -0.5 ms: a latency is never negative"),
        ("duration", 0, "its duration is 0.0 s: a run lasts some time"),
        ("output_throughput", -1, "its output tokens/s is -1: never negative"),
        ("max_concurrency", -3, "its max concurrency is -3: at least 1 user (or none, no cap)"),
        ("max_concurrency", "many", "its max concurrency is 'many': a whole number of users"),
        ("request_rate", "fast", "its request rate is 'fast': requests per second, or inf"),
        ("request_rate", 0, "its request rate is 0.0: above 0 requests per second, or inf"),
    ],
)
def test_a_figure_no_client_writes_is_refused_naming_the_file(tmp_path, key, value, said):
    """A negative TTFT was fitted on (exit 0), a rate of "fast" ended in an internal error (exit 70), a concurrency of
    -3 in "the client has nothing left to send" (found by newuser trial 230): each is now one line naming the file."""
    raw = json.loads((RESULTS / "tiny-llama_c4_i128_o64.json").read_text())
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(raw | {key: value}))
    with pytest.raises(BadInputError) as caught:
        read_results(edited)
    assert caught.value.message == f"{edited}: {said}"


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """calibrate --from on eight of the real vLLM runs, three of them held out."""
    data = tmp_path_factory.mktemp("data")
    # the plain run: the shared-prefix (_p512) and small-pool (_kv48) runs of the same load sort after it
    sources = [str(min(RESULTS.glob(f"tiny-llama_{run}_*.json"))) for run in FIT_RUNS]
    args = ["calibrate", *(a for s in sources for a in ("--from", s)), "--model", str(TINY_LLAMA), "--target",
            "cpu", *SERVER, *(a for h in HELD_OUT for a in ("--hold-out", h)), "--json"]  # fmt: skip
    runner = CliRunner(env={"MHA_DATA_DIR": str(data)})
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout), runner, args


def test_the_simulation_fitted_on_real_vllm_runs_predicts_the_held_out_ones(fitted):
    fit, *_ = fitted
    held = [row for row in fit["runs"] if row["held_out"]]
    assert len(held) == len(HELD_OUT) and fit["held_out"]["runs"] == len(HELD_OUT)
    simulated, closed = fit["held_out"]["simulated"], fit["held_out"]["closed_form"]
    # the closed form misses the burst of a closed loop: its TTFT is far off where the simulation's is not
    assert simulated["ttft_mean"] < 0.3 and closed["ttft_mean"] > 0.5
    assert simulated["tpot_mean"] < 0.25 and simulated["tpot_mean"] < closed["tpot_mean"]
    assert simulated["output_tokens_per_s"] < 0.15
    burst = next(row for row in held if row["load"].startswith("c16"))
    measured = burst["measured"]["ttft_mean"]
    assert (
        abs(burst["simulated"]["ttft_mean"] / measured - 1)
        < 0.3
        < abs(burst["closed_form"]["ttft_mean"] / measured - 1)
    )
    profile = fit["profile"]
    assert profile["kind"] == "calibrated" and profile["source"].startswith(
        "calibrated from 8 run(s) of vllm bench serve"
    )
    assert profile["device"] == "cpu" and profile["relative_error"] > 0


def test_the_fitted_profile_is_written_once_and_plans_a_server_on_this_cpu(fitted):
    fit, runner, args = fitted
    again = runner.invoke(app, [a for a in args if a != "--json"])
    assert again.exit_code == 2 and "--force" in again.output
    plan = runner.invoke(
        app, ["plan", str(TINY_LLAMA), "--target", "cpu", "--tp", "1", "--concurrency", "16", "--isl", "1024",
                   "--osl", "128", *SERVER, "--num-prompts", "64", "--json"],
    )  # fmt: skip
    assert plan.exit_code == 0, plan.output
    result = json.loads(plan.stdout)
    assert result["profile"]["name"] == fit["profile"]["name"]  # the newest profile of this CPU
    assert result["memory"]["engine"]["kv_tokens"] == 524_288  # the server's log: "CPU KV cache size: 524,288 tokens"
    measured = json.loads((RESULTS / "tiny-llama_c16_i1024_o128.json").read_text())
    assert result["simulated"]["ttft_ms"]["mean"] == pytest.approx(measured["mean_ttft_ms"], rel=0.35)


def test_a_fit_rerun_with_force_starts_from_nominal_rates_not_the_profile_it_replaces(tmp_path):
    """On the cpu target a fit starts from a profile measured on this CPU, never from an earlier fit: a rerun
    (--force, the same name) fitted on the same runs writes the same figures, starting from the nominal rates."""
    small = REPO / "benchmarks" / "vllm_cpu" / "models" / "small-llama" / "config.json"
    args = ["calibrate", "--from", str(RESULTS / "small-llama_*.json"), "--model", str(small), "--target", "cpu",
            *SERVER, "--name", "rerun", "--force", "--json"]  # fmt: skip
    runner = CliRunner(env={"MHA_DATA_DIR": str(tmp_path)})
    first, second = (json.loads(runner.invoke(app, args).stdout) for _ in range(2))
    assert second["held_out"] == first["held_out"]
    assert second["profile"]["relative_error"] == first["profile"]["relative_error"]
    assert second["profile"]["source"].endswith("starting from cpu-nominal")


def test_another_models_runs_are_refused(tmp_path):
    runner = CliRunner(env={"MHA_DATA_DIR": str(tmp_path)})
    result = runner.invoke(
        app, ["calibrate", "--from", str(RESULTS / "tiny-llama_c1_i128_o64.json"), "--model", "llama-3-8b",
                   "--target", "cpu", *SERVER],
    )  # fmt: skip
    assert result.exit_code == 2 and "measured 'tiny-llama', not llama-3-8b" in result.output
    assert not (tmp_path / "profiles").exists()
    lone = runner.invoke(app, ["calibrate", "--model", "llama-3-8b"])
    assert lone.exit_code == 2 and "--model goes with --from" in lone.output


def test_a_profile_fitted_on_runs_none_held_out_says_its_band_is_the_fits_own(tmp_path):
    """One run: none held out, as calibrate says; plan then read "4 in 5 held-out figures of its benchmark runs fell
    within it", a held-out check that never ran (found by newuser trial 230)."""
    runner = CliRunner(env={"MHA_DATA_DIR": str(tmp_path)})
    fitted = runner.invoke(app, ["calibrate", "--from", str(RESULTS / "tiny-llama_c4_i128_o64.json"), "--model",
                                 str(TINY_LLAMA), "--target", "cpu", *SERVER, "--name", "one", "--json"])  # fmt: skip
    assert fitted.exit_code == 0, fitted.output
    assert "(1 fitted, 0 held out)" in json.loads(fitted.stdout)["profile"]["source"]
    plan = runner.invoke(app, ["plan", str(TINY_LLAMA), "--target", "cpu", "--tp", "1", "--concurrency", "4",
                               "--isl", "128", "--osl", "64", *SERVER, "--closed-form", "--json"])  # fmt: skip
    assert plan.exit_code == 0, plan.output
    how = json.loads(plan.stdout)["uncertainty"]["how"]
    assert how.endswith(": the fit's own error on its benchmark runs (none was held out)"), how


def test_a_fit_never_prices_a_gpu_past_its_datasheet(tmp_path):
    """SGLang's example run of Llama-3.1-8B on an H100 (a synthetic fixture) fitted 2 x the prior's FLOP/s, 1,365
    TFLOP/s of bf16 against the datasheet's 989, and plan then printed a TTFT, band and all, below its own roofline
    bound (found by newuser trial 232). The rate factors stop at the datasheet's peaks."""
    from mha_cli.core.cost.priors import datasheet_profile, prior_profile
    from mha_cli.core.serve.fit import factor_caps
    from mha_cli.core.targets import load_targets

    h100 = load_targets()["h100-sxm"]
    prior, sheet = prior_profile(h100, "bf16"), datasheet_profile(h100, "bf16")
    bandwidth, compute = factor_caps(prior)
    # NVIDIA's H100 SXM5 datasheet: 989.4 dense bf16 TFLOP/s, 3.35 TB/s (the target table's row, sourced there)
    assert prior.matmul.peak * compute <= 989.4e12 * (1 + 1e-9)
    assert prior.weight_bandwidth.peak * bandwidth <= 3.35e12 * (1 + 1e-9)
    assert compute > 1 and bandwidth > 1  # the prior is below its datasheet: a fit may still raise it, to the peak
    runner = CliRunner(env={"MHA_DATA_DIR": str(tmp_path)})
    fitted = runner.invoke(app, ["calibrate", "--from", str(REPO / "tests" / "fixtures" / "bench_results" / "sglang_bench_serving_example.jsonl"), "--model",
                                 "meta-llama/Llama-3.1-8B-Instruct", "--target", "h100", "--engine", "sglang",
                                 "--name", "t1", "--json"])  # fmt: skip
    assert fitted.exit_code == 0, fitted.output
    profile = json.loads(fitted.stdout)["profile"]
    assert max(profile["matmul"]["rates"]) <= sheet.matmul.peak * (1 + 1e-9)
    # reviews 408 #5, 409 #7: the fit starts from the runs' engine generation's prior, as plan prices it (the default
    # constants before), and its band is its own runs', not the prior's TTFT band it started from
    assert profile["source"].endswith("starting from h100-sxm-prior@sglang-0.5")
    assert profile["ttft_relative_error"] is None
    plan = runner.invoke(app, ["plan", "llama-3.1-8b", "--target", "h100", "--tp", "1", "--profile", "t1", "--isl",
                               "8192", "--osl", "16", "--closed-form", "--json"])  # fmt: skip
    assert plan.exit_code == 0, plan.output
    data = json.loads(plan.stdout)
    assert data["ttft_ms"] >= data["bounds"]["ttft_ms"]


def test_a_fit_from_an_unstable_measured_profile_says_so(tmp_path):
    """calibrate --from started from a CPU profile kept by --allow-unstable and said only "starting from cpu-fp32",
    its held-out band then far wider than the docs' (found by newuser trial 258): the notes say the base was kept
    unstable."""
    from mha_cli.core.serve.fit import nominal_cpu_profile

    base = nominal_cpu_profile("fp32").model_copy(
        update={"name": "cpu-fp32", "kind": "calibrated", "source": "mha calibrate --device cpu (a test's)",
                "constants": {"stability": "UNSTABLE, kept by --allow-unstable: GEMV varied 3.1x"}}
    )  # fmt: skip
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "cpu-fp32.json").write_text(base.model_dump_json(indent=1))
    runner = CliRunner(env={"MHA_DATA_DIR": str(tmp_path)})
    small = REPO / "benchmarks" / "vllm_cpu" / "models" / "small-llama" / "config.json"
    args = ["calibrate", "--from", str(RESULTS / "small-llama_*.json"), "--model", str(small), "--target", "cpu",
            *SERVER, "--name", "fromunstable", "--json"]  # fmt: skip
    found = json.loads(runner.invoke(app, args).stdout)
    assert found["profile"]["source"].endswith("starting from cpu-fp32")
    assert any(
        note
        == "the profile it starts from, cpu-fp32, was measured unstable (kept by --allow-unstable): GEMV varied 3.1x"
        for note in found["notes"]
    )


def test_an_sglang_clients_run_is_fitted_with_sglangs_rules_unless_engine_says_otherwise(tmp_path):
    """SGLang's bench_serving --backend sglang-oai measured an SGLang server; without --engine the fit priced it with
    vLLM's memory rules, recorded engine vllm and its "use it" line planned vLLM (trial 258). vLLM's own client
    (backend openai or vllm, one OpenAI client for any server) names no engine; files naming two engines are
    refused. (On this light load, 8 users of 640 tokens on an H100, either engine's replay fits the same constants.)"""
    from mha_cli.core.serve.bench_results import server_of

    assert [server_of("SGLang bench_serving", b) for b in ("sglang-oai", "sglang", "vllm-chat", "trt", "lmdeploy")] == [
        "sglang",
        "sglang",
        "vllm",
        "trtllm",
        None,
    ]
    assert [server_of("vllm bench serve", b) for b in ("openai", "vllm", "sglang", "tensorrt-llm", None)] == [
        None,
        None,
        "sglang",
        "trtllm",
        None,
    ]
    sglang_run = str(FORMATS / "sglang_bench_serving_example.jsonl")
    runner = CliRunner(env={"MHA_DATA_DIR": str(tmp_path)})
    args = ["calibrate", "--from", sglang_run, "--model", "meta-llama/Llama-3.1-8B-Instruct", "--target", "h100"]
    read = json.loads(runner.invoke(app, [*args, "--name", "read", "--json"]).stdout)
    asked = json.loads(runner.invoke(app, [*args, "--engine", "sglang", "--name", "asked", "--json"]).stdout)
    assert read["engine"] == asked["engine"] == "sglang"
    assert read["runs"] == asked["runs"]  # the same replay as --engine sglang
    assert read["use"].endswith("--target h100 --tp 1 --pp 1 --engine sglang --profile read")
    assert "priced with sglang's rules: the files' client backend 'sglang-oai' names it" in " ".join(read["notes"])
    other = json.loads(runner.invoke(app, [*args, "--engine", "vllm", "--name", "other", "--json"]).stdout)
    assert other["engine"] == "vllm" and other["use"].endswith("--engine vllm --profile other")
    assert "as --engine asks, though the files' client backend 'sglang-oai' names sglang" in " ".join(other["notes"])
    vllm_named = tmp_path / "vllm_client.json"
    vllm_named.write_text(
        (FORMATS / "sglang_bench_serving_example.jsonl").read_text().replace('"sglang-oai"', '"vllm"')
    )
    mixed = runner.invoke(app, [*args, "--from", str(vllm_named), "--name", "mixed"])
    assert mixed.exit_code == 2 and "measured servers of sglang and vllm" in mixed.output, mixed.output


@pytest.mark.parametrize(
    ("extra", "said"),
    [(["--hold-out", "zzz"], "--hold-out 'zzz' is in no run's file name: give part of one (they are"
      " small-llama_c16_i1024_o128.json"),
     (["--dtype", "fp16"], "--dtype goes with measuring this machine, not with --from"),
     (["--dtype", "bf16"], "--dtype goes with measuring this machine, not with --from"),  # named, though the default
     (["--device", "cuda"], "--device goes with measuring this machine, not with --from"),
     (["--tp", "4"], "--tp goes with measuring this machine, not with --from: the server's GPUs are --target's"),
     (["--served-model-name", "other"], "measured 'small-llama', not --served-model-name 'other'")],
    ids=lambda value: " ".join(value) if isinstance(value, list) else "",
)  # fmt: skip
def test_a_fit_option_that_would_change_nothing_is_refused(tmp_path, extra, said):
    """A --hold-out matching no run held nothing out and printed "fewer than 3 runs" over 11 runs; --dtype, --device
    and --tp were taken and ignored (the profile said bf16, cpu); the model refusal named --model's name where
    --served-model-name was compared (trial 260 #1, #2, #4). Each is one line, exit 2, nothing written."""
    small = REPO / "benchmarks" / "vllm_cpu" / "models" / "small-llama" / "config.json"
    args = ["calibrate", "--from", str(RESULTS / "small-llama_*.json"), "--model", str(small), "--target", "cpu",
            *SERVER, "--name", "refused", *extra]  # fmt: skip
    result = CliRunner(env={"MHA_DATA_DIR": str(tmp_path)}).invoke(app, args)
    assert result.exit_code == 2 and said in result.output, result.output
    assert not (tmp_path / "profiles" / "refused.json").exists()


def test_an_empty_profile_name_is_refused_not_replaced_by_the_default(tmp_path):
    """Trial 287 #1: `--name "$PROFILE"` with the variable unset wrote the default cpu-vllm-fit profile, exit 0; an
    empty value is refused (docs/input-limits.md), with --from and when measuring, and nothing is written."""
    runner = CliRunner(env={"MHA_DATA_DIR": str(tmp_path)})
    for args in (["--from", str(RESULTS / "tiny-llama_c4_i128_o64.json"), "--model", str(TINY_LLAMA), "--target",
                  "cpu", *SERVER], []):  # fmt: skip
        result = runner.invoke(app, ["calibrate", *args, "--name", ""])
        assert result.exit_code == 2 and "profile name '' must be 1-64 letters" in result.output
    assert not (tmp_path / "profiles").exists()


def test_a_profile_name_ending_in_json_is_refused_as_plan_would_read_it_as_a_path(tmp_path):
    """Trial 334 #1: `--name x.json` wrote profiles/x.json.json and printed `--profile x.json`, which plan reads as
    a file path (``load_profile``): exit 2 on the pasted line. Refused before anything is written; `x` is taken."""
    runner = CliRunner(env={"MHA_DATA_DIR": str(tmp_path)})
    args = ["calibrate", "--from", str(RESULTS / "tiny-llama_c4_i128_o64.json"), "--model", str(TINY_LLAMA),
            "--target", "cpu", *SERVER]  # fmt: skip
    refused = runner.invoke(app, [*args, "--name", "x.json"])
    assert refused.exit_code == 2
    assert "profile name 'x.json' ends in .json, which --profile reads as a file path: name it 'x'" in refused.output
    assert not (tmp_path / "profiles").exists()
    assert runner.invoke(app, [*args, "--name", "x"]).exit_code == 0
    assert (tmp_path / "profiles" / "x.json").is_file()


def test_the_use_it_line_plans_the_server_the_profile_was_fitted_on(tmp_path):
    """Trial 287 #2: the printed `mha plan` line left out the server's settings the fit was given, so a pasted plan
    ran vLLM's defaults (128 sequences, not the fitted 32); it carries them, and runs as printed."""
    import shlex

    runner = CliRunner(env={"MHA_DATA_DIR": str(tmp_path)})
    fitted = runner.invoke(app, ["calibrate", "--from", str(RESULTS / "tiny-llama_c4_i128_o64.json"), "--model",
                                 str(TINY_LLAMA), "--target", "cpu", *SERVER, "--name", "use", "--json"])  # fmt: skip
    assert fitted.exit_code == 0, fitted.output
    use = shlex.split(json.loads(fitted.stdout)["use"])
    assert use[:2] == ["mha", "plan"] and use[-2:] == ["--profile", "use"]
    given = dict(zip(SERVER[::2], SERVER[1::2], strict=True))
    assert {flag: use[use.index(flag) + 1] for flag in given} == given
    assert use[use.index("--tp") + 1] == use[use.index("--pp") + 1] == "1"  # the one server the runs measured
    plan = runner.invoke(app, [*use[1:], "--concurrency", "4", "--closed-form", "--json"])
    assert plan.exit_code == 0, plan.output
    assert "--max-num-seqs 32" in json.loads(plan.stdout)["launch"]["vllm"]
