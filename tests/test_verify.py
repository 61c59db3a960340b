"""mha_cli.verify: the whole built stack's weights and cache against hand counts, scopes, the precheck,
broken variants the checks must catch, the CUDA allocator check with a stand-in, timers, numerics."""

from __future__ import annotations

import re

import pytest
import torch
from torch import nn

from mha_cli.core.errors import BadInputError, OutOfMemoryError
from mha_cli.core.presets import get_preset
from mha_cli.core.schemas import DeploymentSpec, MLASpec, ModelSpec, MoESpec
from mha_cli.core.sources import ModelSource
from mha_cli.nn.kv_cache import KVCache
from mha_cli.verify import build, measure
from mha_cli.verify.numerics import check_cached_decode
from mha_cli.verify.plan import make_plan, validate_options
from mha_cli.verify.rank import measure_rank
from mha_cli.verify.run import build_report, run_verify

SEQ, BATCH, LAYERS = 48, 2, 3
CPU = torch.device("cpu")


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny tensors: one intra-op thread avoids the pool's synchronisation (costly on a shared 2-core machine)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def tiny(n_kv_heads: int, **extra) -> ModelSpec:
    """d_model 64, 8 heads of 8, d_ff 128, vocab 100, 3 layers, untied, RMSNorm, SwiGLU."""
    return ModelSpec(
        name="tiny", d_model=64, n_layers=LAYERS, n_heads=8, n_kv_heads=n_kv_heads, vocab_size=100, d_ff=128, **extra
    )


def tiny_mla() -> ModelSpec:
    """The same widths with MLA: latent 32 + RoPE key 8, nope 8, v 8, no q latent."""
    mla = MLASpec(kv_lora_rank=32, qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=8)
    return ModelSpec(name="tiny", d_model=64, n_layers=LAYERS, n_heads=8, mla=mla, vocab_size=100, d_ff=128)


# Hand counts, in values. Outside the layers: embedding 100 x 64, final norm 64, LM head 100 x 64.
NON_LAYER = 100 * 64 + 64 + 100 * 64
# One layer: q 64x64 and o 64x64, k and v 64 x (n_kv x 8) each, two norms of 64, SwiGLU 3 x 64 x 128.
LAYER = {n_kv: 2 * 64 * 64 + 2 * 64 * n_kv * 8 + 2 * 64 + 3 * 64 * 128 for n_kv in (8, 2, 1)}
# Cache per token per layer: K and V, n_kv heads of 8.
CACHE_PER_TOKEN_LAYER = {n_kv: 2 * n_kv * 8 for n_kv in (8, 2, 1)}
CASES = {"MHA": 8, "GQA": 2, "MQA": 1}


def source(model: ModelSpec) -> ModelSource:
    return ModelSource(kind="preset", origin=model.name, model=model)


def verify(model: ModelSpec, layers: int | None = LAYERS, **deployment) -> object:
    spec = DeploymentSpec(seq_len=SEQ, batch=BATCH, **deployment)
    return run_verify(source(model), spec, device="cpu", layers=layers, reps=2)


@pytest.mark.parametrize("case,dtype,value_bytes", [("MHA", "fp32", 4), ("GQA", "bf16", 2), ("MQA", "fp32", 4)])
def test_weights_and_cache_measured_equal_hand_counts(case, dtype, value_bytes):
    n_kv = CASES[case]
    report = verify(tiny(n_kv), kv_dtype=dtype)
    weights = (NON_LAYER + LAYERS * LAYER[n_kv]) * value_bytes
    cache = LAYERS * BATCH * SEQ * CACHE_PER_TOKEN_LAYER[n_kv] * value_bytes
    assert report.measured_weight_bytes == report.predicted_weight_bytes == weights
    assert report.weight_bytes_per_layer == report.predicted_weight_bytes_per_layer == LAYER[n_kv] * value_bytes
    assert report.measured_cache_bytes == report.predicted_cache_bytes == cache
    assert report.checks == {"weight_bytes_match": True, "cache_bytes_match": True, "numerics": True}
    assert report.predicted_bytes_per_token_per_layer == CACHE_PER_TOKEN_LAYER[n_kv] * value_bytes
    assert report.dtype == dtype and not report.extrapolated and report.allocator is None
    # Every layer on the one rank: per_rank and whole_model are the built stack, measured.
    for scope in (report.per_rank, report.whole_model):
        assert (scope.cache_bytes, scope.weight_bytes, scope.extrapolated) == (cache, weights, False)
        assert scope.decode_ms == pytest.approx(report.decode_ms)


