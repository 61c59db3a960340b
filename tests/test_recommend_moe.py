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
    assert (m.experts, m.top_k) == (spec.block.moe.n_experts, spec.block.moe.n_active_experts) and m.top_k == 8
    # MHA007: a count expert parallelism divides, experts fine-grained (within 1.5x of 3 x d_model / k: 768 at 2048)
    assert m.experts in (32, 64, 128, 160, 256, 384, 512) and m.experts % 32 == 0
    assert 1 / 1.5 <= m.d_ff_expert / (3 * m.d_model / 8) <= 1.5
    # MHA008: 10x sparse, so query heads 2 x d_model wide (Qwen3-30B-A3B: 32 x 128 at 2048)
    assert m.n_heads * m.head_dim == 2 * m.d_model
    # By hand: per layer attention (q, k, v, o + QK-norm), 2 norms, E gated experts and a d x E router.
    d, layers, e, f = m.d_model, m.n_layers, m.experts, m.d_ff_expert
    attention = d * m.n_heads * m.head_dim * 2 + 2 * d * m.n_kv_heads * m.head_dim + 2 * m.head_dim
    per_layer = attention + 2 * d + e * 3 * d * f + d * e
    embeddings = 2 * m.vocab_size * d  # untied
    assert m.total_params == layers * per_layer + embeddings + d
    skipped = layers * (e - 8) * 3 * d * f
    assert m.active_params == m.total_params - skipped - m.vocab_size * d  # the input embedding is a lookup


def test_30b_a3b_lands_near_qwen3_30b_a3b_and_cites_moe_rules():
    """Qwen3-30B-A3B is 2048 x 48 with 32 query / 4 KV heads of 128 and 128 experts of 768 (its config.json)."""
    result = rec(params="30B", active_params="3B")
    m = result.model
    assert m.d_model == 2048 and abs(m.n_layers - 48) <= 0.35 * 48 and (m.n_heads, m.head_dim) == (32, 128)
    assert m.experts == 128 and abs(m.d_ff_expert - 768) <= 0.25 * 768
    assert {"MHA007", "MHA008"} <= set(result.rules_fired) and "MHA003" not in result.rules_fired


def test_a_denser_moe_keeps_the_dense_shape():
    """Below 8x sparsity (Mixtral 3.7x) MHA008 does not apply: heads d_model / head_dim wide, dense depth."""
    result = rec(params="47B", active_params="13B")
    assert result.model.n_heads * result.model.head_dim == result.model.d_model
    assert "MHA008" not in result.rules_fired


def test_shared_experts_and_dense_layers_are_counted_by_hand():
    result = rec(params="100B", active_params="10B", shared_experts=1, dense_layers=2)
    m, spec = result.model, result.config.model
    assert (
        (m.shared_experts, m.dense_layers) == (1, 2) == (spec.block.moe.n_shared_experts, spec.block.moe.n_dense_layers)
    )
    assert abs(m.total_params - 100e9) <= 0.05 * 100e9 and abs(m.active_params - 10e9) <= 0.05 * 10e9
    d, layers, e, f = m.d_model, m.n_layers, m.experts, m.d_ff_expert
    attention = d * m.n_heads * m.head_dim * 2 + 2 * d * m.n_kv_heads * m.head_dim + 2 * m.head_dim
    moe_layer = attention + 2 * d + (e + 1) * 3 * d * f + d * e  # routed + 1 shared expert, router
    dense_layer = attention + 2 * d + 3 * d * m.d_ff  # MHA003's SwiGLU
    assert m.total_params == 2 * dense_layer + (layers - 2) * moe_layer + 2 * m.vocab_size * d + d
    skipped = (layers - 2) * (e - 8) * 3 * d * f
    assert m.active_params == m.total_params - skipped - m.vocab_size * d
    trace = next(entry.message for entry in result.trace if entry.id == "MHA007")
    assert "+ 1 shared" in trace and "first 2 layers dense" in trace


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


def test_the_moe_designs_qk_norm_is_said_and_counted_in_attention():
    """Trial 345 #3: an MoE design writes qk_norm (Qwen3-MoE's) with no trace line: MHA007 now says it, and its
    weights are counted in attention, 2 x head_dim a layer over q/k/v/o by hand (256 at head_dim 128); MLA
    designs have none, nor its line (the control)."""
    result = rec(params="30B", active_params="3B")
    spec = result.config.model
    assert spec.attention.qk_norm is True
    line = next(entry for entry in result.trace if entry.id == "MHA007")
    assert line.message.endswith("; QK-norm on every query and key head (Qwen3-MoE)") and line.values["qk_norm"] is True
    from mha_cli.core.params import count_params

    a = spec.attention
    projections = spec.d_model * a.head_dim * (2 * a.n_heads + 2 * a.n_kv_heads)
    assert count_params(spec).attention_per_layer == projections + 2 * a.head_dim
    mla = rec(params="200B", active_params="20B", variant="MLA")
    assert mla.config.model.attention.qk_norm is False
    assert "QK-norm" not in next(entry.message for entry in mla.trace if entry.id == "MHA007")


