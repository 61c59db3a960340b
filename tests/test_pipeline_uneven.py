"""Pipeline stages that pp does not divide (``core.pipeline.stage_sizes``): each engine's split, read in its
source, against hand counts on DeepSeek-V3 (61 layers, the first 3 dense) and a 5-layer dense model; the plan's
memory is the stage whose pool holds the fewest tokens."""

from __future__ import annotations

import pytest

from mha_cli.core.kv import kv_footprint
from mha_cli.core.pipeline import stage_layouts, stage_model, stage_params, stage_sizes
from mha_cli.core.presets import get_preset
from mha_cli.core.schemas import ModelSpec

# DeepSeek-V3 (config.json): hidden 7168, 128 heads, q_lora_rank 1536, kv_lora_rank 512, qk_nope 128, qk_rope 64,
# v_head 128, dense intermediate 18432, 256 routed experts of 2048 and 1 shared, vocab 129280, untied.
MLA = (
    7168 * 1536 + 1536  # q_a_proj, q_a_layernorm
    + 1536 * 128 * (128 + 64)  # q_b_proj
    + 7168 * (512 + 64) + 512  # kv_a_proj_with_mqa, kv_a_layernorm
    + 512 * 128 * (128 + 128)  # kv_b_proj
    + 128 * 128 * 7168  # o_proj
)  # fmt: skip
NORMS = 2 * 7168
DENSE_LAYER = MLA + NORMS + 3 * 7168 * 18432
MOE_LAYER = MLA + NORMS + (256 + 1) * 3 * 7168 * 2048 + 256 * 7168  # routed and shared experts, the router
EMBEDDING = 129280 * 7168
HEAD = 129280 * 7168 + 7168  # the LM head and the final norm

# Each engine's split of 61 layers, by hand from its rule (core.pipeline.stage_sizes cites the sources).
SPLITS = {
    # vLLM: the extras to the stages before the last, the second-to-last first
    ("vllm", 2): [31, 30],
    ("vllm", 4): [15, 15, 16, 15],
    ("vllm", 8): [7, 7, 8, 8, 8, 8, 8, 7],
    # SGLang: to the last 61 % pp stages
    ("sglang", 2): [30, 31],
    ("sglang", 4): [15, 15, 15, 16],
    ("sglang", 8): [7, 7, 7, 8, 8, 8, 8, 8],
    # TensorRT-LLM (torch.tensor_split): to the first 61 % pp stages
    ("trtllm", 2): [31, 30],
    ("trtllm", 4): [16, 15, 15, 15],
    ("trtllm", 8): [8, 8, 8, 8, 8, 7, 7, 7],
}


def test_the_hand_counts_add_up_to_deepseek_v3():
    """The per-layer figures the stage tests use: 3 dense and 58 MoE layers, embedding and head, 671.0 B."""
    assert 3 * DENSE_LAYER + 58 * MOE_LAYER + EMBEDDING + HEAD == 671_026_404_352


@pytest.mark.parametrize(("engine", "pp"), list(SPLITS))
def test_deepseek_v3_stages_hold_the_engines_layers_and_their_weights(engine, pp):
    model = get_preset("deepseek-v3")
    layouts = stage_layouts(model, pp, engine)
    assert [layout.n_layers for layout in layouts] == SPLITS[engine, pp]
    assert [layout.first_layer for layout in layouts] == [sum(SPLITS[engine, pp][:s]) for s in range(pp)]
    for layout in layouts:
        layers = stage_model(model, layout)
        dense = 3 if layout.stage == 0 else 0  # the first 3 layers are dense, all on the first stage
        assert sum(not layers.is_moe_layer(i) for i in range(layers.n_layers)) == dense
        moe = layout.n_layers - dense
        held = dense * DENSE_LAYER + moe * MOE_LAYER + EMBEDDING * layout.embedding + HEAD * layout.head
        assert stage_params(model, layout) == held
        # the absorbed MLA latent, 576 values of 2 B a token on each of its layers
        assert kv_footprint(layers, seq_len=1, kv_dtype="bf16").total_bytes == layout.n_layers * 576 * 2


def test_the_first_three_dense_layers_spread_over_stages_shorter_than_them():
    """vLLM at pp 32: 1 layer each and the 29 extra to stages 30 down to 2 (61 = 32 + 29), so 1, 1, 2 x 29, 1; the
    dense layers 0, 1 and 2 are stage 0's, stage 1's and the first of stage 2's two."""
    model = get_preset("deepseek-v3")
    layouts = stage_layouts(model, 32, "vllm")
    assert [layout.n_layers for layout in layouts] == [1, 1] + [2] * 29 + [1]
    dense = []
    for layout in layouts:
        layers = stage_model(model, layout)
        dense.append(sum(not layers.is_moe_layer(i) for i in range(layers.n_layers)))
    assert dense == [1, 1, 1] + [0] * 29


@pytest.mark.parametrize(("engine", "sizes"), [("vllm", [3, 2]), ("sglang", [2, 3]), ("trtllm", [3, 2])])
def test_a_five_layer_dense_model_at_pp_2(engine, sizes):
    model = ModelSpec(d_model=64, n_layers=5, n_heads=4, n_kv_heads=2, vocab_size=97, d_ff=128)
    layer = 64 * 64 + 2 * 64 * 32 + 64 * 64 + 3 * 64 * 128 + 2 * 64  # q, k and v, o, SwiGLU, two norms
    embedding, head = 97 * 64, 97 * 64 + 64
    layouts = stage_layouts(model, 2, engine)
    assert [layout.n_layers for layout in layouts] == sizes
    held = [stage_params(model, layout) for layout in layouts]
    assert held == [sizes[0] * layer + embedding, sizes[1] * layer + head]


def test_even_splits_are_every_engines_and_the_old_layout():
    for engine in ("vllm", "sglang", "trtllm"):
        assert stage_sizes(80, 4, engine) == [20] * 4
        assert stage_sizes(7, 7, engine) == [1] * 7


def test_the_plan_prices_deepseek_v3_at_pp_2_and_admits_what_its_fewest_token_stage_does(cli):
    plan = cli.json("plan", "deepseek-v3", "--target", "16xh200", "--tp", "8", "--pp", "2", "--engine", "vllm")
    stages = plan["stages"]
    assert [(s["first_layer"], s["n_layers"]) for s in stages] == [(0, 31), (31, 30)]
    assert plan["memory"]["engine"]["kv_tokens"] == min(s["kv_tokens_per_device"] for s in stages)
    assert plan["memory"]["engine"]["admitted_per_replica"] == min(s["admitted_per_replica"] for s in stages)
    sglang = cli.json("plan", "deepseek-v3", "--target", "16xh200", "--tp", "8", "--pp", "2", "--engine", "sglang")
    assert [(s["first_layer"], s["n_layers"]) for s in sglang["stages"]] == [(0, 30), (30, 31)]


def test_the_search_tries_pipeline_stages_of_61_layers():
    from mha_cli.core.cost.search import layouts

    found = layouts(get_preset("deepseek-v3"), 16, 8)
    assert {(8, 2), (4, 4), (2, 8), (1, 16)} <= set(found)  # none of 2, 4, 8, 16 divides 61
