"""mha_cli.verify: measured cache bytes equal the calculator, the memory precheck, timers, numerics."""

from __future__ import annotations

import re

import pytest
import torch

from mha_cli.core.errors import BadInputError, OutOfMemoryError
from mha_cli.core.presets import get_preset
from mha_cli.core.schemas import DeploymentSpec, MLASpec, ModelSpec
from mha_cli.core.sources import ModelSource
from mha_cli.nn.attention import Attention
from mha_cli.verify import measure
from mha_cli.verify.numerics import check_cached_decode
from mha_cli.verify.plan import make_plan, validate_options
from mha_cli.verify.run import run_verify

SEQ, BATCH, LAYERS = 48, 2, 3


def tiny(n_kv_heads: int | None = None, mla: MLASpec | None = None, **extra) -> ModelSpec:
    """d_model 64, 8 heads of 8 (MLA: latent 32 + rope 8, nope 8, v 8), 3 layers."""
    return ModelSpec(
        name="tiny", d_model=64, n_layers=LAYERS, n_heads=8, n_kv_heads=n_kv_heads, mla=mla, vocab_size=100,
        d_ff=128, **extra,
    )  # fmt: skip


TINY_MLA = MLASpec(kv_lora_rank=32, qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=8)
# Independent price per token per layer (bytes per value = 1 here): MHA 2*8*8, GQA-2 2*2*8, MQA 2*8,
# MLA absorbed 32 + 8, MLA naive 8 heads x (nope 8 + rope 8 + v 8).
CASES = {
    "MHA": (tiny(8), "absorbed", 2 * 8 * 8),
    "GQA": (tiny(2), "absorbed", 2 * 2 * 8),
    "MQA": (tiny(1), "absorbed", 2 * 8),
    "MLA-absorbed": (tiny(mla=TINY_MLA), "absorbed", 32 + 8),
    "MLA-naive": (tiny(mla=TINY_MLA), "naive", 8 * (8 + 8 + 8)),
}


def verify(model: ModelSpec, **deployment) -> object:
    source = ModelSource(kind="preset", origin=model.name, model=model)
    spec = DeploymentSpec(seq_len=SEQ, batch=BATCH, **deployment)
    return run_verify(source, spec, device="cpu", layers=LAYERS, reps=2)


@pytest.mark.parametrize("dtype,value_bytes", [("fp32", 4), ("bf16", 2)])
@pytest.mark.parametrize("case", list(CASES))
def test_measured_cache_bytes_equal_the_prediction(case, dtype, value_bytes):
    model, mla_cache, values_per_token = CASES[case]
    report = verify(model, kv_dtype=dtype, mla_cache=mla_cache)
    expected = LAYERS * BATCH * SEQ * values_per_token * value_bytes
    assert report.predicted_cache_bytes == expected
    assert report.measured_cache_bytes == expected
    assert report.checks == {"cache_bytes_match": True, "numerics": True}
    assert report.predicted_bytes_per_token_per_layer == values_per_token * value_bytes
    assert report.dtype == dtype and not report.extrapolated


def test_windows_paging_and_tensor_parallel_shards_match_the_calculator():
    model = tiny(4, sliding_window=16, layer_pattern=["local", "global"])
    report = verify(model, kv_dtype="fp32", block_size=10, tp=2)
    per_token_layer_rank = 2 * 2 * 8 * 4  # 4 KV heads over 2 ranks, fp32
    held = {"local": 20, "global": 50}  # window 16 and seq 48 rounded up to blocks of 10
    expected = BATCH * per_token_layer_rank * (2 * held["local"] + held["global"])  # local, global, local
    assert report.measured_cache_bytes == report.predicted_cache_bytes == expected
    assert report.tp == 2 and report.checks["cache_bytes_match"]


def test_fewer_layers_are_extrapolated_per_layer_kind():
    model = tiny(2, sliding_window=16, layer_pattern=["local", "global"]).model_copy(update={"n_layers": 7})
    source = ModelSource(kind="preset", origin="tiny", model=model)
    report = run_verify(source, DeploymentSpec(seq_len=SEQ, batch=1, kv_dtype="fp32"), device="cpu", layers=2, reps=1)
    per_token_layer = 2 * 2 * 8 * 4
    assert report.measured_cache_bytes == per_token_layer * (16 + 48)
    assert report.extrapolated and report.model_cache_bytes == per_token_layer * (4 * 16 + 3 * 48)
    assert report.model_cache_bytes == report.model_predicted_cache_bytes
    assert report.model_decode_ms == pytest.approx(report.decode_ms * 7 / 2)
    assert any("EXTRAPOLATED" in note for note in report.notes)


