"""A 2025 row that states its benchmark client has its TTFT read off that client's run simulated
(``benchmarks/fit_priors.py``, ``GenerationRow.simulated_figures``, which gives its ITL and tokens/s too:
``test_benchmark_client_figures.py``), not the closed form's steady state.

- The client blocks say what each row's notes say (prompts, concurrency, how lengths were drawn).
- A burst, counted by hand: ``vllm bench serve --request-rate inf --max-concurrency 512`` with 400 prompts sends all
  400 at t = 0; with 8,192 tokens a step and 2,048-token prompts the i-th prompt (from 0) ends no earlier than step
  ceil((i + 1) / 4), so the mean TTFT is about 50 prompt steps, where the closed form prices one.
- A row stating no client keeps the closed form's TTFT.
- SGLang cookbook rows (``bench: sglang``) replay ``sglang.bench_serving --dataset-name random``'s lengths
  (``core.serve.sglang_random``): its seed-1 draw gives each page's printed token totals exactly.
"""

from __future__ import annotations

import math
import re

import pytest

from mha_cli.core.cost.priors import prior_profile
from mha_cli.core.cost.serving import predict_serving
from mha_cli.core.cost.work import decode_shape, prefill_shape
from mha_cli.core.safe_yaml import load_yaml_file


def shipped_profile(row):
    return prior_profile(row.target, row.weight_dtype, None, generation=row.generation, release=row.release)


def test_the_client_blocks_say_what_the_rows_notes_say(fit_priors):

    raw = load_yaml_file(fit_priors.ROWS_2025_FILE)
    stated = [row for row in raw if "client" in row.get("mha", {}) and row["mha"]["client"].get("bench") != "sglang"]
    # 38 before rows7 (InferenceX's 22 vLLM H100 rows and 7 SGLang H200 rows (rows6), Vultr's 9 B200 rows); rows7 added
    # GPUStack's 15 random-dataset bursts; 53 until gpusampler made the 32K Qwen3-32B H100 burst usable; 54 before
    # rows8's 29 InferenceX SGLang 0.5.12 rows (benchmark_serving.py clients, not sglang's bench)
    assert len(stated) == 83
    for row in stated:
        mha, client = row["mha"], row["mha"]["client"]
        notes = " ".join(str(row["notes"]).split())
        inferencex = ("inferencex-issue-828/", "inferencex-issue-870/", "inferencex-dsr1-fp8-sglang-0.5.12/")  # rows8
        if mha["source_id"].startswith(inferencex):
            prompts, users = map(int, re.search(r"(\d+) prompts at --max-concurrency (\d+)", notes).groups())
            assert (client["num_prompts"], mha["concurrency"]) == (prompts, users)
            # InferenceX draws each length from [int(0.8 L), L]: 819-1,024 and 6,553-8,192 around the means recorded
            for nominal, mean in ((1024, 922), (8192, 7373)):
                low, high = (
                    math.floor(mean * (1 - client["range_ratio"])),
                    math.ceil(mean * (1 + client["range_ratio"])),
                )
                assert abs(low - int(0.8 * nominal)) <= 1 and abs(high - nominal) <= 1
        elif mha["source_id"].startswith("gpustack-"):  # rows7: vllm bench serve with every prompt sent at t = 0
            assert f"--num-prompts {client['num_prompts']}" in notes and "no --max-concurrency" in notes
            assert mha["concurrency"] == client["num_prompts"] and client["range_ratio"] == 0.0
        else:
            assert "50 prompts at c=1, 400 above" in notes
            assert client["num_prompts"] == (50 if mha["concurrency"] == 1 else 400)
            assert client["range_ratio"] == 0.0  # vllm bench serve's default: every prompt 2,048, every output 512


