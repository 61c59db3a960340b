"""transformers' state dicts under the decoder's names: each family's ``Family.weights`` (its registry module)
applied by ``mha_cli.nn.hf_state_dict.to_mha_state_dict``.

Each family with a layout is built by transformers from its own config class (tiny, random weights, as
benchmarks/family_sweep.py builds it), converted, and must load into ``build_model`` strictly. Its prefill logits
then equal transformers' (within 1e-4) or differ for a reason the layout cannot fix (the decoder's arithmetic); a
family that starts or stops differing fails here until its entry moves.
"""

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from mha_cli.core.families import all_families, family  # noqa: E402
from mha_cli.core.hf_import import import_hf_config  # noqa: E402
from mha_cli.core.schemas import ModelSpec  # noqa: E402
from mha_cli.core.weight_layout import FusedSplit, WeightLayout, part_sizes  # noqa: E402
from mha_cli.nn import build_model  # noqa: E402
from mha_cli.nn.hf_state_dict import deinterleave, load_transformers_state_dict, to_mha_state_dict  # noqa: E402
from tests.benchmark_modules import load_benchmark  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TOLERANCE = 1e-4


def _family_sweep():
    return load_benchmark("family_sweep")


EQUAL = (
    "gpt2", "gpt-sw3", "phi3", "falcon", "starcoder2", "gpt_neo", "minimax_m2", "minimax", "jamba",
    "gpt_neox", "gpt_neox_japanese", "gptj", "codegen", "phi", "persimmon", "gpt_bigcode", "opt", "biogpt",
    "openai-gpt", "ctrl", "bloom", "mpt", "qwen3_next", "qwen3_5_text", "qwen3_5_moe_text", "bamba", "falcon_h1",
    "granitemoehybrid", "mamba", "mamba2", "falcon_mamba",
    "lfm2",
    "gpt_oss", "ernie4_5_moe", "flint", "glm", "glm4", "kolibri1", "vaultgemma", "hy_v3",
    "hyperclovax",
    "phimoe",
    "apertus", "granitemoe", "granitemoe_swa",
    # BERT's descendants as decoders (tests/test_bert_families.py)
    "bert", "bert-generation", "roberta", "camembert", "xlm-roberta", "data2vec-text", "ernie", "electra",
    "megatron-bert", "roberta-prelayernorm", "xlm-roberta-xl", "big_bird", "roformer", "rembert", "modernbert-decoder",
)  # fmt: skip
"""Families whose prefill logits equal transformers' once converted (GPT-2, GPT-SW3, StarCoder2 and GPT-Neo with
their tanh GELU, GPT-Neo with its unscaled attention scores: ``ModelSpec.activation`` and ``attn_scale``;
MiniMax-M2: its correction bias moved onto the router; MiniMax: its lightning decay buffers dropped; Jamba: its
mixer, MLP and norms renamed; the classic GPT-style families of ``tests/test_classic_families.py``; the hybrids
Qwen3-Next, Qwen3.5, Bamba and Falcon-H1: their mixers renamed to where ours sit)."""
DIFFERS = {
    "llama4_text": 0.54,  # the omissions the decoder lists: chunked attention, NoPE layers, q/k L2 norm, MoE
    "xglm": 0.38,  # embeddings scaled by sqrt(d_model), sinusoidal positions where the decoder has RoPE (listed)
    "hunyuan_v1_dense": 0.028,  # q/k norms applied after RoPE (the decoder: before; listed)
    "hunyuan_v1_moe": 0.044,  # as HunYuan dense
}
"""Families that load but differ, with the max prefill difference seen (transformers 5.24, CPU) and its cause."""
PARTIAL: set[str] = set()
"""Families whose layout maps every weight the decoder has, while some of transformers' stay unexpected."""


def _layout(model_type: str) -> WeightLayout:
    found = family(model_type)
    assert found is not None and found.weights is not None, model_type
    return found.weights


def _converted(model_type: str, layout: WeightLayout):
    """(transformers' model, our decoder, the converted state dict) for the family's tiny config."""
    built = _family_sweep().build_tiny(model_type)
    if isinstance(built, Exception):
        raise built
    config, reference = built
    spec = import_hf_config(config.to_dict(), name=model_type).model
    ours = build_model(spec, dtype=torch.float32).eval()
    return reference, ours, to_mha_state_dict(reference.state_dict(), layout, spec)


