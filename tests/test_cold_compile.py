"""The cold-compile note (``core.engine.cold_compile``): on which plans it is said, and the start-up logs behind its
words (a cold and a warm start of one configuration, ``tests/fixtures/engine_logs.yaml``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mha_cli.core.engine.cold_compile import COLD_COMPILE_NOTE
from mha_cli.core.engine.plan import plan_engine
from mha_cli.core.engine.settings import resolve_settings
from mha_cli.core.kv import kv_footprint
from mha_cli.core.presets import get_preset
from mha_cli.core.safe_yaml import load_yaml_file
from mha_cli.core.schemas import DeploymentSpec
from mha_cli.core.targets import resolve_target

ROOT = Path(__file__).resolve().parents[1]
LOGS = {entry["id"]: entry for entry in load_yaml_file(ROOT / "tests/fixtures/engine_logs.yaml")}
QWEN3_8B_BYTES_PER_TOKEN = 36 * 8 * 128 * 2 * 2
"""36 layers x 8 KV heads x 128 x (K, V) x 2 B: Qwen3-8B's bf16 cache a token (147,456 B)."""


def _notes(target: str, **deployment) -> list[str]:
    resolved = resolve_target(target).target
    model = get_preset("llama-3-8b")
    kv = kv_footprint(model, seq_len=8192)
    settings = resolve_settings(DeploymentSpec(**deployment), resolved, 1)
    plan = plan_engine(model, kv, resolved, settings, weights_bytes_per_rank=16 * 10**9, sequences_per_replica=1)
    return plan.notes


@pytest.mark.parametrize("generation", ["vllm-v1", "vllm-0.21"])
@pytest.mark.parametrize("target", ["h100", "mi300x"])
def test_a_vllm_v1_pool_sized_from_the_memory_left_says_a_cold_start_can_be_smaller(generation, target):
    assert COLD_COMPILE_NOTE in _notes(target, engine="vllm", engine_generation=generation)


@pytest.mark.parametrize(
    ("target", "deployment"),
    [
        ("h100", {"engine": "vllm", "kv_cache_memory_bytes": 10**9}),  # the pool set outright: nothing measured
        ("h100", {"engine": "vllm", "engine_generation": "vllm-v0"}),  # V0: no torch.compile by default
        ("h100", {"engine": "sglang"}),
        ("h100", {"engine": "trtllm"}),
        ("cpu", {"engine": "vllm"}),  # the CPU backend's pool is VLLM_CPU_KVCACHE_SPACE
        ("tpu-v6e", {"engine": "vllm"}),  # XLA, not gpu_worker's torch.compile (review 288 #4)
        ("gaudi3", {"engine": "vllm"}),  # its HPU worker
    ],
)
def test_no_cold_compile_note_where_no_profiling_forward_sizes_the_pool(target, deployment):
    assert COLD_COMPILE_NOTE not in _notes(target, **deployment)


def test_the_cold_and_warm_starts_the_note_quotes_differ_by_0_5_to_1_gib():
    """1702 (Qwen3-8B, RTX 4090, vLLM 0.27.1, torch.compile 38.96 s) against 1703 (the same worker with the cache
    warm, its pool as tokens x 147,456 B), and 2101 (gemma-2-9b, RTX PRO 6000, 'Compiling a graph') against 2102
    ('Directly load the compiled graph(s)'): the cold start's pool is the smaller, by 0.5-1 GiB, as the note says."""
    gib = 2**30
    cold_qwen = LOGS[1702]["kv_tokens"] * QWEN3_8B_BYTES_PER_TOKEN / gib
    warm_qwen = LOGS[1703]["kv_tokens"] * QWEN3_8B_BYTES_PER_TOKEN / gib
    assert cold_qwen == pytest.approx(LOGS[1702]["available_kv_gib"], abs=0.005)  # the byte count is the log's
    assert "torch.compile took 38.96 s" in LOGS[1702]["quote"]
    assert "Compiling a graph" in LOGS[2101]["quote"] and "Directly load the compiled graph" in LOGS[2102]["quote"]
    gaps = [warm_qwen - cold_qwen, LOGS[2102]["available_kv_gib"] - LOGS[2101]["available_kv_gib"]]
    assert gaps == pytest.approx([0.99, 0.98], abs=0.01)
    assert all(0.5 <= gap <= 1.0 for gap in gaps) and "0.5-1 GiB" in COLD_COMPILE_NOTE
