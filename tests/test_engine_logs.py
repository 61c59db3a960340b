"""The engine memory plan against real vLLM start-up logs that users published (``tests/fixtures/vllm_logs.yaml``:
each entry's URL, model, GPU, tp, utilisation, max_model_len, dtypes and the figures its log printed).

Two claims, each on every log it applies to:
- given the available KV memory the log reports, ``core.engine.pages`` gives the log's token count and
  maximum concurrency, up to what the log's two-decimal GiB leaves unknown (the block arithmetic, the hybrid
  allocator's groups, chunked attention turning it off);
- from first principles (the device's memory, the weights on the rank, the profiling run's activations, the
  non-torch constant), the token count is within 3% of the log's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mha_cli.core.engine.pages import paged_pool
from mha_cli.core.engine.plan import plan_engine
from mha_cli.core.engine.settings import resolve_settings
from mha_cli.core.kv import kv_footprint
from mha_cli.core.safe_yaml import load_yaml_file
from mha_cli.core.schemas import DeploymentSpec
from mha_cli.core.sources import load_source
from mha_cli.core.targets import resolve_target
from mha_cli.core.weight_bytes import rank_weight_bytes

GIB = 2**30
ROOT = Path(__file__).parent.parent
LOGS = load_yaml_file(ROOT / "tests" / "fixtures" / "vllm_logs.yaml")
V0_BLOCK = 16  # the V0 logs print blocks; vLLM's CUDA default block size

NOT_FROM_FIRST_PRINCIPLES = {
    8: "multimodal checkpoint: reproduced within 1% in tests/test_vision_profile.py (SigLIP tower and encoder"
    " profiling counted; vLLM's 0.56 GiB of RoPE caches are not, so the weights miss this test's 1%)",
    15: "pipeline parallel (2 stages): one worker's memory line, the fewest tokens of any; priced stage by stage in"
    " test_the_pipeline_log_is_priced_stage_by_stage",
    17: "multimodal MoE checkpoint (Llama-4-Scout): vLLM holds 53.12 GiB per rank, 2.9 GiB above the text model's"
    " 107.8B weights: its vision tower (0.41 GiB a rank, tests/fixtures/vision's config) and its 2.5 GiB RoPE cache"
    " (tests/test_vision_profile.py)",
    18: "V0 engine and a GPTQ checkpoint",
    19: "V0 engine: it profiles max_model_len tokens (no chunked prefill), not max_num_batched_tokens",
    20: "V0 engine, as above",
}


def _usable(entry: dict) -> bool:
    tokens = entry["kv_cache_tokens"] or entry["gpu_blocks"]
    return bool(entry["config"] and tokens and entry["available_kv_gib"])


USABLE = [entry for entry in LOGS if _usable(entry)]
LOG_IDS = [f"{entry['id']}-{entry['model'].split('/')[-1]}-tp{entry['tensor_parallel_size']}" for entry in USABLE]


def _weight_format(entry: dict) -> str:
    """The checkpoint's format as its config.json states it, else fp8 where the log's model was fp8 (an fp8
    checkpoint whose fixture lacks its quantization_config, or ``--quantization fp8`` on load), else bf16."""
    source = load_source(str(ROOT / entry["config"]))
    if source.deployment is not None:
        return source.deployment.weight_dtype
    return "fp8" if str(entry["quantization"]).startswith("fp8") else "bf16"


def _footprint(entry: dict):
    model = load_source(str(ROOT / entry["config"])).model
    kv_dtype = "fp8" if entry["kv_cache_dtype"] == "fp8" else "bf16"
    return model, kv_footprint(
        model, seq_len=entry["max_model_len"], kv_dtype=kv_dtype, tp=entry["tensor_parallel_size"]
    )


def _reported_tokens(entry: dict) -> int:
    return entry["kv_cache_tokens"] or entry["gpu_blocks"] * V0_BLOCK


def test_the_set_is_large_and_sourced():
    assert len(USABLE) >= 15 and sum(entry["id"] > HELD_OUT for entry in USABLE) >= 5
    for entry in LOGS:
        assert entry["url"].startswith("https://") and entry["quote"], entry["id"]


@pytest.mark.parametrize("entry", USABLE, ids=LOG_IDS)
def test_tokens_from_the_reported_available_memory(entry):
    if entry["pipeline_parallel_size"] != 1:
        pytest.skip(NOT_FROM_FIRST_PRINCIPLES[entry["id"]])
    model, kv = _footprint(entry)
    per_layer = kv.bytes_per_token_per_rank // kv.n_token_layers
    reported = round(entry["available_kv_gib"] * GIB)
    tokens_max_concurrency = []
    for available in (reported - GIB // 200, reported + GIB // 200):  # the log's figure is rounded to 0.01 GiB
        pool = paged_pool(
            model, available_bytes=available, bytes_per_token_per_layer=per_layer, block_size=V0_BLOCK,
            max_model_len=entry["max_model_len"], max_num_batched_tokens=entry["max_num_batched_tokens"] or 8192,
        )  # fmt: skip
        tokens_max_concurrency.append((pool.kv_tokens, pool.max_concurrency))
    (low, low_concurrency), (high, high_concurrency) = tokens_max_concurrency
    assert low <= _reported_tokens(entry) <= high
    if entry["max_concurrency"] is not None:
        assert low_concurrency - 0.005 <= entry["max_concurrency"] <= high_concurrency + 0.005


HELD_OUT = 100
"""Ids from 101 are logs found after the constants were read off the v0.19 set (other GPUs, vLLM 0.10): the block
arithmetic is tested on them; their first-principles errors are reported by ``benchmarks/vllm_logs.py``, not
asserted (vLLM 0.10 charged almost no non-torch memory, against v0.19's 2.1 GiB per rank at tp > 1)."""
FIRST_PRINCIPLES = [e for e in USABLE if e["id"] not in NOT_FROM_FIRST_PRINCIPLES and e["id"] < HELD_OUT]


@pytest.mark.parametrize(
    "entry", FIRST_PRINCIPLES, ids=[f"{e['id']}-{e['model'].split('/')[-1]}" for e in FIRST_PRINCIPLES]
)
def test_tokens_from_first_principles_within_3_percent(entry):
    model, kv = _footprint(entry)
    target = resolve_target("h100").target  # every log here ran on an H100 80GB (79.19 GiB, as the logs say)
    assert entry["total_gpu_memory_gib"] == target.torch_memory_gib
    tp = entry["tensor_parallel_size"]
    deployment = DeploymentSpec(  # every log here is vLLM 0.19: the V1 generation's rules
        target="h100", seq_len=entry["max_model_len"], tp=tp, engine_generation="vllm-v1",
        gpu_memory_utilization=entry["gpu_memory_utilization"],
        max_num_batched_tokens=entry["max_num_batched_tokens"], max_num_seqs=entry["max_num_seqs"],
    )  # fmt: skip
    plan = plan_engine(
        model, kv, target, resolve_settings(deployment, target, tp),
        weights_bytes_per_rank=rank_weight_bytes(model, tp, _weight_format(entry)), sequences_per_replica=1,
    )  # fmt: skip
    assert plan.kv_tokens == pytest.approx(_reported_tokens(entry), rel=0.03)
    # gpt-oss-20b: vLLM reports 7.01 GiB on the rank, 9% above the checkpoint's mxfp4 bytes (6.41 GiB): how vLLM
    # lays out mxfp4 experts on Hopper is not modelled (an open finding); its tokens are still within 3%
    weights_tolerance = 0.1 if entry["id"] == 9 else 0.01
    assert plan.weights_bytes_per_rank / GIB == pytest.approx(entry["weights_gib"], rel=weights_tolerance)
    assert plan.max_concurrency == pytest.approx(entry["max_concurrency"], rel=0.03)


def test_first_principles_covers_most_of_the_set():
    assert len(FIRST_PRINCIPLES) >= 10


def test_the_pipeline_log_is_priced_stage_by_stage(cli):
    """Log 15 (vLLM 0.19.0, Llama-3.1-8B at tp 1 x pp 2 on two H100s, utilisation 0.95, 8,192 tokens): each worker
    holds 16 layers and the embedding or the head, and vLLM gives both the fewest blocks either reports. Priced by
    ``plan --pp 2`` at that release: 1,077,376 tokens against the log's 1,075,312 (+0.2%); the control, one worker
    holding every layer (``benchmarks/vllm_logs.py`` priced it so until trial 296 #3), lands -55.6%."""
    logged = next(entry for entry in LOGS if entry["id"] == 15)["kv_cache_tokens"]
    args = ["plan", "llama-3.1-8b", "--tp", "1", "--isl", "7936", "--osl", "256", "--gpu-memory-utilization", "0.95",
            "--max-num-seqs", "1024", "--engine", "vllm@0.19.0", "--concurrency", "1", "--closed-form"]  # fmt: skip
    stages = cli.json(*args, "--target", "2xh100", "--pp", "2")
    assert stages["memory"]["engine"]["kv_tokens"] == 1_077_376
    assert abs(stages["memory"]["engine"]["kv_tokens"] / logged - 1) < 0.005
    one_stage = cli.json(*args, "--target", "h100")["memory"]["engine"]["kv_tokens"]
    assert one_stage / logged - 1 < -0.5
