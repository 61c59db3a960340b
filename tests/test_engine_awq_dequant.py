"""vLLM's unfused AWQ kernel in the profiling run (``core.engine.activation.awq_dequant_peak_bytes``): bytes counted
by hand for Qwen2.5-7B (d_model 3,584, d_ff 18,944, 28 heads and 4 KV heads of 128), and where the plan charges it."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from mha_cli.core.engine.activation import awq_dequant_peak_bytes, forward_peak_bytes
from mha_cli.core.engine.plan import plan_engine
from mha_cli.core.engine.settings import resolve_settings
from mha_cli.core.kv import kv_footprint
from mha_cli.core.schemas import DeploymentSpec
from mha_cli.core.sources import load_source
from mha_cli.core.targets import resolve_target
from mha_cli.core.weight_bytes import rank_weight_bytes

ROOT = Path(__file__).parent.parent


def _qwen():
    return load_source(str(ROOT / "tests/fixtures/hf_configs/qwen2.5-7b.json")).model


def test_the_merged_gate_up_is_the_widest_dequantized_projection():
    """At 2,048 tokens: the gate_up weight 3,584 x 37,888 x 2 B = 271,581,184 B, live with the residual, the normed
    input and the output, 2,048 x 2 B x (3,584 + 3,584 + 37,888) = 184,549,376 B: 456,130,560 B (0.42 GiB). The down
    projection's (18,944 x 3,584 x 2 + 2,048 x 2 x (3,584 + 18,944 + 3,584) = 242,745,344 B) and q/k/v's are smaller."""
    model = _qwen()
    assert awq_dequant_peak_bytes(model, tokens=2048, tp=1) == 271_581_184 + 184_549_376
    # the widest-layer estimate it replaces: 2,048 x 2 B x (2 x 3,584 + 3 x 18,944) = 262,144,000 B
    assert forward_peak_bytes(model, tokens=2048, tp=1) == 262_144_000


def test_below_256_tokens_awq_gemm_multiplies_the_packed_weight():
    model = _qwen()
    assert awq_dequant_peak_bytes(model, tokens=255, tp=1) == 0
    assert awq_dequant_peak_bytes(model, tokens=256, tp=1) == 271_581_184 + 256 * 2 * (3584 + 3584 + 37888)


def test_tensor_parallel_shards_the_weight():
    """At tp 2 the gate_up shard is 3,584 x 18,944: 135,790,592 B + 2,048 x 2 x (3,584 + 3,584 + 18,944) B."""
    assert awq_dequant_peak_bytes(_qwen(), tokens=2048, tp=2) == 135_790_592 + 2048 * 2 * (3584 + 3584 + 18944)


def _plan(kernel):
    model = _qwen()
    target = resolve_target("rtx-3090").target
    spec = DeploymentSpec(
        seq_len=4096, tp=1, engine="vllm", engine_version="0.22.1", weight_dtype="awq", max_num_seqs=8,
        max_num_batched_tokens=2048, vllm_awq_kernel=kernel,
    )  # fmt: skip
    settings = resolve_settings(spec, target, 1)
    kv = kv_footprint(model, seq_len=4096, kv_dtype="bf16", tp=1)
    return plan_engine(model, kv, target, settings, weights_bytes_per_rank=rank_weight_bytes(model, 1, "awq"),
                       sequences_per_replica=1)  # fmt: skip


def test_the_plan_charges_it_only_where_the_kernel_is_forced():
    """vLLM's own choice on CUDA is AWQ Marlin (no dequantisation); ``awq``, as quantization=awq given explicitly forces
    in 0.22.1, moves the activation line from the widest-layer estimate to the dequantized gate_up."""
    marlin, forced = _plan(None), _plan("awq")
    assert _plan("awq_marlin").available_kv_bytes == marlin.available_kv_bytes
    assert marlin.available_kv_bytes - forced.available_kv_bytes == 456_130_560 - 262_144_000
    line = next(line for line in forced.budget if line.label.startswith("activation"))
    assert "AWQLinearMethod" in line.how


def test_the_kernel_is_refused_for_other_weights_or_engines():
    with pytest.raises(ValidationError, match="vllm_awq_kernel"):
        DeploymentSpec(seq_len=4096, weight_dtype="bf16", vllm_awq_kernel="awq")
    with pytest.raises(ValidationError, match="vllm_awq_kernel"):
        DeploymentSpec(seq_len=4096, engine="sglang", weight_dtype="awq", vllm_awq_kernel="awq")