# MLA by hand: q 64 x (8 heads x (nope 8 + rope 8)); KV down 64 x (latent 32 + rope 8) and the latent's norm 32;
# KV up 32 x 8 x (nope 8 + v 8); o (8 x v 8) x 64; two norms, SwiGLU. Cache: latent + rope key (absorbed), or
# every head's key (nope + rope) and value (naive).
MLA_LAYER = 64 * 8 * 16 + 64 * 40 + 32 + 32 * 8 * 16 + 8 * 8 * 64 + 2 * 64 + 3 * 64 * 128
MLA_CACHE_PER_TOKEN_LAYER = {"absorbed": 32 + 8, "naive": 8 * (8 + 8 + 8)}


@pytest.mark.parametrize("mla_cache,dtype,value_bytes", [("absorbed", "fp32", 4), ("naive", "bf16", 2)])
def test_mla_weights_and_latent_or_naive_cache_equal_hand_counts(mla_cache, dtype, value_bytes):
    report = verify(tiny_mla(), kv_dtype=dtype, mla_cache=mla_cache)
    assert (
        report.measured_weight_bytes == report.predicted_weight_bytes == (NON_LAYER + LAYERS * MLA_LAYER) * value_bytes
    )
    cache = LAYERS * BATCH * SEQ * MLA_CACHE_PER_TOKEN_LAYER[mla_cache] * value_bytes
    assert report.measured_cache_bytes == report.predicted_cache_bytes == cache
    assert all(report.checks.values()) and report.mla_cache == mla_cache


def test_mla_moe_stack_by_hand_and_moe_layers_not_built_take_the_calculator():
    """DeepSeek-V3-like: a q latent of 16, sigmoid routing to 2 of 4 experts of 32 plus 1 shared; layer 0 dense."""
    moe = MoESpec(
        n_experts=4, n_active_experts=2, n_shared_experts=1, d_ff_expert=32, n_dense_layers=1,
        scoring_func="sigmoid", topk_method="noaux_tc", n_group=2, topk_group=1,
    )  # fmt: skip
    mla = MLASpec(kv_lora_rank=32, qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=8, q_lora_rank=16)
    model = ModelSpec(name="tiny-moe", d_model=64, n_layers=3, n_heads=8, mla=mla, vocab_size=100, d_ff=128, moe=moe)
    # q: 64 x 16, its norm 16, 16 x 8 x (8 + 8); KV down 64 x 40 and norm 32; KV up 32 x 8 x 16; o 64 x 64.
    attention = 64 * 16 + 16 + 16 * 128 + 64 * 40 + 32 + 32 * 8 * 16 + 64 * 64
    dense = attention + 2 * 64 + 3 * 64 * 128
    moe_layer = attention + 2 * 64 + (4 + 1) * 3 * 64 * 32 + 64 * 4  # routed and shared experts, router
    report = verify(model, kv_dtype="fp32")
    assert report.measured_weight_bytes == report.predicted_weight_bytes == (NON_LAYER + dense + 2 * moe_layer) * 4
    assert report.weight_bytes_per_layer == dense * 4
    assert report.measured_cache_bytes == LAYERS * BATCH * SEQ * (32 + 8) * 4 and all(report.checks.values())
    one = run_verify(source(model), DeploymentSpec(seq_len=SEQ, batch=BATCH, kv_dtype="fp32"), device="cpu", layers=1)
    assert one.per_rank.weight_bytes == (NON_LAYER + dense + 2 * moe_layer) * 4  # MoE layers: core's count
    assert one.per_rank.cache_bytes == report.measured_cache_bytes


def test_moe_numerics_in_bf16_replay_the_full_forwards_experts():
    """64 experts, top 8, random routers: near-ties are common and bf16 rounding routes some tokens differently
    on the two paths; the check replays the full forward's experts and says how many choices would differ."""
    moe = MoESpec(n_experts=64, n_active_experts=8, d_ff_expert=32)
    model = ModelSpec(name="tiny-moe", d_model=64, n_layers=LAYERS, n_heads=4, n_kv_heads=2, vocab_size=512, d_ff=128,
                      moe=moe)  # fmt: skip
    report = verify(model, kv_dtype="bf16")
    assert report.checks["numerics"] and isinstance(report.numerics.routing_differing, int)
    assert verify(tiny(2), kv_dtype="bf16").numerics.routing_differing is None  # dense: nothing to replay


