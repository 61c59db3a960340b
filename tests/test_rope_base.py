"""Rule MHA042's RoPE base by context (``core.recommend.rope_base``): the table's short rows counted again here from
Men et al.'s condition, each base the first round one that passes (the one before it fails: the control), and the
base a design and the files it writes carry."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mha_cli.core.recommend.rope_base import BASE_FLOOR, BASES_BY_ROTARY_DIMS, CONTEXTS, ROUND_BASES, rope_base


def similar_keys_preferred(base: float, context: int, rotary_dims: int) -> bool:
    """Men et al. 2024's condition, counted directly: sum_i cos(m base^(-2i/d)) >= 0 at every m in 0..context."""
    frequencies = base ** (-2.0 * np.arange(rotary_dims // 2) / rotary_dims)  # (d/2,)
    distances = np.arange(context + 1, dtype=np.float64)[:, None]  # (context + 1, 1)
    return bool((np.cos(distances * frequencies).sum(axis=1) >= 0).all())


SHORT_ROWS = [(dims, at) for dims in BASES_BY_ROTARY_DIMS for at, context in enumerate(CONTEXTS) if context <= 32768]


@pytest.mark.parametrize(("dims", "at"), SHORT_ROWS)
def test_each_short_row_is_the_first_round_base_that_keeps_similar_keys_preferred(dims, at):
    """Every row up to 32K tokens: its base passes at its context, and the round base before it (when above the
    500,000 floor) fails there, so the table holds the first that passes, not any that does."""
    context, base = CONTEXTS[at], BASES_BY_ROTARY_DIMS[dims][at]
    assert base in ROUND_BASES and base >= BASE_FLOOR
    assert similar_keys_preferred(base, context, dims)
    below = ROUND_BASES[ROUND_BASES.index(base) - 1]
    if below >= BASE_FLOOR:
        assert not similar_keys_preferred(below, context, dims), (dims, context, below)


def test_the_rows_rise_with_the_context_and_narrower_heads_need_more():
    for dims, bases in BASES_BY_ROTARY_DIMS.items():
        assert len(bases) == len(CONTEXTS) and list(bases) == sorted(bases), dims
    for at in range(len(CONTEXTS)):
        assert BASES_BY_ROTARY_DIMS[32][at] >= BASES_BY_ROTARY_DIMS[64][at] >= BASES_BY_ROTARY_DIMS[128][at]


def test_a_context_takes_the_row_at_or_above_it():
    assert rope_base(8192, 128).theta == 500_000 and rope_base(8193, 128) == (500_000, 16384, False)
    assert rope_base(32768, 128).theta == 2_000_000 and rope_base(100_000, 128).row_tokens == 131072
    assert rope_base(1 << 20, 128).theta == 1e9 and rope_base(1 << 25, 128) == (1e11, 1 << 24, True)
    # a width between rows takes the narrower row, whose base is the larger (review 346 #9); below every row, 32's
    assert rope_base(32768, 96) == rope_base(32768, 64) and rope_base(32768, 16) == rope_base(32768, 32)
    assert rope_base(32768, 256) == rope_base(32768, 128)


@pytest.mark.parametrize(("seq", "theta"), [("8k", 500_000), ("32k", 2_000_000), ("128k", 10_000_000), ("1M", 1e9)])
def test_a_design_carries_the_base_of_its_context(cli, seq, theta):
    """Trial 345 #2: a 1M design was written with Llama 3's 500,000 and no scaling; the base now rises with the
    context, the trace says from which row, and an MLA design keeps the floor."""
    data = cli.json("recommend", "--params", "7B", "--seq", seq)
    line = next(entry for entry in data["trace"] if entry["id"] == "MHA042")
    assert line["values"]["rope_theta"] == theta and f"RoPE base theta {theta:,.0f}:" in line["message"]
    mla = cli.json("recommend", "--params", "7B", "--seq", seq, "--variant", "MLA")
    assert next(entry for entry in mla["trace"] if entry["id"] == "MHA042")["values"]["rope_theta"] == BASE_FLOOR


def test_the_written_files_carry_the_base(cli, tmp_path):
    yaml_file, hf_file = tmp_path / "design.yaml", tmp_path / "config.json"
    assert cli.run("recommend", "--params", "7B", "--seq", "128k", "--out", str(yaml_file)).exit_code == 0
    assert (
        cli.run("recommend", "--params", "7B", "--seq", "128k", "--out", str(hf_file), "--format", "hf").exit_code == 0
    )
    hf = json.loads(hf_file.read_text())
    assert hf.get("rope_theta", (hf.get("rope_parameters") or {}).get("rope_theta")) == 10_000_000
    assert cli.json("kv", str(yaml_file))["model"]["attention"]["rope"]["theta"] == 10_000_000
