"""The latency cost model (``core.cost``): its work counts against independent formulas, its physics, its priors.

- FLOPs: a prefill's matmuls and attention equal the roofline's 2 x active x tokens + pairs x pair FLOPs exactly;
  a decode step's bytes on the datasheet ceiling equal the roofline's decode bound.
- Physics: no prediction goes below its bound; doubling a bandwidth-bound step's weights about doubles its time;
  more concurrency never lowers ITL or TTFT; tensor parallelism cuts a large model's decode step.
- Priors: the shipped constants reproduce the held-out error ``cost_priors.json`` records, and it stays small.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from mha_cli.core.cost.priors import datasheet_profile, fitted_constants, prior_profile
from mha_cli.core.cost.serving import ServingCase, predict_serving
from mha_cli.core.cost.step import step_time
from mha_cli.core.cost.work import causal_pairs_after, decode_shape, forward_ops, prefill_shape
from mha_cli.core.kv import kv_footprint
from mha_cli.core.memory import plan_memory
from mha_cli.core.params import count_params
from mha_cli.core.presets import get_preset
from mha_cli.core.roofline import attention_pair_flops, causal_pairs, estimate_roofline
from mha_cli.core.schemas import DeploymentSpec
from mha_cli.core.targets import load_targets, resolve_target

ROOT = Path(__file__).parent.parent
TARGETS = load_targets()


def _fit_priors_module():
    spec = importlib.util.spec_from_file_location("fit_priors", ROOT / "benchmarks" / "fit_priors.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["llama-3-8b", "qwen3-0.6b", "gemma-2-9b", "gpt2"])
def test_prefill_flops_equal_the_roofline_formula(name):
    model = get_preset(name)
    seq = 1000
    ops = forward_ops(model, prefill_shape(seq, all_logits=True))
    flops = sum(op.count * op.flops for op in ops)
    params = count_params(model)
    elementwise = params.n_dense_mlp_layers * params.norms_per_layer + params.final_norm  # scaled, not multiplied
    expected = 2 * (params.active - elementwise) * seq + attention_pair_flops(model) * causal_pairs(model, seq)
    assert flops == pytest.approx(expected, rel=5e-4)  # biases (GPT-2) are added, not multiplied: 0.035%


def test_causal_pairs_after_counts_each_query_against_the_keys_it_sees():
    for new, context, window in [(7, 0, None), (5, 3, None), (9, 0, 4), (6, 10, 4), (4, 2, 5)]:
        brute = sum(
            min(context + i + 1, window or 10**9) for i in range(new)
        )  # query i sees context + i + 1 keys, at most the window
        assert causal_pairs_after(new, context, window) == brute


def test_decode_bytes_on_the_datasheet_equal_the_roofline_bound():
    model, target = get_preset("llama-3-8b"), resolve_target("h100")
    kv = kv_footprint(model, seq_len=4096, batch=1)
    plan = plan_memory(target, model=model, kv=kv, weight_dtype="bf16")
    roof = estimate_roofline(model, target, params=count_params(model), weight_dtype="bf16", kv=kv, plan=plan)
    ops = forward_ops(model, decode_shape(1, 4095))
    ceiling = step_time(ops, datasheet_profile(target.target))
    # the same weights and cache; the cost model adds the activations, norms and the sampler's logits (< 1%)
    assert ceiling.seconds == pytest.approx(roof.decode_step_s, rel=0.01)
    assert ceiling.seconds >= roof.decode_step_s


@pytest.mark.parametrize(
    "name", ["llama-3-8b", "mixtral-8x7b", "deepseek-v2-lite", "gemma-3-27b", "qwen3-next-80b-a3b"]
)
@pytest.mark.parametrize("target_id", ["h100-sxm", "a10g", "mi300x"])
@pytest.mark.parametrize(("isl", "osl", "concurrency"), [(128, 128, 1), (2048, 256, 32), (8000, 64, 4)])
def test_no_prediction_goes_below_its_bound(name, target_id, isl, osl, concurrency):
    target = TARGETS[target_id]
    case = ServingCase(get_preset(name), isl, osl, concurrency)
    result = predict_serving(case, prior_profile(target), datasheet_profile(target))
    for key in ("ttft_ms", "itl_ms", "e2e_ms"):
        assert getattr(result, key) >= getattr(result.bounds, key) > 0
    assert result.output_tokens_per_s <= result.bounds.output_tokens_per_s


def test_doubling_the_weights_of_a_bandwidth_bound_step_doubles_its_time():
    model, target = get_preset("llama-3.1-70b"), TARGETS["h200"]
    shape = decode_shape(1, 256)  # fixed costs (kernels, the step) are the rest: a few ms against ~30 ms of weights
    for profile, low, high in [(datasheet_profile(target), 1.98, 2.0), (prior_profile(target), 1.8, 2.0)]:
        bf16 = step_time(forward_ops(model, shape, weight_dtype="bf16"), profile).seconds
        fp32 = step_time(forward_ops(model, shape, weight_dtype="fp32"), profile).seconds
        assert low <= fp32 / bf16 <= high


def test_more_users_never_lower_latency_and_tp_cuts_a_large_models_step():
    model, target = get_preset("llama-3.1-70b"), TARGETS["h100-sxm"]
    profile, ceiling = prior_profile(target), datasheet_profile(target)
    previous = None
    for users in (1, 4, 16, 64):
        result = predict_serving(ServingCase(model, 1024, 256, users, tp=4), profile, ceiling)
        if previous is not None:
            assert result.itl_ms >= previous.itl_ms and result.ttft_ms >= previous.ttft_ms
            assert result.output_tokens_per_s > previous.output_tokens_per_s
        previous = result
    tp4 = predict_serving(ServingCase(model, 1024, 256, 1, tp=4), profile, ceiling).itl_ms
    tp8 = predict_serving(ServingCase(model, 1024, 256, 1, tp=8), profile, ceiling).itl_ms
    assert tp8 < tp4 < 2 * tp8  # less per device, but the all-reduces and fixed costs do not shrink


def test_queued_users_wait_in_ttft():
    model, target = get_preset("llama-3-8b"), TARGETS["a100-80gb"]
    admitted = ServingCase(model, 1024, 128, 8, admitted_per_replica=8)
    queued = ServingCase(model, 1024, 128, 16, admitted_per_replica=8)
    a = predict_serving(admitted, prior_profile(target), datasheet_profile(target))
    q = predict_serving(queued, prior_profile(target), datasheet_profile(target))
    assert q.queued_per_replica == 8 and q.running_per_replica == 8
    assert q.itl_ms == pytest.approx(a.itl_ms)
    assert q.ttft_ms > a.ttft_ms + 0.9 * a.e2e_ms  # one whole request lifetime of waiting, on average


def test_the_shipped_priors_reproduce_their_recorded_holdout_error():
    fit_priors = _fit_priors_module()
    rows = fit_priors.load_rows()
    found = fit_priors.errors([row for row in rows if row.split == "holdout"], None)
    recorded = fitted_constants()["holdout"]
    assert fit_priors.summary(found)["median_abs_error"] == pytest.approx(recorded["median_abs_error"], abs=1e-4)
    assert recorded["median_abs_error"] <= 0.25  # the model predicts held-out engines and GPUs within 25%, median
    fitted = {row.index for row in rows if row.split == "fit"}
    assert set(json.loads(fitted_constants()["fitted_on"].split(": ", 1)[1])) == fitted


def test_no_holdout_row_enters_the_fit():
    fit_priors = _fit_priors_module()
    rows = fit_priors.load_rows()
    splits = {row.split for row in rows}
    assert splits == {"fit", "holdout"}
    assert len({row.target.id for row in rows if row.split == "holdout"}) >= 5


def test_engine_admits_bound_the_running_batch():
    model = get_preset("llama-3.1-70b")
    deployment = DeploymentSpec(seq_len=5500, tp=2)
    kv = kv_footprint(model, seq_len=5500, batch=100, tp=2)
    plan = plan_memory(resolve_target("2xh100"), model=model, kv=kv, weight_dtype="fp8", deployment=deployment)
    case = ServingCase(model, 5000, 500, 100, tp=2, admitted_per_replica=plan.engine.admitted_per_replica)
    target = TARGETS["h100-sxm"]
    result = predict_serving(case, prior_profile(target, "fp8"), datasheet_profile(target, "fp8"))
    assert result.running_per_replica == plan.engine.admitted_per_replica < 100


def test_kv_and_recommend_carry_the_cost_models_latency_beside_their_roofline(cli):
    kv = cli.json("kv", "llama-3-8b", "--target", "h100", "--seq", "8k")["latency"]
    assert kv["decode_step_ms"] > kv["decode_bound_ms"]
    # Llama-3-8B at 8K, batch 1: 16,083,599,360 B read per step (test_roofline) over 3.35 TB/s
    assert kv["decode_bound_ms"] == pytest.approx(16_083_599_360 / 3.35e12 * 1e3, rel=0.01)
    assert kv["prefill_ms"] > kv["prefill_bound_ms"] > 0
    recommend = cli.json("recommend", "--params", "7B", "--seq", "8192", "--target", "a100")
    latency, roofline = recommend["latency"], recommend["roofline"]
    assert latency["decode_bound_ms"] == pytest.approx(roofline["decode_step_s"] * 1e3, rel=0.01)
    assert latency["decode_step_ms"] > latency["decode_bound_ms"]
    assert cli.json("kv", "llama-3-8b")["latency"] is None  # no target, no device to time on


def test_one_user_is_one_users_throughput_however_many_replicas_wait():
    """Review finding: users per replica were rounded up and multiplied back, so 1 user on 8 replicas made 8x."""
    model, target = get_preset("llama-3-8b"), TARGETS["h100-sxm"]
    one = predict_serving(ServingCase(model, 1024, 128, 1), prior_profile(target), datasheet_profile(target))
    eight = predict_serving(
        ServingCase(model, 1024, 128, 1, replicas=8), prior_profile(target), datasheet_profile(target)
    )
    assert eight.output_tokens_per_s == pytest.approx(one.output_tokens_per_s)
    assert eight.output_tokens_per_s_per_gpu == pytest.approx(one.output_tokens_per_s_per_gpu / 8)


def test_routed_experts_are_one_grouped_matmul_of_the_touched_experts_per_layer():
    model = get_preset("mixtral-8x7b")  # 8 experts of 4096 x 14336, top 2, 32 MoE layers
    ops = [op for op in forward_ops(model, decode_shape(1, 100)) if op.name.startswith("expert")]
    gate_up = next(op for op in ops if op.name == "expert 14336x4096")
    down = next(op for op in ops if op.name == "expert 4096x14336")
    assert gate_up.count == 2 * 32 and down.count == 32  # per layer: gate, up and down, each one grouped kernel
    expert_matrix = 14336 * 4096 * 2
    assert gate_up.bytes == pytest.approx(2 * expert_matrix + 2 * (4096 + 14336) * 2)  # one token: 2 experts
    assert gate_up.tokens == 1


def test_pipeline_stages_read_the_head_once_and_the_same_layers_in_all():
    from mha_cli.core.cost.stepper import Stepper

    model, target = get_preset("llama-3.1-70b"), TARGETS["h100-sxm"]
    ceiling = datasheet_profile(target)
    whole = Stepper(ServingCase(model, 1024, 128, 1), ceiling).step(decode_shape(1, 1000))
    staged = Stepper(ServingCase(model, 1024, 128, 1, pp=8), ceiling).step(decode_shape(1, 1000))
    assert staged.bytes == pytest.approx(whole.bytes)  # 8 stages of 10 layers, the head on one of them
    assert staged.seconds > whole.seconds  # plus the 7 sends


def test_profiles_with_impossible_figures_are_refused():
    from pydantic import ValidationError

    from mha_cli.core.cost.profile import Curve, DeviceProfile

    with pytest.raises(ValidationError):
        Curve(sizes=[1.0, 2.0], rates=[1e9, 0.0])
    with pytest.raises(ValidationError, match="sizes must increase"):
        Curve(sizes=[2.0, 1.0], rates=[1e9, 1e9])
    good = prior_profile(TARGETS["h100-sxm"]).model_dump()
    with pytest.raises(ValidationError):
        DeviceProfile.model_validate({**good, "kernel_overhead_s": -1e-6})


@pytest.mark.parametrize(
    ("name", "tp", "pp", "tokens", "chunk", "riding", "kv_dtype", "profile"),
    [
        ("gemma-2-9b", 1, 1, 300_007, 1000, 3, "bf16", "prior"),  # windows of 4,096 fill at chunk 4, riding decodes
        ("gpt-oss-20b", 1, 1, 50_000, 100, 0, "bf16", "prior"),  # windows of 128, MoE
        # 1-token chunks on the ceiling: on a prior their attention (16 and 4 rows: the heads sharing a KV head) is
        # memory-bound on the bandwidth curve's log-linear stretches, which bend everywhere, so no run is a line
        # and the sum takes one call per chunk; the ceiling's flat bandwidth keeps a bend (memory to compute)
        ("deepseek-v2-lite", 1, 1, 3_000, 1, 0, "bf16", "ceiling"),  # absorbed MLA
        ("llama-3-8b", 2, 2, 3_001, 3, 2, "fp8", "ceiling"),  # pipeline stages, riding decodes
        ("qwen3-next-80b-a3b", 2, 1, 3_000_000, 8192, 0, "bf16", "ceiling"),  # fixed-state layers beside attention
    ],
    ids=["windows", "moe-window-128", "mla-one-token", "pp2-tiny-chunks", "linear-attention"],
)
def test_a_long_prompts_chunks_are_summed_in_closed_form_as_step_by_step(
    monkeypatch, name, tp, pp, tokens, chunk, riding, kv_dtype, profile
):
    """Beyond EXACT_CHUNKS, a prompt's chunks are summed without a step each (a 1G-token prompt was 131,072 steps of
    the cost model: mha kv hung); the sum equals the step-by-step one to rounding, and takes a bounded number of
    calls (here: how many, against the chunks)."""
    from mha_cli.core.cost import stepper as stepper_module
    from mha_cli.core.cost.stepper import Stepper, chunked_prefill

    target = TARGETS["h100-sxm"]
    on = prior_profile(target) if profile == "prior" else datasheet_profile(target)
    case = ServingCase(get_preset(name), tokens, 1, 1, tp=tp, pp=pp, kv_dtype=kv_dtype)
    stepper = Stepper(case, on)
    shapes = [decode_shape(riding, tokens)] if riding else []
    calls = []
    real_step, real_context = stepper.step, stepper.context_seconds
    monkeypatch.setattr(stepper, "step", lambda *shape: calls.append("step") or real_step(*shape))
    monkeypatch.setattr(stepper, "context_seconds", lambda shape: calls.append("context") or real_context(shape))
    closed, steps = chunked_prefill(stepper, tokens, chunk, shapes)
    assert steps == -(-tokens // (chunk - riding)) > stepper_module.EXACT_CHUNKS
    assert calls.count("step") <= 2 and len(calls) < 2_500
    monkeypatch.setattr(stepper_module, "EXACT_CHUNKS", 10**9)
    exact, exact_steps = chunked_prefill(stepper, tokens, chunk, shapes)
    assert exact_steps == steps
    assert closed == pytest.approx(exact, rel=1e-12)


def test_piecewise_linear_sums_are_exact_across_bends_jumps_and_curves():
    """A control for ``sum_piecewise_linear``: a kink, a jump and a smooth curve (a bandwidth curve's shape), each a
    place a run summed as a line would be wrong; against the sum of every term."""
    import math

    from mha_cli.core.cost.stepper import sum_piecewise_linear

    def bent(index: int) -> float:
        return max(3.0 * index + 5, 10.0 * index - 7_000) + (2.5 if index >= 123_457 else 0.0)

    def curved(index: int) -> float:
        return index / (1 + 0.1 * math.log1p(index))

    for value in (bent, curved, lambda index: 7.0, lambda index: 0.0):
        every = math.fsum(value(index) for index in range(400_000))
        assert sum_piecewise_linear(value, 400_000) == pytest.approx(every, rel=1e-9, abs=1e-9)
    assert sum_piecewise_linear(bent, 0) == 0.0 and sum_piecewise_linear(bent, 1) == bent(0)


def test_attention_rows_are_query_tokens_times_the_query_heads_sharing_a_kv_head():
    def rows(name, shape, tp=1):
        return [op.tokens for op in forward_ops(get_preset(name), shape, tp=tp) if op.kind == "attention"]

    # DeepSeek-V3: 128 heads; absorbed decode, every head on the rank reads the one latent
    assert rows("deepseek-v3", decode_shape(1, 4095)) == [1 * 128]
    assert rows("deepseek-v3", decode_shape(4, 4095), tp=8) == [4 * 128 // 8]
    assert rows("deepseek-v3", prefill_shape(512)) == [512]  # a prefill decompresses: each head its own K and V
    # Llama-3.1-70B: 64 query heads, 8 KV heads; at tp 16 a rank has 4 query heads and one replicated KV head
    assert rows("llama-3.1-70b", decode_shape(2, 1000)) == [2 * 64 // 8]
    assert rows("llama-3.1-70b", decode_shape(2, 1000), tp=16) == [2 * 64 // 16]
    assert rows("gpt2", decode_shape(3, 100)) == [3]  # MHA: 12 query heads, 12 KV heads


def test_mla_decode_at_tp_1_is_priced_at_the_rows_its_kernel_computes():
    from mha_cli.core.cost.step import op_seconds

    profile = prior_profile(TARGETS["h200"])
    ops = forward_ops(get_preset("deepseek-v3"), decode_shape(1, 4095))
    attention = next(op for op in ops if op.kind == "attention")
    seconds, _ = op_seconds(attention, profile, 1)
    # one sequence, 4096 latents of 576 bf16 values read + 1 written: 4097 x 1152 B; 128 heads x 4096 keys
    # x 2 x (2 x 512 + 64) FLOPs = 1.14 GFLOP, on FlashMLA's tiles: 128 rows are two whole 64-row tiles, at the
    # bf16 datasheet x the attention efficiency (core.cost.decode_tiles; was the rows law's rate at 128 rows,
    # attention_flops.at(128): 4.17 us, now 2.62 us)
    assert attention.bytes == 4097 * 576 * 2
    assert attention.flops == 4096 * 128 * 2 * (2 * 512 + 64)
    assert attention.decode is not None and attention.decode.rows == 128
    memory = attention.bytes / profile.cache_bandwidth.at(attention.bytes)
    compute = attention.flops / (989.4e12 * fitted_constants()["constants"]["attention_efficiency"])
    assert seconds == pytest.approx(max(memory, compute))
    assert seconds < 3 * memory  # near the ridge point, as FlashMLA's decode is
    # the control: the same op read at one row by the rows law (the query tokens alone) is far slower
    one_row, one_row_compute = op_seconds(attention._replace(tokens=1, decode=None), profile, 1)
    assert one_row_compute and one_row > 20 * seconds


def test_a_window_and_a_chunk_of_one_size_are_both_priced():
    """Review 380 #1: local layers of window 8,192 and chunked layers of chunk 8,192 shared one key of the attention
    layout, so one kind's layers were dropped from the step: 8 of 12 attended. Each kind is its own entry now."""
    from mha_cli.core.cost.work import StepShape, attention_layout, sequence_ops
    from mha_cli.core.schemas import ModelSpec

    model = ModelSpec(name="mixed", d_model=512, n_layers=12, n_heads=8, vocab_size=1000, d_ff=1024,
                      layer_pattern=["local", "chunked", "global"], sliding_window=8192, attention_chunk=8192)  # fmt: skip
    layout = attention_layout(model, 1, "bf16", "absorbed")
    assert [(group.window, group.layers) for group in layout.windows] == [(8192, 4), (8192, 4), (None, 4)]
    ops = sequence_ops(layout, StepShape(sequences=1, new_tokens=1, context=131_072, logits_tokens=1), absorbed=True)
    assert sum(op.count for op in ops if op.kind == "attention") == 12