def test_windows_and_tensor_parallel_ranks_are_scoped():
    """tp=2: one rank holds 4 of 8 query heads, 2 of 4 KV heads, d_ff 64; embedding and head split by vocab."""
    model = tiny(4, sliding_window=16, layer_pattern=["local", "global"])
    report = verify(model, kv_dtype="fp32", tp=2, block_size=10)
    per_token_layer = 2 * 2 * 8 * 4  # K and V, 2 KV heads of 8, fp32
    held = {"local": 16, "global": 48}  # window 16, seq 48 (torch caches are contiguous: no paging)
    cache = BATCH * per_token_layer * (held["local"] + held["global"] + held["local"])  # local, global, local
    rank_layer = 64 * 32 + 2 * 64 * 16 + 32 * 64 + 2 * 64 + 3 * 64 * 64  # q, k+v, o, norms, MLP d_ff / 2
    rank_non_layer = 64 * 64 + 64 + 64 * 64  # vocab 100 padded to 128: 64 rows of embedding and head each
    rank_weights = (rank_non_layer + LAYERS * rank_layer) * 4
    assert report.measured_cache_bytes == report.predicted_cache_bytes == cache
    assert report.measured_weight_bytes == report.predicted_weight_bytes == rank_weights
    assert report.tp == 2 and report.ranks_measured == [0] and all(report.checks.values())
    per_rank, whole = report.per_rank, report.whole_model
    assert (per_rank.n_ranks, per_rank.cache_bytes, per_rank.weight_bytes) == (1, cache, rank_weights)
    assert (whole.n_ranks, whole.cache_bytes, whole.weight_bytes) == (2, 2 * cache, 2 * rank_weights)
    assert whole.predicted_cache_bytes == 2 * cache and whole.predicted_weight_bytes == 2 * rank_weights
    assert not per_rank.extrapolated and whole.extrapolated and "EXTRAPOLATED: 2 x the measured rank" in whole.how
    # The deployment pages in blocks of 10: core's paged figure is reported beside the contiguous one.
    assert per_rank.paged_cache_bytes == BATCH * per_token_layer * (20 + 50 + 20)
    assert any("padding" in note for note in report.notes)


def test_a_run_short_of_its_window_reports_it_with_its_numerics():
    """The report carries ``window_unchecked`` (review 329 #6: the helper alone was tested): a 44-token window at
    --seq 48 is never passed by the comparison (44 + 8 > 48); at a 16-token window it is, and nothing is said."""
    short = verify(tiny(2, sliding_window=44, layer_pattern=["local", "global"]), kv_dtype="fp32")
    assert short.numerics.window_unchecked == (
        "the sliding window (44) is not compared: the run's 48 tokens do not pass it (--seq 52 would)"
    )
    passed = verify(tiny(2, sliding_window=16, layer_pattern=["local", "global"]), kv_dtype="fp32")
    assert passed.numerics.window_unchecked is None and passed.numerics.tokens == 24


def test_layers_not_built_are_extrapolated_by_kind_and_decode_by_bytes_read():
    model = tiny(2, sliding_window=16, layer_pattern=["local", "global"]).model_copy(update={"n_layers": 7})
    spec = DeploymentSpec(seq_len=SEQ, batch=1, kv_dtype="fp32")
    report = run_verify(source(model), spec, device="cpu", layers=2, reps=1)
    per_token_layer = 2 * 2 * 8 * 4
    assert report.measured_cache_bytes == per_token_layer * (16 + 48)
    per_rank = report.per_rank
    assert per_rank.extrapolated and per_rank.cache_bytes == per_token_layer * (4 * 16 + 3 * 48)
    assert per_rank.cache_bytes == per_rank.predicted_cache_bytes
    assert per_rank.weight_bytes == per_rank.predicted_weight_bytes == (NON_LAYER + 7 * LAYER[2]) * 4

    # A decode step reads every weight but the embedding (only its token's row: 64 values) and the cache.
    def step_bytes(n_layers: int, n_local: int) -> int:
        weights = (NON_LAYER - 100 * 64 + 64 + n_layers * LAYER[2]) * 4
        return weights + per_token_layer * (n_local * 16 + (n_layers - n_local) * 48)

    assert report.decode_bytes_read == step_bytes(2, 1)
    assert per_rank.decode_ms == pytest.approx(report.decode_ms * step_bytes(7, 4) / step_bytes(2, 1))
    assert report.roofline_decode_ms == pytest.approx(report.decode_bytes_read / (report.peak_gb_per_s * 1e9) * 1e3)
    assert report.decode_vs_roofline == pytest.approx(report.decode_ms / report.roofline_decode_ms)
    assert any(note.startswith("EXTRAPOLATED: 2 of 7 layers built") for note in report.notes)


