"""The KV block vLLM and SGLang force for MLA (``core.engine.mla_blocks``): each release boundary read in the
wheels, and the pool a plan prints for DeepSeek-V3 at a stated pool, blocks and tokens by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mha_cli.core.engine.architectures_served import served_as
from mha_cli.core.engine.mla_blocks import sglang_mla_page, vllm_mla_block
from mha_cli.core.hf_import import import_hf_config
from mha_cli.core.targets import load_targets

CONFIGS = Path(__file__).parent / "fixtures" / "hf_configs"
TARGETS = load_targets()
LATEST = (1 << 20, 0, 0, 0)


def _model(name: str):
    return import_hf_config(json.loads((CONFIGS / f"{name}.json").read_text()), name=name).model


V3, V32, LLAMA = _model("deepseek-v3"), _model("deepseek-v3.2-exp"), _model("llama-3.1-8b")
GLM5 = _model("glm-5")


def _vllm(release, target: str, *, model=V3, asked=None, kv="bf16"):
    forced = vllm_mla_block(model, TARGETS[target], release, asked=asked, kv_dtype=kv)
    return None if forced is None else forced.size


@pytest.mark.parametrize(
    ("release", "target", "asked", "kv", "size"),
    [
        ((0, 7, 3, 0), "h200", None, "bf16", None),  # V0: Triton MLA only, nothing forced
        ((0, 8, 5, 0), "h200", None, "bf16", 64),  # FlashMLA on Hopper
        ((0, 8, 5, 0), "b200", None, "bf16", None),  # FlashMLA is Hopper-only: Triton MLA keeps 16
        ((0, 10, 0, 0), "b200", None, "bf16", None),  # CUTLASS MLA only when named
        ((0, 10, 2, 0), "b200", None, "bf16", 128),  # Blackwell default: CUTLASS MLA
        ((0, 10, 2, 0), "h200", 128, "bf16", 64),  # up to 0.11 a given size that is not 64 is overridden
        ((0, 11, 0, 0), "h200", 16, "fp8", 64),  # an explicit 16 for FlashMLA: overridden
        ((0, 12, 0, 0), "h200", 128, "bf16", None),  # from 0.12 a multiple of 64 is kept
        ((0, 12, 0, 0), "b300", None, "bf16", None),  # is_device_capability(100): 10.3 is not Blackwell there
        ((0, 13, 0, 0), "b300", None, "bf16", 128),  # is_device_capability_family(100) from 0.13
        ((0, 17, 0, 0), "a100-80gb", None, "bf16", None),  # Ampere: Triton MLA
        ((0, 17, 0, 0), "l40s", None, "fp8", None),  # Ada: Triton MLA
        ((0, 18, 0, 0), "h200", None, "bf16", None),  # FlashAttention MLA: multiples of 16
        ((0, 19, 0, 0), "h200", None, "fp8", 64),  # FlashAttention MLA takes no fp8 cache: FlashMLA
        ((0, 19, 0, 0), "h200", 16, "fp8", None),  # 0.18+ keeps a given size (FlashMLA passed over)
        ((0, 19, 0, 0), "b200", None, "bf16", 32),  # FlashInfer MLA's [32, 64]
        (LATEST, "b300", None, "fp8", 32),
        (LATEST, "rtx-5090", None, "bf16", None),  # 12.x: Triton MLA
        (LATEST, "mi300x", None, "bf16", None),  # ROCm: not read
    ],
)
def test_vllm_dense_mla_block_by_release_and_gpu(release, target, asked, kv, size):
    assert _vllm(release, target, asked=asked, kv=kv) == size


@pytest.mark.parametrize(
    ("release", "target", "size"),
    [
        ((0, 11, 0, 0), "b200", 64),  # CUTLASS's 128, then FlashMLASparse's 64
        ((0, 13, 0, 0), "b200", 64),
        ((0, 17, 0, 0), "a100-80gb", 64),  # cuda.py forces it on any GPU
        ((0, 19, 0, 0), "h200", 64),  # the indexer's backend, the first layer's
        (LATEST, "b200", 64),
    ],
)
def test_vllm_sparse_mla_deepseek_v32_runs_in_blocks_of_64(release, target, size):
    assert _vllm(release, target, model=V32) == size


def test_a_model_without_mla_keeps_its_block():
    assert _vllm(LATEST, "h200", model=LLAMA, kv="fp8") is None
    assert _vllm((0, 10, 2, 0), "b200", model=LLAMA) is None


def test_a_changed_mla_block_with_a_non_matching_nope_dim_falls_to_cutlass():
    mla = V3.attention.mla.model_copy(update={"qk_nope_head_dim": 192})
    odd = V3.model_copy(update={"attention": V3.attention.model_copy(update={"mla": mla})})
    assert _vllm((0, 18, 0, 0), "b200", model=odd) == 128  # 0.18's FlashInfer MLA: 64 or 128 only
    assert _vllm((0, 19, 0, 0), "b200", model=odd) == 32


@pytest.mark.parametrize(
    ("release", "target", "model", "asked", "size"),
    [
        ((0, 5, 3, 0), "b200", V3, None, None),  # trtllm_mla became the sm100 default in 0.5.4
        ((0, 5, 4, 0), "b200", V3, None, 64),
        (LATEST, "b200", V3, 32, None),  # 32 and 64 are kept
        (LATEST, "b200", V3, 16, 64),
        (LATEST, "h200", V3, None, None),  # Hopper's default MLA backend keeps page 1
        ((0, 5, 2, 0), "h200", V32, None, None),
        ((0, 5, 3, 0), "h200", V32, 1, 64),  # NSA: 64 whatever is given
        ((0, 5, 5, 0), "h200", GLM5, None, None),  # is_deepseek_nsa lists GLM-5 in 0.5.9, not 0.5.5
        ((0, 5, 9, 0), "h200", GLM5, None, 64),
        (LATEST, "b200", LLAMA, None, None),
    ],
)
def test_sglang_mla_page_by_release_and_gpu(release, target, model, asked, size):
    forced = sglang_mla_page(model, TARGETS[target], release, asked=asked, architectures=served_as(model))
    assert (None if forced is None else forced.size) == size


def _engine(cli, target: str, *extra: str) -> dict:
    plan = cli.json(
        "kv", str(CONFIGS / "deepseek-v3.json"), "--target", target, "--seq", "131072", "--kv-dtype", "fp8",
        "--tp", "8", "--kv-cache-gib", "40", *extra,
    )  # fmt: skip
    return plan["engine"]


# A 40 GiB pool per rank; DeepSeek-V3 in fp8 caches 512 + 64 = 576 bytes a token in each of its 61 layers.
# Blocks = 42,949,672,960 // (block x 576 x 61); tokens = blocks x block; a request of 131,072 tokens takes
# 131,072 / block blocks. At 16 tokens a block (the old price) 76,398 blocks, 1,222,368 tokens.
@pytest.mark.parametrize(
    ("target", "extra", "block", "blocks", "tokens", "concurrency"),
    [
        ("8xh200", (), 64, 19_099, 1_222_336, 19_099 / 2_048),  # FlashMLA (fp8 cache)
        ("8xb200", ("--engine", "vllm@0.17"), 128, 9_549, 1_222_272, 9_549 / 1_024),  # CUTLASS MLA
        ("8xb200", (), 32, 38_199, 1_222_368, 38_199 / 4_096),  # FlashInfer MLA
        ("8xh200", ("--block-size", "16"), 16, 76_398, 1_222_368, 76_398 / 8_192),  # 0.18+ keeps it
        ("8xh200", ("--engine", "vllm@0.17", "--block-size", "16"), 64, 19_099, 1_222_336, 19_099 / 2_048),
    ],
)
def test_deepseek_v3_pool_in_the_forced_blocks(cli, target, extra, block, blocks, tokens, concurrency):
    engine = _engine(cli, target, *extra)
    assert (engine["block_size"], engine["kv_blocks"], engine["kv_tokens"]) == (block, blocks, tokens)
    assert engine["max_concurrency"] == pytest.approx(concurrency)
    forced = [note for note in engine["notes"] if "runs this MLA model" in note]
    assert bool(forced) == (block != 16)
    if "--block-size" in extra and block != 16:
        assert "overriding --block-size 16" in forced[0]


def test_a_dense_gqa_model_keeps_blocks_of_16(cli):
    plan = cli.json("kv", str(CONFIGS / "llama-3.1-8b.json"), "--target", "b200", "--seq", "8192", "--kv-dtype", "fp8")
    assert plan["engine"]["block_size"] == 16
    assert not [note for note in plan["engine"]["notes"] if "runs this MLA model" in note]


@pytest.mark.parametrize(
    ("extra", "footprint", "pool"),
    [  # vLLM 0.17 on Hopper: FlashMLA's 64 over the 16 asked; 0.34 keeps 16 (FLASH_ATTN_MLA takes it)
        (("--engine", "vllm@0.17", "--block-size", "16"), "blocks of 16 as asked; vLLM allocates blocks of 64",
         "0 blocks of 64"),
        (("--block-size", "16"), "8,192 tokens, blocks of 16|", "0 blocks of 16"),
        (("--engine", "vllm@0.17"), "61 layers x 8,192 tokens|", "0 blocks of 64"),
    ],
)  # fmt: skip
def test_the_tables_name_the_block_the_engine_allocates(cli, extra, footprint, pool):
    """DeepSeek-V3 on one H200 (its weights do not fit: no pool, but the block is settled all the same): the
    footprint rounded to a --block-size says the engine's own where the engine forces another; the pool's line
    names the engine's block."""
    from mha_cli.cli.app import app

    args = ["kv", str(CONFIGS / "deepseek-v3.json"), "--target", "h200", "--seq", "8192", *extra]
    shown = cli.runner.invoke(app, args, env={"COLUMNS": "300"})
    assert shown.exit_code == 0, shown.output
    rows = ["|".join(" ".join(cell.split()) for cell in line.split("│")) for line in shown.stdout.splitlines()]
    assert footprint in next(row for row in rows if "per sequence (8,192 tokens)" in row)
    assert f"|{pool}|" in next(row for row in rows if "KV cache size (tokens)" in row)


def test_a_release_the_generation_does_not_cover_takes_its_last_mla_block():
    """DeepSeek-V3 with an fp8 cache on an H200 priced by vllm-v0's rules with a 0.30.0 release (a control column's)
    keeps V0's 16-token block (Triton MLA, 0.7.x), not the 64 FlashMLA forces in 0.30 (read as 0.30.0 was before);
    vllm-v1 covering 0.11.0 forces 64 (the control)."""
    from mha_cli.core.engine.mla_blocks import settle_mla_block
    from mha_cli.core.engine.settings import resolve_settings
    from mha_cli.core.schemas import DeploymentSpec

    def block(generation: str, release: str) -> int:
        deployment = DeploymentSpec(engine="vllm", engine_generation=generation, engine_version=release)
        settings = resolve_settings(deployment, TARGETS["h200"], 8)
        return settle_mla_block(V3, TARGETS["h200"], settings, "fp8")[0].block_size

    assert block("vllm-v0", "0.30.0") == 16
    assert block("vllm-v1", "0.11.0") == 64
