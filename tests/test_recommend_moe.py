"""MoE budgets: --active-params (with --params the total), --experts, --top-k; counts checked by hand."""

import pytest
import yaml

from mha_cli.core.config_io import parse_config
from mha_cli.core.errors import EXIT_BAD_INPUT, BadInputError
from mha_cli.core.recommend import RecommendRequest, recommend


def rec(**kw):
    kw.setdefault("seq_len", "32k")
    return recommend(RecommendRequest.parse(**kw))


def test_30b_a3b_spends_both_budgets_and_counts_by_hand():
    result = rec(params="30B", active_params="3B")
    m, spec = result.model, result.config.model
    assert abs(m.total_params - 30e9) <= 0.05 * 30e9 and abs(m.active_params - 3e9) <= 0.05 * 3e9
    assert (m.experts, m.top_k) == (spec.moe.n_experts, spec.moe.n_active_experts) and m.top_k == 8
    assert m.d_ff_expert == 3 * m.d_model // 8  # k experts together 3 x d_model wide (Qwen3-30B-A3B: 768)
    # By hand: per layer attention (q, k, v, o + QK-norm), 2 norms, E gated experts and a d x E router.
    d, layers, e, f = m.d_model, m.n_layers, m.experts, m.d_ff_expert
    attention = d * m.n_heads * m.head_dim * 2 + 2 * d * m.n_kv_heads * m.head_dim + 2 * m.head_dim
    per_layer = attention + 2 * d + e * 3 * d * f + d * e
    embeddings = 2 * m.vocab_size * d  # untied
    assert m.total_params == layers * per_layer + embeddings + d
    skipped = layers * (e - 8) * 3 * d * f
    assert m.active_params == m.total_params - skipped - m.vocab_size * d  # the input embedding is a lookup


def test_memory_plan_holds_every_expert_and_roofline_reads_the_active_ones():
    result = rec(params="30B", active_params="3B", target="h100", batch=4)
    assert result.weight_bytes == 2 * result.model.total_params
    assert result.memory is not None and result.memory.weight_bytes_per_device == 2 * result.model.total_params
    roof = result.roofline
    assert roof is not None and roof.experts_read_per_layer is not None
    assert 8 <= roof.experts_read_per_layer <= 4 * 8  # 4 tokens pick at most 32 distinct experts
    assert roof.decode_weight_bytes_per_step < result.weight_bytes


def test_experts_and_top_k_can_be_given():
    result = rec(params="47B", active_params="13B", experts=8, top_k=2)  # Mixtral-8x7B's budget
    assert (result.model.experts, result.model.top_k) == (8, 2)
    assert abs(result.model.total_params - 47e9) <= 0.05 * 47e9
    assert abs(result.model.active_params - 13e9) <= 0.05 * 13e9
    assert rec(params="47B", active_params="13B", experts=8).model.top_k == 2  # a quarter of 8 (Mixtral)


def test_width_and_attention_follow_the_active_budget():
    moe = rec(params="120B", active_params="5B")
    dense5, dense120 = rec(params="5B"), rec(params="120B")
    # Sized like a 5B model (within one step of the ladder), not like a dense 120B one.
    assert abs(moe.model.d_model - dense5.model.d_model) <= 512 < dense120.model.d_model - moe.model.d_model
    assert "MHA007" in moe.rules_fired


def test_moe_with_mla():
    result = rec(params="200B", active_params="20B", variant="MLA")
    assert result.model.variant == "MLA" and result.model.experts is not None
    assert result.model.n_kv_heads is None and result.model.kv_lora_rank == 512


def test_dense_designs_have_null_moe_keys(cli):
    data = cli.json("recommend", "--params", "7B")
    assert (data["model"]["experts"], data["model"]["top_k"]) == (None, None)
    assert data["model"]["active_params"] < data["model"]["total_params"]  # the input embedding is not multiplied


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        (dict(params="3B", active_params="30B"), "must be below --params"),
        (dict(params="30B", active_params="3B", experts=16, top_k=4), "needs more than 16 experts"),
        (dict(params="30B", active_params="3B", experts=8, top_k=8), "--top-k 8 must be below --experts 8"),
        (dict(params="7B", top_k=2), "add --active-params"),
    ],
)
def test_inconsistent_budgets_are_refused_in_one_line(kw, match):
    with pytest.raises(BadInputError, match=match) as refused:
        rec(**kw)
    assert "\n" not in str(refused.value)


def test_out_config_carries_the_moe_block_and_kv_reads_it(cli, tmp_path):
    out = tmp_path / "moe.yaml"
    result = cli.run("recommend", "--params", "30B", "--active-params", "3B", "--out", str(out))
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert "--active-params 3B" in text.splitlines()[0]
    config = parse_config(yaml.safe_load(text), str(out))
    data = cli.json("recommend", "--params", "30B", "--active-params", "3B")
    assert config.model.moe is not None and config.model.moe.n_experts == data["model"]["experts"]
    kv = cli.json("kv", str(out))
    assert kv["bytes_per_token"] == data["kv"]["bytes_per_token"]
    assert cli.run("recommend", "--params", "3B", "--active-params", "30B").exit_code == EXIT_BAD_INPUT


def test_a_design_whose_width_has_no_mha_depth_still_explains_itself(cli):
    """1B total / 250M active with 256 experts: no depth spends the budget with MHA at the chosen width, so there is
    no MHA row to price the cache against (this crashed with StopIteration, exit 70)."""
    data = cli.json("recommend", "--params", "1B", "--active-params", "250M", "--experts", "256")
    assert not any(a["variant"] == "MHA" for a in data["alternatives"])
    assert data["variant_reason"].startswith(data["model"]["variant"]) and "per 8,192-token sequence" in data[
        "variant_reason"]  # fmt: skip