def test_moe_with_mla():
    result = rec(params="200B", active_params="20B", variant="MLA")
    assert result.model.variant == "MLA" and result.model.experts is not None
    assert result.model.n_kv_heads is None and result.model.kv_lora_rank == 512


def test_dense_designs_have_null_moe_keys(cli):
    data = cli.json("recommend", "--params", "7B")
    assert (data["model"]["experts"], data["model"]["top_k"]) == (None, None)
    assert data["model"]["active_params"] < data["model"]["total_params"]  # the input embedding is not multiplied


def test_a_total_that_needs_more_experts_than_the_most_is_designed_at_the_most():
    """Review 312 #2: 1T at 3B active fills with 4,424 experts; the cap at 4,096 first dropped that count and
    refused the budgets, which 4,096 experts land (as --experts 4096 does)."""
    model = rec(params="1T", active_params="3B").model
    assert model.experts == 4096


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        (dict(params="3B", active_params="30B"), "must be below --params"),
        (dict(params="30B", active_params="3B", experts=16, top_k=4), "needs more than 16 experts"),
        (dict(params="30B", active_params="3B", experts=8, top_k=8), "--top-k 8 must be below --experts 8"),
        # trial 311 #2: the default filled 1T at 1B active with 14,288 experts, a count --experts refuses; at
        # --experts' own most, raising it is no way out
        (dict(params="1T", active_params="1B"), "needs more than the 4,096 experts a design takes at top-8"),
        (dict(params="1T", active_params="100M"), r"moe-budget\); raise --active-params or lower --params"),
        (dict(params="1T", active_params="1B", experts=4096), r"moe-budget\); lower --top-k, raise --active-params"),
        (dict(params="7B", top_k=2), "add --active-params"),
        (dict(params="7B", shared_experts=1), "add --active-params"),
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
    assert config.model.block.moe is not None and config.model.block.moe.n_experts == data["model"]["experts"]
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


def test_a_sparse_moe_under_tp_prices_mla_with_its_own_heads():
    """MHA008 doubles the query heads of GQA candidates, not MLA's: under --tp 8 the MLA row (12 heads at 1536)
    was checked with the doubled 24 and then failed to split (exit 2 with an internal message)."""
    result = rec(params="2B", active_params="250M", tp=8)
    assert result.model.n_heads % 8 == 0 and "MHA008" in result.rules_fired


@pytest.mark.parametrize(("total", "active"), [("2B", "1.333B"), ("2B", "500M")])
def test_experts_stay_fine_grained_at_low_sparsity(total, active):
    """A count expert parallelism divides is not taken when it leaves the experts vestigial (64 wide at 2048)."""
    m = rec(params=total, active_params=active).model
    assert 1 / 2 <= m.d_ff_expert / (3 * m.d_model / m.top_k) <= 2


def test_mha008_under_a_fixed_width_does_not_claim_a_depth():
    result = rec(params="50B", active_params="6.25B", d_model=4096)
    message = next(entry.message for entry in result.trace if entry.id == "MHA008")
    assert "depth" not in message and "64 query heads" in message


def test_the_memory_line_names_the_layout_as_kv_does(cli):
    """8 x H20 holding a 235B MoE: the 8 devices are one server's DP-attention ranks sharing the experts, not 8
    replicas each holding 219 GiB of weights (``mha kv``'s memory plan says the same of the same design)."""
    args = ["--params", "235B", "--active-params", "22B", "--experts", "128", "--top-k", "8", "--seq", "128k",
            "--target", "8xh20", "--kv-dtype", "fp8", "--weight-dtype", "fp8"]  # fmt: skip
    data = cli.json("recommend", *args)["memory"]
    assert (data["tp"], data["replicas"], data["expert_ranks"]) == (1, 8, 8)
    shown = " ".join(cli.run("recommend", *args).stdout.split())
    assert "one server of 8 GPUs, 8 DP-attention ranks of tp 1; each device holds all 128 experts at 1/8" in shown
    assert "tp 1 x 8 replicas" not in shown


def test_a_top_k_past_any_design_is_refused():
    """--top-k 500 designed 5,312 experts of 128 on a 960-wide model, silently (note62's lead)."""
    with pytest.raises(BadInputError, match="--top-k 500: at most 32 routed experts a token"):
        recommend(RecommendRequest(params=100_000_000_000, active_params=10_000_000_000, top_k=500, seq_len=8192))
    design = recommend(RecommendRequest(params=100_000_000_000, active_params=10_000_000_000, top_k=32, seq_len=8192))
    assert (design.model.top_k, design.model.experts) == (32, 512)
