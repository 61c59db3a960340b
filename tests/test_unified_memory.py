"""GB10 (DGX Spark) as a target, and the unified-memory rule of vLLM 0.32 on integrated GPUs (core.unified_memory)."""

from __future__ import annotations

import math

import pytest

from mha_cli.core.engine.plan import plan_engine
from mha_cli.core.engine.settings import resolve_settings
from mha_cli.core.kv import kv_footprint
from mha_cli.core.presets import get_preset
from mha_cli.core.schemas import DeploymentSpec
from mha_cli.core.targets import load_targets, match_target, resolve_target
from mha_cli.core.unified_memory import host_allowance_bytes, is_integrated, unified_memory_notes

GB10 = load_targets()["gb10"]


def test_gb10_carries_nvidias_figures_and_flags_the_derived_ones():
    """NVIDIA's DGX Spark spec: 128 GB LPDDR5x, 273 GB/s, 1 PFLOP FP4 with sparsity (500 dense); BF16 and FP8 are not
    published: derived (FP8 a half, BF16 a quarter of dense FP4) and flagged UNCERTAIN; compute capability 12.1."""
    t = GB10
    assert (t.vendor, t.memory_gb, t.memory_bandwidth_gbs) == ("NVIDIA", 128, 273)
    assert (t.fp4_tflops_dense, t.fp8_tflops_dense, t.bf16_tflops_dense) == (1000 / 2, 1000 / 4, 1000 / 8)
    assert t.fp8_native and t.bf16_native and t.interconnect_gbs is None
    assert t.compute_capability == 12.1
    assert t.uncertain and "sparse" in t.notes and "nvidia.com" in t.source
    assert t.torch_memory_gib == 119.70 and t.device_memory_measured  # the torch total a DGX Spark's log prints
    assert resolve_target("dgx-spark").target.id == "gb10"
    assert resolve_target("dgx-spark").alias_note == "dgx-spark -> gb10 (NVIDIA GB10 (DGX Spark))"
    assert resolve_target("2xgb10").n_nodes == 2  # one GPU a box: two boxes are two nodes
    assert match_target("NVIDIA GB10").id == "gb10"  # the device name torch gives on a DGX Spark


def test_only_integrated_gpus_are_flagged():
    targets = load_targets()
    assert is_integrated(GB10) and is_integrated(targets["jetson-orin"])
    assert not is_integrated(targets["h100-sxm"]) and not is_integrated(targets["rtx-pro-6000-ws"])


def test_host_allowance_by_hand():
    """vLLM 0.32 request_memory asks ceil(total x utilisation); it starts only while the OS's available memory covers
    it, so the host may hold at most total - ceil(total x utilisation): 119.70 GiB x 0.1 = 11.97 GiB at 0.9."""
    total = GB10.device_memory_bytes
    assert total == round(119.70 * 2**30)
    assert host_allowance_bytes(total, 0.9) == total - math.ceil(total * 0.9)
    assert host_allowance_bytes(total, 0.9) / 2**30 == pytest.approx(11.97, abs=0.005)
    assert host_allowance_bytes(total, 0.92) / 2**30 == pytest.approx(9.576, abs=0.005)


def _plan(target, engine="vllm"):
    model = get_preset("llama-3-8b")
    kv = kv_footprint(model, seq_len=8192)
    settings = resolve_settings(DeploymentSpec(engine=engine), target, 1)
    return plan_engine(model, kv, target, settings, weights_bytes_per_rank=16 * 10**9, sequences_per_replica=1)


def test_the_host_does_not_change_vllms_pool_and_is_stated_as_an_assumption():
    """The pool on GB10 is priced as on a discrete device of the same figures (vLLM's budget is the request less what
    the instance consumed) but for the worker's host token tables, which vLLM's measure counts on unified memory
    (``core.engine.uma_token_tables``); what the host holds is the note with its allowance, an assumption, not a
    budget line. Before gb10uma the two pools were equal."""
    discrete = GB10.model_copy(update={"id": "gb10-as-discrete"})
    unified, plain = _plan(GB10), _plan(discrete)
    tables = 256 * 8192 * 4  # GB10's 256 sequences x 8,192 positions x int32: the latest vLLM runs Llama on V2
    assert plain.available_kv_bytes - unified.available_kv_bytes == tables
    assert unified.non_torch_bytes - plain.non_torch_bytes == tables
    moved = {"non-torch memory", "= available for KV cache"}
    assert [(line.label, line.bytes) for line in unified.budget if line.label not in moved] == [
        (line.label, line.bytes) for line in plain.budget if line.label not in moved
    ]
    assert "(Model Runner V2's pinned all_token_ids: 256 x 8,192 x 4 B)" in unified.budget[5].how
    note = next(n for n in unified.notes if "unified memory" in n)
    assert "at most 11.97 GiB, assumed here" in note and "119.70 GiB" in note and "request_memory" in note
    assert not any("unified memory" in n for n in plain.notes)


def test_other_engines_say_the_host_is_assumed_to_hold_nothing():
    (note,) = unified_memory_notes(GB10, "sglang", 0.88)
    assert note.endswith("is assumed here to be nothing")
    assert unified_memory_notes(load_targets()["h100-sxm"], "vllm", 0.9) == []


def test_mha_kv_on_gb10_through_the_cli(cli):
    result = cli.run("kv", "llama-3-8b", "--target", "gb10", "--seq", "8192")
    assert result.exit_code == 0, result.output
    assert "119.70 GiB" in result.output and "unified memory" in result.output
    data = cli.json("kv", "llama-3-8b", "--target", "dgx-spark", "--seq", "8192")
    assert "gb10" in str(data) and "11.97 GiB" in str(data)
