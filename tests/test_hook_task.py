"""The induction task and the hook's scaled copy: checked by hand, without training."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from mha_cli.core.presets import get_preset
from mha_cli.core.schemas import ModelSpec
from mha_cli.core.sources import load_source
from mha_cli.experiments.data import IGNORE_INDEX
from mha_cli.hook.scale import scaled_copy
from mha_cli.hook.sizes import DEFAULT_SIZE
from mha_cli.hook.task import InductionTask
from tests.conftest import REPO

TASK = InductionTask(vocab_size=48, seq_len=32, min_segment=8, max_segment=16)


def test_every_scored_target_is_what_follows_the_earlier_copy_of_the_current_token():
    inputs, targets = TASK.batch(64, torch.Generator().manual_seed(0))  # (64, 32) each
    for tokens, row_targets in zip(inputs.tolist(), targets.tolist(), strict=True):
        scored = [t for t, target in enumerate(row_targets) if target != IGNORE_INDEX]
        assert 7 <= len(scored) <= 15  # a segment of 8-16 tokens: all but its first token scored
        assert scored == list(range(scored[0], scored[-1] + 1))  # one contiguous run
        for t in scored:
            earlier = [j for j in range(t) if tokens[j] == tokens[t]]
            assert len(earlier) == 1  # the current token occurred exactly once before ...
            assert row_targets[t] == tokens[earlier[0] + 1]  # ... and the target is the token after it
        repeat_start = scored[0]
        assert tokens[repeat_start] in tokens[:repeat_start]  # the repeat starts here ...
        assert tokens[repeat_start - 1] not in tokens[: repeat_start - 1]  # ... its first token is not predictable
        assert len(set(tokens)) == 32 - (len(scored) + 1)  # all other tokens distinct


def test_the_task_is_seeded():
    first = TASK.batch(8, torch.Generator().manual_seed(3))
    again = TASK.batch(8, torch.Generator().manual_seed(3))
    other = TASK.batch(8, torch.Generator().manual_seed(4))
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    assert not torch.equal(first[0], other[0])


def test_task_sizes_are_checked():
    with pytest.raises(ValueError, match="vocab_size"):
        InductionTask(vocab_size=16, seq_len=32, min_segment=8, max_segment=16)
    with pytest.raises(ValueError, match="max_segment"):
        InductionTask(vocab_size=48, seq_len=32, min_segment=8, max_segment=17)


def test_7b_config_copy_keeps_its_heads_and_narrows_them():
    design = load_source(str(REPO / "outputs" / "configs" / "7b-8k-a100.yaml")).model
    copy = scaled_copy(design, 2, DEFAULT_SIZE)
    spec = copy.spec
    assert (spec.n_layers, spec.attention.n_heads, spec.attention.n_kv_heads, spec.attention.variant) == (
        2,
        32,
        8,
        "GQA",
    )
    assert spec.attention.head_dim == 256 // 32  # the query-width cap of 256 over 32 heads
    assert (spec.d_model, spec.embeddings.vocab_size, spec.block.d_ff) == (128, 48, 128)
    assert design.rotary.theta == 500_000 and spec.rotary == design.rotary.model_copy(update={"theta": 10_000})
    # the same position scheme, RoPE, its base lowered on the narrowed heads (HOOK_ROPE_BASE)
    assert "head_dim: 128 -> 8" in " ".join(copy.changes)
    assert scaled_copy(design, 1, DEFAULT_SIZE).spec.n_layers == 1


def test_default_residual_has_room_for_the_current_and_the_previous_token():
    """Induction's second layer compares the current token with the previous token the first layer copied beside
    each key: two tokens of the vocabulary in one residual. At 64 wide for 48 tokens, seed 0 of the 125M config
    stalled at 87% after 1,500 steps; at 128 it passed in 425 (docs/commands/verify.md, hook reliability)."""
    design = load_source(str(REPO / "outputs" / "configs" / "125m-2k-4090.yaml")).model
    spec = scaled_copy(design, 2, DEFAULT_SIZE).spec
    assert spec.d_model >= 2 * spec.embeddings.vocab_size


def test_default_task_spreads_the_repeat_offset_past_what_a_1_layer_model_learns():
    """A 1-layer model solves the repeats whose offset (second copy - first) it has a positional head for: on 32
    tokens its control scored 95-99% at offsets 12-16 and 0% from 18 on, and the 8 most common offsets held 90% of
    the scored tokens. The default task keeps them under 80% (40 tokens: 70%)."""
    size = DEFAULT_SIZE
    task = InductionTask(size.vocab_size, size.seq_len, size.min_segment, size.max_segment)
    inputs, targets = task.batch(2000, torch.Generator().manual_seed(0))  # (2000, s) each
    offsets: dict[int, int] = {}
    for tokens, row_targets in zip(inputs.tolist(), targets.tolist(), strict=True):
        for t, target in enumerate(row_targets):
            if target != IGNORE_INDEX:
                offset = t - tokens.index(tokens[t])  # back to the first copy of the current token
                offsets[offset] = offsets.get(offset, 0) + 1
    top8 = sum(sorted(offsets.values(), reverse=True)[:8])
    assert top8 / sum(offsets.values()) < 0.8


def test_head_width_is_kept_when_it_fits():
    design = ModelSpec(d_model=64, n_layers=4, n_heads=4, n_kv_heads=1, head_dim=16, vocab_size=100, d_ff=128)
    copy = scaled_copy(design, 2, DEFAULT_SIZE)
    assert (copy.spec.attention.head_dim, copy.spec.attention.variant, copy.spec.d_model) == (16, "MQA", 64)
    assert "head_dim: 16 kept" in copy.changes


def test_mla_copy_scales_widths_and_ranks_by_one_factor_and_moe_becomes_dense():
    design = load_source("deepseek-v2-lite").model
    copy = scaled_copy(design, 2, DEFAULT_SIZE)
    mla = copy.spec.attention.mla
    assert copy.spec.attention.variant == "MLA" and copy.spec.attention.n_heads == 16 and copy.spec.block.moe is None
    # target q/k width 256 / 16 heads = 16 = 192 x 1/12: rope 64/12 -> 5 -> at least 8, nope 16 - 8, value 128/12 -> 11
    assert (mla.qk_nope_head_dim, mla.qk_rope_head_dim, mla.v_head_dim) == (8, 8, 11)
    assert mla.kv_lora_rank == round(512 / 12)
    assert any("dense MLP" in change for change in copy.changes)


def test_mla_with_many_heads_stops_at_the_floors():
    copy = scaled_copy(load_source("deepseek-v3").model, 2, DEFAULT_SIZE).spec
    mla = copy.attention.mla
    # 128 heads: 256 / 128 = 2 values a head, below every floor: rope 8, nope 8, value 8, latent 32, q latent 1536/24
    assert (mla.qk_rope_head_dim, mla.qk_nope_head_dim, mla.v_head_dim, mla.kv_lora_rank) == (8, 8, 8, 32)
    assert mla.q_lora_rank == 64 and copy.attention.n_heads == 128


def test_a_short_sliding_window_is_widened_to_the_task_and_the_pattern_cut_to_the_layers():
    design = ModelSpec(
        d_model=64, n_layers=6, n_heads=4, n_kv_heads=2, vocab_size=100, d_ff=128, sliding_window=16,
        layer_pattern=["local", "local", "global"],
    )  # fmt: skip
    copy = scaled_copy(design, 2, DEFAULT_SIZE)
    assert copy.spec.layers.sliding_window == DEFAULT_SIZE.seq_len and copy.spec.layers.pattern == ["local", "local"]
    assert any("sliding window: 16 -> 40" in change for change in copy.changes)


def test_scaling_imports_no_torch():
    code = "import sys, mha_cli.hook, mha_cli.hook.scale; print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "False", result.stderr[-2000:]


@pytest.mark.parametrize(
    ("copy", "control", "passed"),
    [(0.99, 0.20, True), (0.94, 0.20, False), (0.99, 0.96, False), (0.95, 0.9499, True), (0.99, 0.95, False)],
)
def test_the_hook_passes_only_when_the_copy_reaches_the_threshold_and_the_control_does_not(copy, control, passed):
    """The 1-layer control is the floor that must lose: a control at the threshold means a shortcut, and fails."""
    from mha_cli.hook.result import hook_passed

    assert hook_passed(copy, control, 0.95) is passed


def test_rope_scaling_is_dropped_in_the_copy_and_said():
    """gpt-oss-20b (YaRN x32): with the scaling kept its 8-wide copy did not learn induction (24% after 1,500
    steps, control 35%); without it, 97.6% at 650 steps, control 23% (the 32-token task is inside any context), at
    its 150,000 base; at the 10,000 the copy now takes, 98.3% after 425 steps, control 8.8% (`mha verify gpt-oss-20b
    --hook --seq 256`, CPU, seed 0)."""
    design = load_source("gpt-oss-20b").model
    copy = scaled_copy(design, 2, DEFAULT_SIZE)
    assert design.attention.rope is not None and design.attention.rope.scaling is not None
    assert copy.spec.attention.rope is not None and copy.spec.attention.rope.scaling is None
    assert any("RoPE yarn scaling dropped" in change for change in copy.changes)
    # its base, 150,000, is lowered to 10,000 on the 8-wide heads (hook.scale.HOOK_ROPE_BASE)
    assert copy.spec.attention.rope.theta == 10_000 and design.attention.rope.theta == 150_000


def test_a_large_rope_base_is_lowered_only_where_the_copy_narrows_the_heads():
    """Llama-3-8B's copy (heads 128 -> 8 wide) at its 500,000 base reached 11.5% after 1,500 steps, 98.3% at 10,000
    (hook.scale.HOOK_ROPE_BASE): `mha verify llama-3-8b --hook` failed on every Llama 3 and Qwen3 (newuser trial
    241's hf design led here). A base of 10,000 or less, or heads kept whole, keep theirs."""
    llama3 = scaled_copy(get_preset("llama-3-8b"), 2, DEFAULT_SIZE)
    assert llama3.spec.attention.head_dim == 8 and llama3.spec.attention.rope.theta == 10_000
    assert "RoPE base theta 500,000 -> 10,000" in " ".join(llama3.changes)
    llama2 = scaled_copy(get_preset("llama-2-7b"), 2, DEFAULT_SIZE)
    assert llama2.spec.rotary.theta == 10_000 and "RoPE base" not in " ".join(llama2.changes)
    whole = get_preset("llama-3-8b").model_copy(update={"d_model": 64})
    whole = whole.model_copy(update={"attention": whole.attention.model_copy(update={"n_heads": 4, "n_kv_heads": 2,
                                                                                     "head_dim": 16})})  # fmt: skip
    kept = scaled_copy(whole, 2, DEFAULT_SIZE)
    assert kept.spec.attention.head_dim == 16 and kept.spec.attention.rope.theta == 500_000