def test_cpu_default_builds_two_layers_and_caps_the_prefill():
    model = tiny(2).model_copy(update={"n_layers": 32})
    plan = make_plan(model, DeploymentSpec(seq_len=8192), device_type="cpu")
    assert plan.n_layers_built == 2 and "CPU default" in plan.layers_note
    assert plan.prefill_tokens == 128 and "capped on CPU" in plan.prefill_note
    gpu = make_plan(model, DeploymentSpec(seq_len=8192), device_type="cuda")
    assert gpu.n_layers_built == 32 and gpu.prefill_tokens == 8192


def test_precheck_refuses_when_asked_for_more_than_the_device_has():
    model = tiny(8)
    deployment = DeploymentSpec(seq_len=4096, batch=8, kv_dtype="fp32")
    one_layer_cache = 8 * 4096 * 2 * 8 * 8 * 4  # 8 MiB
    options = {"device_type": "cuda", "prefill_tokens": 16}
    with pytest.raises(OutOfMemoryError, match="--layers 1"):
        make_plan(model, deployment, layers=3, free_bytes=2 * one_layer_cache, **options)
    with pytest.raises(OutOfMemoryError, match=r"--batch (\d+)") as refused:
        make_plan(model, deployment, free_bytes=one_layer_cache // 2, **options)
    suggested = int(re.search(r"--batch (\d+)", str(refused.value)).group(1))
    smaller = deployment.model_copy(update={"batch": suggested})
    assert make_plan(model, smaller, free_bytes=one_layer_cache // 2, **options).n_layers_built == LAYERS
    # With the layer count left to its default, build what fits and say so.
    plan = make_plan(model, deployment, free_bytes=2 * one_layer_cache, **options)
    assert plan.n_layers_built == 1 and "fit in free memory" in plan.layers_note
    assert plan.required_bytes <= 0.9 * 2 * one_layer_cache


def test_quantised_kv_dtypes_and_bad_options_are_refused():
    with pytest.raises(BadInputError, match="--kv-dtype bf16"):
        make_plan(tiny(2), DeploymentSpec(kv_dtype="fp8"), device_type="cpu")
    with pytest.raises(BadInputError, match="--layers"):
        make_plan(tiny(2), DeploymentSpec(), device_type="cpu", layers=4)
    with pytest.raises(BadInputError, match="divisible by tp"):
        make_plan(tiny(2), DeploymentSpec(tp=3), device_type="cpu")


class DecodeForgetsTheCache(Attention):
    """A broken layer: every cached call attends only to the new tokens (start_pos ignored)."""

    def forward(self, x, cache=None, start_pos=0):
        if cache is not None:
            return super().forward(x, cache.__class__(x.shape[0], x.shape[1], self.n_kv_heads, self.head_dim), 0)
        return super().forward(x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_numerics_pass_on_a_correct_layer_and_fail_on_a_broken_one(dtype):
    torch.manual_seed(0)
    good = Attention(64, 8, 2, 8, dtype=dtype)
    result = check_cached_decode(good, d_model=64, dtype=dtype, device=torch.device("cpu"))
    assert result.passed and result.relative_error <= result.tolerance
    broken = DecodeForgetsTheCache(64, 8, 2, 8, dtype=dtype)
    broken.load_state_dict(good.state_dict())
    bad = check_cached_decode(broken, d_model=64, dtype=dtype, device=torch.device("cpu"))
    assert not bad.passed and bad.relative_error > 10 * bad.tolerance


class FakeEvent:
    """Stands in for torch.cuda.Event: its clock advances 2.5 ms per recorded call."""

    clock_ms = 0.0

    def __init__(self, enable_timing: bool = False) -> None:
        assert enable_timing
        self.at = None

    def record(self) -> None:
        FakeEvent.clock_ms += 2.5
        self.at = FakeEvent.clock_ms

    def elapsed_time(self, end: FakeEvent) -> float:
        return end.at - self.at


def test_cuda_event_timer_without_a_gpu():
    calls, syncs = [], []
    times = measure.time_with_events(
        lambda: calls.append(1), warmup=2, reps=4, event=FakeEvent, synchronize_all=lambda: syncs.append(1)
    )
    assert len(calls) == 6 and len(syncs) == 2
    assert times == [0.0025] * 4


def test_timing_summary_and_allocator_reading():
    stats = measure.summarise([0.004, 0.001, 0.003, 0.002, 0.010], warmup=1, timer="perf_counter")
    assert (stats.median_ms, stats.min_ms, stats.max_ms) == pytest.approx((3.0, 1.0, 10.0))
    assert stats.spread_ms == pytest.approx(2.0)  # p75 4 - p25 2
    assert measure.allocated_bytes(torch.device("cuda"), memory_allocated=lambda device: 12_345) == 12_345
    assert measure.allocated_bytes(torch.device("cpu")) is None


@pytest.mark.parametrize(
    "name,target_id",
    [("NVIDIA H200", "h200"), ("NVIDIA H100 80GB HBM3", "h100-sxm"), ("NVIDIA A100-SXM4-40GB", "a100-40gb"),
     ("NVIDIA GeForce RTX 4090", "rtx-4090"), ("Some Unknown Card", None)],
)  # fmt: skip
def test_device_names_map_to_the_targets_database(name, target_id):
    target = measure.match_target(name)
    assert (target.id if target else None) == target_id


@pytest.mark.parametrize(
    "options,message",
    [({"reps": 0}, "--reps must be at least 1 (got 0)"),
     ({"layers": 0}, "--layers must be at least 1 (got 0)"),
     ({"prefill_tokens": -3}, "--prefill-tokens must be at least 1 (got -3)"),
     ({"max_kv_gib": -1.0}, "--max-kv-gib must be greater than 0 (got -1)"),
     ({"max_kv_gib": 0.0}, "--max-kv-gib must be greater than 0 (got 0)"),
     ({"max_decode_ms": 0.0}, "--max-decode-ms must be greater than 0 (got 0)"),
     ({"max_decode_ms": float("nan")}, "--max-decode-ms must be greater than 0 (got nan)"),
     ({"tolerance": -1e-9}, "--tolerance must be 0 (exact) or greater (got -1e-09)")],
)  # fmt: skip
def test_one_rule_for_verify_options(options, message):
    with pytest.raises(BadInputError) as raised:
        validate_options(**options)
    assert str(raised.value) == message


def test_zero_tolerance_means_exact_and_is_accepted():
    validate_options(tolerance=0.0, max_kv_gib=1e-9, max_decode_ms=1e-9, layers=None, prefill_tokens=None)


def test_plan_notes_an_ignored_mla_cache_and_a_capped_prefill():
    given = DeploymentSpec.model_validate({"seq_len": SEQ, "mla_cache": "naive"})
    plan = make_plan(tiny(2), given, device_type="cpu", prefill_tokens=5000)
    assert plan.prefill_tokens == SEQ
    assert plan.notes == [
        "--mla-cache naive ignored: tiny is GQA, not MLA; its cache is per-head K/V either way",
        f"--prefill-tokens 5,000 capped at {SEQ}, the --seq ({SEQ})",
    ]
    assert make_plan(tiny(2), DeploymentSpec(seq_len=SEQ), device_type="cpu").notes == []  # nothing given, no note
    assert make_plan(tiny(mla=TINY_MLA), given, device_type="cpu", prefill_tokens=8).notes == []  # applies to MLA


def test_cpu_peak_is_the_best_of_many_copies(monkeypatch):
    """A noisy clock: every copy but one is slow; the peak must come from the fastest, not the first."""
    durations = [0.004] * (measure.COPY_REPS - 1) + [0.001]
    ticks = iter(t for d in durations for t in (0.0, d))
    monkeypatch.setattr(measure.time, "perf_counter", lambda: next(ticks))
    n_bytes = 4 * 2**20
    assert measure.copy_bandwidth(torch.device("cpu"), n_bytes=n_bytes) == 2 * n_bytes / 0.001
    assert measure.COPY_REPS >= 10


def test_a_shard_with_replicated_kv_heads_is_an_mqa_shape():
    # Llama-3-70B over 16 ranks: 64 / 16 = 4 query heads and one (replicated) KV head per rank.
    from mha_cli.verify.plan import shard_model

    shard = shard_model(get_preset("llama-3-70b"), 16, "absorbed")
    assert (shard.n_heads, shard.n_kv_heads, shard.head_dim, shard.variant) == (4, 1, 128, "MQA")
    plan = make_plan(get_preset("llama-3-70b"), DeploymentSpec(seq_len=1024, tp=16), device_type="cpu", layers=1)
    assert plan.predicted_cache_bytes == 1024 * 2 * 1 * 128 * 2  # one layer, one KV head, K and V, bf16