def test_the_cache_is_filled_by_the_model_and_says_how():
    plan = make_plan(tiny(2), DeploymentSpec(seq_len=SEQ, batch=1), device_type="cpu", prefill_tokens=16)
    fill = measure_rank(plan, CPU, reps=1).cache_fill
    assert (fill.prefilled_tokens, fill.decode_position, fill.unwritten_tokens) == (16, SEQ - 1, SEQ - 1 - 16)
    assert "positions 0..15 by the model's prefill" in fill.how and "16..46 left as allocated" in fill.how
    full = make_plan(tiny(2), DeploymentSpec(seq_len=SEQ, batch=1), device_type="cuda")  # GPU default: all of seq
    assert full.prefill_tokens == SEQ
    assert "attends to all 48" in fill.how and "sliding-window" not in fill.how
    windowed = tiny(2, sliding_window=16, layer_pattern=["local", "global"])  # a local layer reads its last 16 only
    plan = make_plan(windowed, DeploymentSpec(seq_len=SEQ, batch=1), device_type="cpu", prefill_tokens=16)
    assert "attends to all 48 (a sliding-window layer to its last 16)" in measure_rank(plan, CPU, reps=1).cache_fill.how
    every = make_plan(tiny(2, sliding_window=16), DeploymentSpec(seq_len=SEQ, batch=1), device_type="cpu",
                      prefill_tokens=16)  # fmt: skip
    how = measure_rank(every, CPU, reps=1).cache_fill.how  # Mistral-7B-v0.1's shape: no layer reads all 48
    assert "which attends to its last 16 on every layer" in how and "all 48" not in how


class PaddedHeadsCache(KVCache):
    """A broken cache: allocated with one KV head too many; reads and writes use the real ones."""

    def __init__(self, batch, max_seq, n_kv_heads, head_dim, **factory):
        super().__init__(batch, max_seq, n_kv_heads + 1, head_dim, **factory)
        self.used = n_kv_heads

    def update(self, start_pos, k, v):
        b, _, s, _ = k.shape
        self.k[:b, : self.used, start_pos : start_pos + s] = k
        self.v[:b, : self.used, start_pos : start_pos + s] = v
        return self.k[:b, : self.used, : start_pos + s], self.v[:b, : self.used, : start_pos + s]


def test_a_cache_with_the_wrong_head_count_fails_the_check(monkeypatch):
    monkeypatch.setattr("mha_cli.nn.attention.KVCache", PaddedHeadsCache)
    report = verify(tiny(2), kv_dtype="fp32")
    extra = LAYERS * BATCH * SEQ * 2 * 8 * 4  # one more K and V head of 8 per layer, fp32
    assert report.measured_cache_bytes - report.predicted_cache_bytes == extra
    assert report.checks["cache_bytes_match"] is False and not report.passed
    assert report.checks["numerics"] is True  # the layers still compute correctly: only the bytes are wrong
    assert report.check_details["cache_bytes_match"].startswith(f"measured {report.measured_cache_bytes:,} B !=")


def test_an_unpriced_parameter_fails_the_weight_check(monkeypatch):
    real_build = build.build_model

    def build_with_an_extra_bias(spec, **kwargs):
        model = real_build(spec, **kwargs)
        model.model.layers[0].mlp.extra = nn.Parameter(torch.zeros(64, dtype=kwargs["dtype"]))
        return model

    monkeypatch.setattr(build, "build_model", build_with_an_extra_bias)
    report = verify(tiny(2), kv_dtype="fp32")
    assert report.measured_weight_bytes - report.predicted_weight_bytes == 64 * 4
    assert report.checks["weight_bytes_match"] is False and report.checks["cache_bytes_match"] is True


class ScriptedAllocator:
    """Stands in for torch.cuda's allocator counters: readings in the order measure_rank asks for them."""

    def __init__(self, readings: list[int], peak: int) -> None:
        self.readings, self.peak_value, self.resets = list(readings), peak, 0

    def allocated(self) -> int:
        return self.readings.pop(0)

    def reset_peak(self) -> None:
        self.resets += 1

    def peak(self) -> int:
        return self.peak_value


