"""`mha kv` and `mha recommend` price their latency with the named engine generation's constants, as `mha plan`
does (``core.cost.latency.engine_prior``); without --engine, vLLM's latest generation's, as its memory."""

import pytest

from tests.conftest import reference_hf_config

DESIGN = ("--params", "70B", "--seq", "32k", "--target", "h200")


def test_recommend_prices_sglang_with_its_generation(cli):
    default = cli.json("recommend", *DESIGN)["latency"]
    sglang = cli.json("recommend", *DESIGN, "--engine", "sglang")["latency"]
    # before the first 2026-12-03 refit: 38.82 and 58.09 ms, prefill 10,214.5 ms;
    # before the 2026-12-03 gemmramp refit: 40.07 and 43.31 ms, prefill 11,834.1 ms
    # no engine: vLLM 0.21 with vLLM V1's constants; 39.55 ms on the default constants (2023-24 engines) before
    # no --engine priced vLLM's steps too (2026-12-08)
    assert (default["profile"], round(default["decode_step_ms"], 2)) == ("h200-prior@vllm-0.21", 38.1)
    # sglang-0.5's constants (cost_priors_generations.json): another decode step, the same datasheet bound
    # sglang 60.9 ms, prefill 9,471.9 ms before the fbd68a5 refit (sglramp's attention_half_rows)
    # 59.47 ms, prefill 9,734.6 ms before the 2026-12-04 refit (NVIDIA's measured eager launch time, sglfloor)
    # 56.92 ms, prefill 8,684.9 ms before the refit on rows8's InferenceX DeepSeek-R1 curves (2026-12-04, late)
    assert (sglang["profile"], round(sglang["decode_step_ms"], 2)) == ("h200-prior@sglang-0.5", 47.7)
    assert round(sglang["prefill_ms"], 1) == 9_490.2 and sglang["decode_bound_ms"] == default["decode_bound_ms"]
    assert "sglang-0.5" in sglang["profile_source"] and sglang["relative_error"] != default["relative_error"]


@pytest.mark.parametrize(
    ("engine", "profile", "decode_ms"),
    [(None, "h200-prior@vllm-0.21", 6.42), ("sglang", "h200-prior@sglang-0.5", 8.44),
     ("trtllm", "h200-prior@trtllm-pytorch", 7.19)],
    # no engine: 6.97 on the default constants before 2026-12-08 (vLLM's latest generation's since);
    # 7.15, 9.62, 8.64 before the first 2026-12-03 refit; 7.37, 8.19, 9.15 before the 2026-12-03 gemmramp refit;
    # sglang 9.93 before the fbd68a5 refit, 9.36 before the 2026-12-04 refit, 9.05 before the rows8 refit; trtllm 8.62 before the fp4eff refit (its bandwidth efficiency 0.95 -> 0.905, kernel overhead 11.8 -> 6.7 us)
)  # fmt: skip
def test_kv_prices_the_engine_generation_as_plan_does(cli, engine, profile, decode_ms):
    source = str(reference_hf_config("llama-3.1-8b"))
    engine_args = () if engine is None else ("--engine", engine)
    latency = cli.json("kv", source, "--target", "h200", "--seq", "32k", *engine_args)["latency"]
    assert (latency["profile"], round(latency["decode_step_ms"], 2)) == (profile, decode_ms)
    plan = cli.json("plan", source, "--target", "h200", "--tp", "1", "--concurrency", "1", *engine_args)
    assert plan["profile"]["name"] == latency["profile"]  # the same profile priced both
    assert plan["profile"]["source"] == latency["profile_source"]


def test_the_text_names_the_generation(cli):
    out = " ".join(cli.run("recommend", *DESIGN, "--engine", "sglang").output.split())
    # the band of its 14 held-out figures on the H200 (trial 402 #3: the generation's 49% on every GPU before); 47%
    # before the fbd68a5 refit (its held-out p80 error), 50%, then 60% before the gemmramp refit; 50% before the
    # 2026-12-04 refit; 54% before the rows8 refit
    assert "cost model on h200-prior@sglang-0.5 (-17%/+20%" in out  # trial 406 #6: "+/- 17%" before


def test_naming_the_targets_prior_beside_an_engine_is_the_default_not_another_profile(cli):
    """--profile h100-sxm-prior (the documented default) beside --engine priced the generation-less prior: plan's
    TTFT fell 87.5 -> 33.2 ms with its 45 ms front end dropped, unannounced (found by newuser trial 232). It is now
    the engine generation's prior, as without --profile; ``ID-prior`` alone (no engine) is vLLM's latest
    generation's, the default engine's, as a plan without --profile prices (the default constants before
    2026-12-08)."""
    args = ("plan", "llama-3.1-8b", "--target", "h100", "--tp", "1", "--closed-form")
    default = cli.json(*args, "--engine", "vllm@0.11")
    named = cli.json(*args, "--engine", "vllm@0.11", "--profile", "h100-sxm-prior")
    assert named["profile"]["name"] == default["profile"]["name"] == "h100-sxm-prior@vllm-v1"
    assert (named["ttft_ms"], named["front_end_ms"]) == (default["ttft_ms"], default["front_end_ms"]) != (None, 0.0)
    plain = cli.json(*args, "--profile", "h100-sxm-prior")
    assert plain == cli.json(*args) and plain["profile"]["name"] == "h100-sxm-prior@vllm-0.21"
    assert plain["front_end_ms"] == 45.0
    kv = ("kv", "llama-3-8b", "--target", "h100", "--engine", "sglang")
    assert cli.json(*kv, "--profile", "h100-sxm-prior")["latency"] == cli.json(*kv)["latency"]


def test_a_profile_of_another_device_is_said_on_stderr_as_it_runs(cli):
    """Trial 343 #6: a profile measured elsewhere priced an H100 plan with exit 0 and nothing on stderr (only among
    the JSON's notes); it is now a notice line too. The control: the target's own prior says nothing."""
    args = ("plan", "llama-3-8b", "--target", "a100-80gb", "--tp", "1", "--closed-form", "--json")
    other = cli.run(*args, "--profile", "h100-sxm-prior")
    said = "profile h100-sxm-prior@vllm-0.21 was measured on NVIDIA H100 SXM5 80GB, not NVIDIA A100 80GB SXM4: its rates stand in"
    assert other.exit_code == 0 and other.stderr.strip() == said
    assert cli.run(*args, "--profile", "a100-80gb-prior").stderr == ""
    # review 346 #5: kv and recommend price latency on --profile too, and say it among their warnings
    kv = cli.json("kv", "llama-3-8b", "--target", "a100-80gb", "--profile", "h100-sxm-prior")
    assert said in kv["warnings"]
    assert said not in cli.json("kv", "llama-3-8b", "--target", "a100-80gb", "--profile", "a100-80gb-prior")["warnings"]
    designed = cli.json("recommend", "--params", "8B", "--target", "a100-80gb", "--profile", "h100-sxm-prior")
    assert said in designed["warnings"]