def test_a_burst_of_400_prompts_waits_about_50_prompt_steps_by_hand(fit_priors, rows):
    row = next(r for r in rows if r.source.startswith("vultr-b200") and r.max_concurrency == 512)
    assert (row.client.num_prompts, row.case.isl, row.case.osl) == (400, 2048, 512)
    budget = row.engine.max_num_batched_tokens
    assert budget == 8192  # vllm serve's default on a GPU of >= 70 GiB
    profile = shipped_profile(row)
    stepper = row.stepper.on(profile)
    # a step of the first wave: at least 8,192 - 400 prompt tokens (the decodes take the rest of the budget) ...
    least = stepper.step(prefill_shape(2048, sequences=3), prefill_shape(1648)).seconds
    # ... at most 8,192 prompt tokens beside 400 decodes at the longest context
    most = stepper.step(prefill_shape(2048, sequences=4), decode_shape(400, 2048 + 512)).seconds
    # all 400 sent at t = 0 (400 < 512 users); request i's prompt ends after ceil((i + 1) x 2,048 / 8,192) steps at
    # the soonest (the step it ends in may be short, so one fewer full step is counted) and ceil((i + 1) x 2,048 /
    # 7,792) at the latest; 512 output tokens outlast the wave's ~100 steps, so no request ends before all started
    soonest = sum(math.ceil((i + 1) * 2048 / budget) - 1 for i in range(400)) / 400
    latest = sum(math.ceil((i + 1) * 2048 / (budget - 400)) for i in range(400)) / 400
    assert (soonest, latest) == (49.5, pytest.approx(53.20, abs=0.01))
    front_end = profile.request_overhead_s
    ttft = row.predict(None)["ttft_ms"] / 1e3
    assert front_end + soonest * least <= ttft <= front_end + latest * most
    closed = predict_serving(row.case, profile, None, stepper=stepper).ttft_ms / 1e3
    assert closed < front_end + 2 * most  # the steady state: one prompt step and a short wait, not the burst


def test_a_run_has_no_more_requests_in_flight_than_its_client_sent(fit_priors, rows):
    """Vultr's 400 prompts at --max-concurrency 512 and 1,024 are one run of 400 at once (vllmeff): both rows are
    priced at 400 users, so their closed-form ITL is one figure (the page measures 15.46 ms at both), and the
    simulated run holds 400 at most; a row of fewer users than prompts, or stating no client, keeps its users."""
    from mha_cli.core.serve.replica import ClientSpec, simulate_deployment

    assert fit_priors.client_users(1024, ClientSpec(400)) == 400
    assert fit_priors.client_users(256, ClientSpec(400)) == 256
    assert fit_priors.client_users(1024, None) == 1024
    assert fit_priors.client_users(1024, ClientSpec(None)) == 1024
    vultr = {r.max_concurrency: r for r in rows if r.source.startswith("vultr-b200")}
    assert {users: vultr[users].case.concurrency for users in (256, 512, 1024)} == {256: 256, 512: 400, 1024: 400}
    priced = [vultr[users].predict(None, ("itl_ms",))["itl_ms"] for users in (512, 1024)]
    assert priced[0] == priced[1]
    row = vultr[1024]
    profile = prior_profile(row.target, row.weight_dtype, None, generation=row.generation, release=row.graph_release)
    assert simulate_deployment(row.case, profile, row.engine, row.client).max_running == 400


def test_a_lone_users_simulated_ttft_is_the_closed_forms(rows):
    """One user, 50 prompts: nothing to queue behind, so the run's TTFT is the prompt's steps and the front end."""
    row = next(r for r in rows if r.source.startswith("vultr-b200") and r.case.concurrency == 1)
    profile = shipped_profile(row)
    closed = predict_serving(row.case, profile, None, stepper=row.stepper.on(profile))
    # the closed form adds half a decode step (an arrival mid-step); a lone user's send finds the engine idle
    assert row.predict(None)["ttft_ms"] == pytest.approx(
        closed.ttft_ms - closed.decode_step.seconds * 1e3 / 2, rel=0.02
    )


def test_a_row_stating_no_client_keeps_the_closed_form(rows):
    row = next(r for r in rows if r.client is None and "ttft_ms" in r.measured)
    profile = shipped_profile(row)
    closed = predict_serving(row.case, profile, None, stepper=row.stepper.on(profile))
    assert row.predict(None)["ttft_ms"] == closed.ttft_ms


def test_the_fit_figures_are_priced_without_the_simulation(rows, monkeypatch):
    """The step fit's loss (``generation_loss``) prices ITL and tokens/s by the closed form, times ratios simulated
    once a round (``client_ratios``): no simulated run in its loop."""
    row = next(r for r in rows if r.client is not None)
    monkeypatch.setattr(type(row), "simulated_figures", lambda *_: pytest.fail("simulated in the fit's loop"))
    priced = row.predict(None, ("itl_ms", "tokens_per_s_per_gpu"), simulated=False)
    assert set(priced) == {"itl_ms", "tokens_per_s_per_gpu"}