@pytest.mark.parametrize("weights_off,cache_off,ok", [(512, 0, (True, True)), (-1, 0, (False, True)),
                                                        (0, 64 * 2**20, (True, False))])  # fmt: skip
def test_allocator_changes_are_checked_against_the_prediction(weights_off, cache_off, ok):
    deployment = DeploymentSpec(seq_len=SEQ, batch=BATCH, kv_dtype="fp32")
    plan = make_plan(tiny(2), deployment, device_type="cpu", layers=LAYERS)
    weights = plan.predicted_weight_bytes  # the decoder has no buffers: RoPE tables are not module state
    base, after_weights = 10_000, 10_000 + weights + weights_off
    after_cache = after_weights + plan.predicted_cache_bytes + cache_off
    probe = ScriptedAllocator([base, after_weights, after_cache, after_cache], peak=after_cache + 123_456)
    rank = measure_rank(plan, CPU, reps=1, probe=probe)
    allocator = rank.allocator
    assert (allocator.weights_ok, allocator.cache_ok) == ok and probe.resets == 1
    assert allocator.weights_change_bytes == weights + weights_off and allocator.prefill_peak_bytes == 123_456
    assert allocator.cache_tensors == 2 * LAYERS  # K and V per layer
    assert allocator.cache_tolerance_bytes == 2 * LAYERS * (2**20 + 512)
    report = build_report(source(plan.model), plan, [rank], CPU)
    assert (report.checks["allocator_weights"], report.checks["allocator_cache"]) == ok
    assert report.passed == all(ok)


def test_allocator_tolerance_rule():
    assert measure.within_allocator_tolerance(1000, 1000, 1)
    assert measure.within_allocator_tolerance(1000 + 2**20 + 512, 1000, 1)
    assert not measure.within_allocator_tolerance(1000 + 2**20 + 513, 1000, 1)
    assert not measure.within_allocator_tolerance(999, 1000, 5)  # the allocator never hands out less


def test_tiled_init_keeps_the_distribution_and_repeats_a_prime_tile():
    big = torch.empty(3 * build.TILE + 7)
    small = torch.empty(1000)
    with build.tiled_random_init():
        nn.init.normal_(big, std=0.02)
        small.uniform_(-0.5, 0.5)
        big_uniform = torch.empty(2 * build.TILE + 3).uniform_(-0.25, 0.25)
    assert torch.equal(big[build.TILE : 2 * build.TILE], big[: build.TILE])
    assert torch.equal(big[3 * build.TILE :], big[:7])
    assert big.std().item() == pytest.approx(0.02, rel=0.01) and abs(big.mean().item()) < 1e-3
    assert big_uniform.abs().max() <= 0.25 and big_uniform.std().item() == pytest.approx(0.5 / 12**0.5, rel=0.01)
    assert small.abs().max() <= 0.5 and len(set(small.tolist())) == 1000  # small tensors: a plain draw


def test_cpu_default_builds_two_layers_and_caps_the_prefill():
    model = tiny(2).model_copy(update={"n_layers": 32})
    plan = make_plan(model, DeploymentSpec(seq_len=8192), device_type="cpu")
    assert plan.n_layers_built == 2 and "CPU default" in plan.layers_note
    assert plan.prefill_tokens == 128 and "capped on CPU" in plan.prefill_note
    gpu = make_plan(model, DeploymentSpec(seq_len=8192), device_type="cuda")
    assert gpu.n_layers_built == 32 and gpu.prefill_tokens == 8192


def test_precheck_counts_weights_cache_and_workspace_and_suggests_what_fits():
    model = tiny(8)
    deployment = DeploymentSpec(seq_len=4096, batch=8, kv_dtype="fp32")
    options = {"device_type": "cuda", "prefill_tokens": 16}
    plan = make_plan(model, deployment, **options)
    one_layer_cache = 8 * 4096 * 2 * 8 * 8 * 4  # 8 MiB
    assert plan.predicted_cache_bytes == LAYERS * one_layer_cache
    assert plan.required_bytes == plan.predicted_weight_bytes + plan.predicted_cache_bytes + plan.workspace_bytes
    assert plan.workspace_bytes >= 8 * 16 * 100 * (4 + 4)  # at least the prefill's logits, fp32 and a copy
    free = 2 * one_layer_cache
    with pytest.raises(OutOfMemoryError, match=r"weights .* \+ cache \+ workspace") as refused:
        make_plan(model, deployment, layers=3, free_bytes=free, **options)
    message = str(refused.value)
    for option, field in (("--layers", None), ("--batch", "batch"), ("--seq", "seq_len")):
        value = int(re.search(rf"{option} (\d+)", message).group(1))
        layers, smaller = (value, deployment) if field is None else (3, deployment.model_copy(update={field: value}))
        assert make_plan(model, smaller, layers=layers, free_bytes=free, **options).n_layers_built == layers
    # With the layer count left to its default, build what fits and say so.
    fitted = make_plan(model, deployment, free_bytes=free, **options)
    assert fitted.n_layers_built < LAYERS and "fit in free memory" in fitted.layers_note
    assert fitted.required_bytes <= 0.9 * free