def _prefill_error(reference, ours) -> float:
    ids = torch.randint(0, 256, (2, 12), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        return (ours(ids) - reference(input_ids=ids).logits).abs().max().item()


def test_every_layout_is_pinned():
    """Every family module with a weight layout has a model type pinned here (Llama 4's multimodal wrapper shares
    its text model's layout under another prefix: its text type is the one pinned)."""
    with_layout = {f.name for f in all_families() if f.weights is not None}
    assert with_layout == {family(model_type).name for model_type in set(EQUAL) | set(DIFFERS) | PARTIAL}


@pytest.mark.parametrize("model_type", EQUAL)
def test_a_converted_family_loads_strictly_and_gives_transformers_logits(model_type):
    reference, ours, state_dict = _converted(model_type, _layout(model_type))
    ours.load_state_dict(state_dict, strict=True)
    assert _prefill_error(reference, ours) < TOLERANCE
    again = build_model(ours.spec, dtype=torch.float32).eval()  # the same through the family's own loader
    load_transformers_state_dict(again, reference.state_dict())
    assert _prefill_error(reference, again) < TOLERANCE


@pytest.mark.parametrize("model_type", sorted(DIFFERS))
def test_a_converted_family_loads_strictly_but_differs_by_its_arithmetic(model_type):
    reference, ours, state_dict = _converted(model_type, _layout(model_type))
    ours.load_state_dict(state_dict, strict=True)
    assert ours.omitted  # the sweep classes it "differs, listed"
    assert _prefill_error(reference, ours) > TOLERANCE


def test_llama4_routed_and_shared_experts_compute_transformers_experts():
    """Llama 4 differs by what the decoder omits, not by its expert layout: each converted expert is transformers'."""
    reference, ours, state_dict = _converted("llama4_text", _layout("llama4_text"))
    ours.load_state_dict(state_dict, strict=True)
    theirs, mine = reference.model.layers[0].feed_forward, ours.model.layers[0].mlp
    x = torch.randn(5, ours.spec.d_model, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        for e in range(ours.spec.block.moe.n_experts):
            gate, up = (x @ theirs.experts.gate_up_proj[e]).chunk(2, dim=-1)  # (5, f) each
            expected = (torch.nn.functional.silu(gate) * up) @ theirs.experts.down_proj[e]  # (5, d)
            got = mine.experts(x, torch.ones(5, 1), torch.full((5, 1), e))  # (5, d)
            torch.testing.assert_close(got, expected)
        assert torch.equal(mine.gate.weight, theirs.router.weight)
        torch.testing.assert_close(mine.shared_experts(x), theirs.shared_expert(x))


def test_gpt_oss_maps_every_weight_and_its_interleaved_experts_compute_transformers_gate_and_up():
    """Every gpt-oss weight maps (its sinks and router bias too), and its interleaved gate/up experts compute
    transformers' gate and up."""
    reference, ours, state_dict = _converted("gpt_oss", _layout("gpt_oss"))
    ours.load_state_dict(state_dict, strict=True)
    theirs, mine = reference.model.layers[0].mlp.experts, ours.model.layers[0].mlp.experts
    x = torch.randn(3, ours.spec.d_model, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        gate_up = x @ theirs.gate_up_proj[1] + theirs.gate_up_proj_bias[1]  # (3, 2f), gate and up alternating
        ours_gate, ours_up = (x @ mine.gate_up_proj[1].T + mine.gate_up_proj_bias[1]).chunk(2, dim=-1)
        torch.testing.assert_close(ours_gate, gate_up[:, ::2])
        torch.testing.assert_close(ours_up, gate_up[:, 1::2])
        hidden = torch.randn(3, mine.d_ff, generator=torch.Generator().manual_seed(1))
        torch.testing.assert_close(hidden @ mine.down_proj[1].T, hidden @ theirs.down_proj[1])


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


@pytest.mark.parametrize(("model_type", "activation"), [("llama", "gelu"), ("llama", "relu"), ("arcee", "silu")])
def test_a_family_with_another_activation_gives_transformers_logits(model_type, activation):
    """A Llama with gelu is a GeGLU (gate, up, down), an Arcee with silu keeps its ungated MLP: the decoder built from
    the imported spec loads transformers' weights and gives its logits; built with silu in the gelu Llama's place
    (the control), it does not."""
    sweep = _family_sweep()
    config = sweep._tiny_config(model_type)
    config.hidden_act = activation
    reference = sweep.tiny_model(config)
    spec = import_hf_config(config.to_dict(), name=model_type).model
    ours = build_model(spec, dtype=torch.float32).eval()
    load_transformers_state_dict(ours, reference.state_dict())
    assert _prefill_error(reference, ours) < TOLERANCE
    if activation == "gelu":
        silu = spec.model_copy(update={"block": spec.block.model_copy(update={"activation": None})})
        control = build_model(silu, dtype=torch.float32)
        load_transformers_state_dict(control.eval(), reference.state_dict())
        assert _prefill_error(reference, control) > 1e-3