QUOTED_TOTALS = re.compile(r"Successful requests: (\d+) \| Total input tokens: (\d+) \| Total generated tokens: (\d+)")
PAGE_INPUT_TOTALS = {83: 49668, 84: 249841}
"""Llama4.md's Scout runs print 10,000 and 10 more input tokens than the draw its command makes (39,668, 249,831;
its Maverick runs of the same commands print those): the page's figure, kept as printed."""


def sglang_rows(raw):
    return [(i, row) for i, row in enumerate(raw) if str(row.get("mha", {}).get("generation", "")).startswith("sglang")]


def test_the_sglang_client_blocks_replay_the_token_totals_each_page_printed(fit_priors):

    from mha_cli.core.serve.sglang_random import sglang_random_lengths

    raw = load_yaml_file(fit_priors.ROWS_2025_FILE)
    stated = [(i, row) for i, row in sglang_rows(raw) if row["mha"].get("client", {}).get("bench") == "sglang"]
    # 53 before the 8 sglang-docs-qwen3.6 rows at 1,024 users were given the client their notes state (2026-12-03)
    # 61 before the 2 NVFP4 cells at 1,024 users were kept as not expressible (sglreg: a MIXED_PRECISION checkpoint)
    assert len(stated) == 59  # InferenceX's SGLang H200 rows (rows6) state its own client, checked above
    # the SGLang docs' Qwen3.6 cells at 1,024 users: the page header's client (2,048 prompts, --random-range-ratio 1.0),
    # no token totals printed
    docs = [index for index, row in stated if row["mha"]["source_id"].startswith("sglang-docs-qwen3.6/")]
    assert len(docs) == 6  # bf16 and FP8 on H200, B200 and B300 (8 with the NVFP4 cells, before sglreg)
    for index, row in stated:
        mha, client = row["mha"], row["mha"]["client"]
        notes = " ".join(str(row["notes"]).split())
        if index in docs:
            assert (client["num_prompts"], client["range_ratio"], mha["concurrency"]) == (2048, 1.0, 1024)
            assert (
                "--random-range-ratio 1.0" in notes and "prompts 8/64/2048/8192 at concurrency 1/16/1024/4096" in notes
            )
            continue
        assert f"client: random dataset, {client['num_prompts']} prompts" in notes
        assert client["bench"] == "sglang" and client["range_ratio"] == 0.0  # the commands give no ratio: 0.0
        prompts, inputs, outputs = map(int, QUOTED_TOTALS.search(" ".join(row["quote"].split())).groups())
        lengths = sglang_random_lengths(
            client["random_input_len"], client["random_output_len"], prompts, range_ratio=client["range_ratio"]
        )
        assert prompts == client["num_prompts"] == len(lengths)
        assert PAGE_INPUT_TOTALS.get(index, sum(i for i, _ in lengths)) == inputs
        drawn = sum(o for _, o in lengths)
        assert drawn * 0.997 <= outputs <= drawn  # a few runs stop a request or two early (4,210 of 4,220)
        assert (mha["isl"], mha["osl"]) == (round(inputs / prompts), round(outputs / prompts))


def test_sglang_rows_without_a_client_block_are_sharegpt_runs_the_docs_long_bursts_or_measure_no_ttft(fit_priors):
    """ShareGPT runs draw their lengths from the dataset's conversations (not at hand); the docs_new Qwen3.6 cells'
    runs (2,048 and 8,192 prompts of 8,192 + 1,024 tokens) are left to the closed form (priors_2025.md); the B200
    sweep gist's one-user cells record no TTFT (a block moves TTFT alone)."""

    raw = load_yaml_file(fit_priors.ROWS_2025_FILE)
    without = [row for _, row in sglang_rows(raw) if "mha" in row and "client" not in row["mha"]]
    kinds = []
    for row in without:
        notes, mha = " ".join(str(row["notes"]).split()), row["mha"]
        if re.search(r"client: sharegpt dataset, \d+ prompts", notes):
            kinds.append("sharegpt")
        elif mha["source_id"].startswith("sglang-docs-qwen3.6/") and "--random-range-ratio 1.0" in notes:
            kinds.append("docs burst")
        else:
            assert "ttft_ms" not in mha["measured"]
            kinds.append("no ttft")
    # (7, 16, 3) before the 1,024-user docs cells stated their client (2026-12-03): the 4,096-user ones remain;
    # (7, 8, 3) before the 2 NVFP4 cells at 4,096 users were kept as not expressible (sglreg)
    assert (kinds.count("sharegpt"), kinds.count("docs burst"), kinds.count("no ttft")) == (7, 6, 3)