def test_the_report_shows_what_the_precheck_compared():
    report = run_verify(
        source(tiny(2)), DeploymentSpec(seq_len=SEQ, batch=BATCH, kv_dtype="fp32"), device="cpu", layers=LAYERS,
        reps=1, free_bytes=lambda device_type, index: 10**9,
    )  # fmt: skip
    precheck = report.precheck
    assert (precheck.weight_bytes, precheck.cache_bytes) == (
        report.predicted_weight_bytes,
        report.predicted_cache_bytes,
    )
    assert precheck.required_bytes == precheck.weight_bytes + precheck.cache_bytes + precheck.workspace_bytes
    assert (precheck.free_bytes, precheck.usable_bytes) == (10**9, 9 * 10**8)


def test_precheck_when_the_embedding_and_head_alone_do_not_fit():
    """Fewer layers, a smaller batch or a shorter context cannot shrink the embedding and head."""
    deployment = DeploymentSpec(seq_len=64, batch=2, kv_dtype="fp32")
    with pytest.raises(OutOfMemoryError, match="try --layers 1 on a device with more memory"):
        make_plan(tiny(2), deployment, device_type="cpu", layers=1, free_bytes=NON_LAYER * 4)


def test_precheck_offers_one_layer_with_a_shorter_context_when_no_one_change_fits():
    """Two layers' weights exceed the device and one layer's cache at the asked context does too: neither
    --layers 1 nor --seq alone fits, so the pair is offered (it said "--layers 1 on a device with more memory";
    newuser trial 241). The offered context is the longest that fits, checked with the same sizer."""
    from mha_cli.verify.plan import _no_fit_message, _Sizer

    model = ModelSpec(name="tiny", d_model=64, n_layers=2, n_heads=8, n_kv_heads=8, vocab_size=100, d_ff=8_192)
    deployment = DeploymentSpec(seq_len=65_536, batch=1, kv_dtype="fp32")
    sizer = _Sizer(model, model, deployment, 1, "cpu", 1, 4)  # one-token prefill: the cache grows, the MLP not
    usable = sizer.required(1, 1, 8_192)
    assert sizer.required(1, 1, 65_536) > usable and sizer.required(2, 1, 1) > usable  # no one change fits
    message = _no_fit_message(sizer, usable, 2, 0, 1, 65_536, "cpu")
    offered = int(message.split("--layers 1 --seq ")[1].split()[0])
    assert sizer.required(1, 1, offered) <= usable < sizer.required(1, 1, offered + 1)
    assert "more memory" not in message


def test_quantised_kv_dtypes_and_bad_options_are_refused():
    with pytest.raises(BadInputError, match="--kv-dtype bf16"):
        make_plan(tiny(2), DeploymentSpec(kv_dtype="fp8"), device_type="cpu")
    with pytest.raises(BadInputError, match="--layers"):
        make_plan(tiny(2), DeploymentSpec(), device_type="cpu", layers=4)
    with pytest.raises(BadInputError, match="divisible by tp"):
        make_plan(tiny(2), DeploymentSpec(tp=3), device_type="cpu")


