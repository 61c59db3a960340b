"""``mha_cli.nn.hf_state_dict.to_mha_state_dict``: a ``mha_cli.core.weight_layout.WeightLayout`` applied to a state dict."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from mha_cli.core.schemas import ModelSpec  # noqa: E402
from mha_cli.core.weight_layout import FusedSplit, WeightLayout, part_sizes  # noqa: E402
from mha_cli.nn.hf_state_dict import deinterleave, to_mha_state_dict  # noqa: E402

# The converter itself ----------------------------------------------------------------------------

SPEC = ModelSpec(d_model=8, n_layers=1, n_heads=4, n_kv_heads=2, head_dim=2, vocab_size=16, d_ff=6)
"""q 4 x 2 = 8 rows, k and v 2 x 2 = 4 rows each, gate and up 6 rows each."""
QKV = FusedSplit(r"(.*)\.qkv\.(weight|bias)", (r"\1.q.\2", r"\1.k.\2", r"\1.v.\2"), "qkv")


def test_part_sizes_come_from_the_spec():
    assert part_sizes("qkv", SPEC) == (8, 4, 4)
    assert part_sizes("qkv_per_kv_group", SPEC) == (8, 4, 4)
    assert part_sizes("gate_up", SPEC) == (6, 6)


def test_a_fused_split_cuts_the_parts_in_storage_order():
    weight = torch.arange(16 * 3.0).reshape(16, 3)  # (q + k + v rows, in)
    bias = torch.arange(16.0)
    out = to_mha_state_dict({"l.qkv.weight": weight, "l.qkv.bias": bias}, WeightLayout(fused=(QKV,)), SPEC)
    assert list(out) == ["l.q.weight", "l.k.weight", "l.v.weight", "l.q.bias", "l.k.bias", "l.v.bias"]
    torch.testing.assert_close(out["l.k.weight"], weight[8:12])
    torch.testing.assert_close(out["l.v.bias"], bias[12:])


def test_a_fused_split_whose_sizes_do_not_add_up_names_the_weight():
    with pytest.raises(ValueError, match=r"layers\.3\.qkv\.weight: 15 entries along dim 0.*8 \+ 4 \+ 4"):
        to_mha_state_dict({"layers.3.qkv.weight": torch.zeros(15, 8)}, WeightLayout(fused=(QKV,)), SPEC)


def test_a_per_kv_group_split_takes_each_groups_query_heads_then_key_then_value():
    # 2 groups of (2 query heads, 1 key head, 1 value head), 2 rows a head: rows tagged group * 10 + head slot
    rows = [g * 10 + slot for g in range(2) for slot in range(4) for _ in range(2)]
    fused = torch.tensor(rows, dtype=torch.float32)[:, None].expand(16, 3)  # (16, in)
    split = QKV._replace(sizes="qkv_per_kv_group")
    out = to_mha_state_dict({"l.qkv.weight": fused}, WeightLayout(fused=(split,)), SPEC)
    assert out["l.q.weight"][:, 0].tolist() == [0, 0, 1, 1, 10, 10, 11, 11]
    assert out["l.k.weight"][:, 0].tolist() == [2, 2, 12, 12]
    assert out["l.v.weight"][:, 0].tolist() == [3, 3, 13, 13]


def test_a_transposed_weight_round_trips():
    conv1d = torch.randn(8, 24)  # (in, out), GPT-2's Conv1D
    layout = WeightLayout(transposed=(r"\.c_fc\.weight$",), renames=((r"\.c_fc\.", ".up_proj."),))
    out = to_mha_state_dict({"h.c_fc.weight": conv1d, "h.c_fc.bias": torch.zeros(24)}, layout, SPEC)
    assert out["h.up_proj.weight"].shape == (24, 8)  # (out, in), nn.Linear's
    assert out["h.up_proj.bias"].shape == (24,)  # a bias is not transposed
    torch.testing.assert_close(out["h.up_proj.weight"].T, conv1d)
    back = to_mha_state_dict(out, WeightLayout(transposed=(r"\.up_proj\.weight$",)), SPEC)
    assert torch.equal(back["h.up_proj.weight"], conv1d)


def test_deinterleaving_puts_gate_entries_first_and_keeps_the_shape():
    alternating = torch.tensor([[0.0, 100, 1, 101, 2, 102]])  # (1, 2f): gate 0, up 0, gate 1, ...
    assert deinterleave(alternating, -1).tolist() == [[0, 1, 2, 100, 101, 102]]
    experts = torch.randn(2, 3, 6)  # (E, d, 2f)
    regrouped = deinterleave(experts, -1)
    torch.testing.assert_close(regrouped[..., :3], experts[..., ::2])
    torch.testing.assert_close(regrouped[..., 3:], experts[..., 1::2])


def test_dropped_buffers_go_and_renames_apply_in_order():
    layout = WeightLayout(
        renames=((r"^transformer\.h\.(\d+)\.", r"model.layers.\1."), (r"\.attn\.", ".self_attn.")),
        dropped=(r"\.attn\.(bias|masked_bias)$",),
    )
    state_dict = {
        "transformer.h.0.attn.bias": torch.ones(1, 1, 4, 4),  # a causal mask
        "transformer.h.0.attn.masked_bias": torch.tensor(-1e4),
        "transformer.h.0.attn.q.bias": torch.zeros(8),  # a weight: kept
    }
    assert list(to_mha_state_dict(state_dict, layout, SPEC)) == ["model.layers.0.self_attn.q.bias"]


def test_two_weights_landing_on_one_name_are_refused():
    layout = WeightLayout(renames=((r"\.(a|b)\.", ".c."),))
    with pytest.raises(ValueError, match=r"x\.b\.weight: lands on x\.c\.weight"):
        to_mha_state_dict({"x.a.weight": torch.zeros(1), "x.b.weight": torch.zeros(1)}, layout, SPEC)


def test_the_converter_leaves_its_input_unchanged():
    weight = torch.randn(16, 3)
    state_dict = {"l.qkv.weight": weight}
    to_mha_state_dict(state_dict, WeightLayout(fused=(QKV,)), SPEC)
    assert list(state_dict) == ["l.qkv.weight"] and state_dict["l.qkv.weight"] is weight