@pytest.mark.parametrize(
    ("input_len", "output_len", "count", "ratio", "seed"),
    [(1000, 1000, 10, 0.0, 1), (8000, 1000, 320, 0.0, 1), (300, 7, 50, 0.3, 7), (8192, 1024, 20, 1.0, 1)],
)
def test_sglangs_random_draw_is_numpys_legacy_randint(input_len, output_len, count, ratio, seed):
    """``compute_random_lens``: ``np.random.randint(max(int(L r), 1), L + 1)``, inputs then outputs, after
    ``np.random.seed(seed)`` (sglang/bench_serving.py, 0.5.8)."""
    numpy = pytest.importorskip("numpy")
    from mha_cli.core.serve.sglang_random import sglang_random_lengths

    numpy.random.seed(seed)
    inputs = numpy.random.randint(max(int(input_len * ratio), 1), input_len + 1, size=count).tolist()
    outputs = numpy.random.randint(max(int(output_len * ratio), 1), output_len + 1, size=count).tolist()
    assert sglang_random_lengths(input_len, output_len, count, range_ratio=ratio, seed=seed) == list(
        zip(inputs, outputs, strict=True)
    )


def test_sglangs_range_ratio_is_the_low_ends_fraction_not_a_spread_about_the_length():
    from mha_cli.core.serve.sglang_random import sglang_random_lengths

    spread = sglang_random_lengths(1000, 1000, 500)  # the default 0.0: [1, 1,000], mean about 500
    assert min(i for i, _ in spread) >= 1 and max(i for i, _ in spread) <= 1000
    assert sum(i for i, _ in spread) == 249831  # the pages' 500-prompt runs: 249,831 input tokens
    assert set(sglang_random_lengths(8192, 1024, 8, range_ratio=1.0)) == {(8192, 1024)}


def test_a_lone_sglang_users_ttft_is_each_drawn_prompts_own_step(rows):
    """Llama3.1.md, 10 prompts at --max-concurrency 1 of up to 8,000 tokens on A100s: each request runs alone, so its
    TTFT is the front end plus one prompt step of its drawn length (each within the step's budget): the run's mean
    is their average, its median (what the row is judged on: the page prints it) the mean of the 5th and 6th."""
    from mha_cli.core.cost.work import prefill_shape
    from mha_cli.core.serve.replica import simulate_deployment

    row = next(r for r in rows if r.index == 79)
    assert (row.client.num_prompts, row.case.concurrency) == (10, 1)
    assert (row.ttft_statistic, row.judged["ttft_ms"], row.measured["ttft_ms"]) == ("median", 318.02, 395.25)
    lengths = [prompt for prompt, _ in row.client.lengths]
    assert sum(lengths) == 41941 and max(lengths) <= min(8000, row.engine.max_num_batched_tokens)
    profile = prior_profile(row.target, row.weight_dtype, None, generation=row.generation, release=row.graph_release)
    stepper = row.stepper.on(profile)
    each = sorted(profile.request_overhead_s + stepper.step(prefill_shape(n)).seconds for n in lengths)
    by_hand = sum(each) / 10
    # within 0.2%: the simulated run's step groups the prompt's rows as the simulator does (0.09% apart since the
    # 16-row GEMM tiles, 2026-12-03; 1e-6 before)
    run = simulate_deployment(row.case, profile, row.engine, row.client)
    assert run.ttft_ms.mean == pytest.approx(by_hand * 1e3, rel=2e-3)
    # the row's TTFT was the run's mean (== by_hand) until the page's median was recorded (ttftmed, 2026-12-04)
    assert row.predict(None)["ttft_ms"] == pytest.approx((each[4] + each[5]) / 2 * 1e3, rel=2e-3)
    assert row.predict(None)["ttft_ms"] != pytest.approx(by_hand * 1e3, rel=0.05)  # 10 lengths from 1 to 8,000
    one_mean_prompt = profile.request_overhead_s + stepper.step(prefill_shape(4194)).seconds
    # the drawn lengths, not their mean, are priced: 0.95% apart since the 2026-12-04 refit (over 1% before, when SGLang's
    # NVIDIA prompt steps paid the 80 us launch floor fitted on TTFT), against the 0.2% the simulated run is held to
    assert by_hand != pytest.approx(one_mean_prompt, rel=0.005)