class ForgetfulModel(nn.Module):
    """A broken stack: every cached call sees only its own tokens (a fresh cache each time)."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def new_cache(self, batch, max_seq, dtype=None):
        return self.inner.new_cache(batch, max_seq, dtype=dtype)

    def forward(self, ids, caches=None, start_pos=0):
        if caches is None:
            return self.inner(ids)
        return self.inner(ids, self.inner.new_cache(ids.shape[0], ids.shape[1]), 0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_numerics_pass_on_the_built_stack_and_fail_on_a_broken_one(dtype):
    from mha_cli.nn import build_model

    torch.manual_seed(0)
    good = build_model(tiny(2), dtype=dtype)
    result = check_cached_decode(good, vocab_size=100, dtype=dtype, device=CPU)
    assert result.passed and result.relative_error <= result.tolerance
    bad = check_cached_decode(ForgetfulModel(good), vocab_size=100, dtype=dtype, device=CPU)
    assert not bad.passed and bad.relative_error > 2 * bad.tolerance


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


def test_timing_summary_and_allocator_probe():
    stats = measure.summarise([0.004, 0.001, 0.003, 0.002, 0.010], warmup=1, timer="perf_counter")
    assert (stats.median_ms, stats.min_ms, stats.max_ms) == pytest.approx((3.0, 1.0, 10.0))
    assert stats.spread_ms == pytest.approx(2.0)  # p75 4 - p25 2
    resets = []
    probe = measure.AllocatorProbe(
        torch.device("cuda"), memory_allocated=lambda device: 12_345, max_memory_allocated=lambda device: 99_999,
        reset_peak_memory_stats=resets.append,
    )  # fmt: skip
    probe.reset_peak()
    assert (probe.allocated(), probe.peak(), resets) == (12_345, 99_999, [torch.device("cuda")])


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
    assert make_plan(tiny_mla(), given, device_type="cpu", prefill_tokens=8).notes == []  # applies to MLA


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
    assert (shard.attention.n_heads, shard.attention.n_kv_heads, shard.attention.head_dim, shard.attention.variant) == (
        4,
        1,
        128,
        "MQA",
    )
    assert shard.block.d_ff == 28672 // 16
    plan = make_plan(get_preset("llama-3-70b"), DeploymentSpec(seq_len=1024, tp=16), device_type="cpu", layers=1)
    assert plan.predicted_cache_bytes == 1024 * 2 * 1 * 128 * 2  # one layer, one KV head, K and V, bf16


def test_the_numerics_comparison_runs_past_a_window_within_reach():
    """The cached-decode comparison ran 16 tokens whatever the window, so a window of 16 or more (Gemma's, Qwen3's)
    and its ring's wrap-around were never compared (found by newuser trial 258): window + 8 where the run's seq passes
    it and it is at most 1,024; 16 otherwise."""
    from mha_cli.core.presets import get_preset
    from mha_cli.verify.rank import numerics_tokens

    llama = get_preset("llama-3-8b")
    windowed = llama.model_copy(update={"layers": llama.layers.model_copy(update={"pattern": ["local", "global"],
                                                                                   "sliding_window": 64})})  # fmt: skip
    assert numerics_tokens(windowed, 512) == 72 and numerics_tokens(windowed, 70) == 16
    assert numerics_tokens(llama, 512) == 16
    gemma = get_preset("gemma-3-27b")  # a 1,024 window, but 1,032 x 262,144 logits: past LOGITS_REACH
    assert numerics_tokens(gemma, 8192) == 16
    small_vocab = gemma.model_copy(update={"embeddings": gemma.embeddings.model_copy(update={"vocab_size": 32_000})})
    assert numerics_tokens(small_vocab, 1032) == 1032 and numerics_tokens(small_vocab, 1031) == 16
    wide = windowed.model_copy(update={"layers": windowed.layers.model_copy(update={"sliding_window": 4096})})
    assert numerics_tokens(wide, 8192) == 16  # past WINDOW_REACH


def test_a_comparison_short_of_the_window_says_so():
    """Trial 327 #2: recommend's 5:1 design with a 1,024 window over a 128,256-token vocabulary passed its numerics
    at 16 tokens, the window unexercised and unsaid. Each way the comparison stops short is named; where it runs past
    the window (or the model has none, or 16 tokens pass it) nothing is."""
    from mha_cli.core.presets import get_preset
    from mha_cli.verify.rank import window_unchecked

    llama = get_preset("llama-3-8b")

    def windowed(window: int, vocab: int = 128_256):
        layers = llama.layers.model_copy(update={"pattern": ["local", "global"], "sliding_window": window})
        return llama.model_copy(update={"layers": layers, "embeddings": llama.embeddings.model_copy(
            update={"vocab_size": vocab})})  # fmt: skip

    assert window_unchecked(windowed(1024), 1100) == (
        "the sliding window (1,024) is not compared: 1,032 tokens x 128,256 logits are more than the 33,554,432 it"
        " holds"
    )
    assert window_unchecked(windowed(1024), 500) == window_unchecked(windowed(1024), 1100)  # no --seq lifts it
    assert window_unchecked(windowed(4096, vocab=32_000), 1000).endswith(
        "wider than the 1,024 the comparison runs past"
    )
    assert window_unchecked(windowed(64), 70) == (
        "the sliding window (64) is not compared: the run's 70 tokens do not pass it (--seq 72 would)"
    )
    assert window_unchecked(windowed(4096), 8192).endswith("it is wider than the 1,024 the comparison runs past")
    assert window_unchecked(windowed(64), 512) is None and window_unchecked(windowed(8), 512) is None
    assert window_unchecked(windowed(1024, vocab=32_000), 1100) is None and window_unchecked(llama, 512) is None


def test_a_windowed_stack_sizes_its_workspace_by_the_window_and_says_what_it_did_not_build():
    """A 1,024-token window at 4M tokens: the precheck sized the K/V repeated per query head and the causal mask at
    the whole context (43.5 GiB for two local layers that cache 4 MiB) and refused the design recommend wrote; and
    the run passed with no global layer built, unsaid (trial 262 #1, #3). The keys a chunk attends in local layers
    are the window's ring plus the chunk: 1,024 + 128; with a global layer built, the context."""
    from mha_cli.verify.plan import attended_context, workspace_bytes
    from mha_cli.verify.run import unbuilt_kinds_note

    model = ModelSpec(name="tiny", d_model=64, n_layers=6, n_heads=8, n_kv_heads=2, vocab_size=100, d_ff=128,
                      sliding_window=1024, layer_pattern=["local"] * 5 + ["global"])  # fmt: skip
    assert attended_context(model, 2, 4 << 20, 128) == 1024 + 128
    assert attended_context(model, 6, 4 << 20, 128) == 4 << 20  # the global layer reads every key
    assert attended_context(model, 2, 512, 128) == 512
    windowed = workspace_bytes(model, batch=1, prefill_tokens=128, context=1152, value_bytes=2)
    whole = workspace_bytes(model, batch=1, prefill_tokens=128, context=4 << 20, value_bytes=2)
    # K and V repeated for 8 query heads of 8 (4 per KV head) in bf16, and the boolean mask of 4 x 128 rows
    assert whole - windowed == (2 * 8 * 8 * 2 + 4 * 128) * ((4 << 20) - 1152)
    assert unbuilt_kinds_note(model, 2) == (
        "no global layer built (the first 2 are local): the whole model's rows take the calculator's figure for"
        " them, not a measurement; --layers 6 builds one of each kind"
    )
    assert unbuilt_kinds_note(model, 6) is None
    plan = make_plan(model, DeploymentSpec(seq_len=4 << 20, batch=1), device_type="cpu", layers=2)
    assert plan.workspace_bytes == windowed


def test_a_cpu_peak_measured_on_a_busy_machine_says_so(monkeypatch):
    """The CPU peak swung 17-106 GB/s between identical runs (trial 262 #4) with no spread shown: the source names
    the median, and a best copy over 1.5x the median is flagged UNSTABLE."""
    from mha_cli.verify.run import _peak_bandwidth

    def timed(durations):
        ticks = iter(t for d in durations for t in (0.0, d))
        monkeypatch.setattr(measure.time, "perf_counter", lambda: next(ticks))

    timed([0.004] * (measure.COPY_REPS - 1) + [0.001])  # one copy 4x the rest
    best, source = _peak_bandwidth(torch.device("cpu"))
    assert best == 2 * measure.COPY_BYTES / 0.001
    assert (
        f"median {2 * measure.COPY_BYTES / 0.004 / 1e9:.1f} GB/s; UNSTABLE: the best copy was 4.0x the median" in source
    )
    timed([0.001] * measure.COPY_REPS)
    assert "UNSTABLE" not in _peak_bandwidth(torch.device("cpu"))[1]


def test_plan_notes_a_context_past_what_the_model_was_made_for():
    """Trial 291 #2: `kv` and `check` warned that --seq exceeds the design's context, `verify` built it silently."""
    short = tiny(2, context_length=SEQ // 2)
    plan = make_plan(short, DeploymentSpec(seq_len=SEQ), device_type="cpu")
    assert plan.notes == [f"seq_len {SEQ:,} exceeds the {SEQ // 2:,} tokens tiny was trained for"]
    assert make_plan(tiny(2, context_length=SEQ), DeploymentSpec(seq_len=SEQ), device_type="cpu").notes == []
