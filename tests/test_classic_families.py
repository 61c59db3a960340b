"""The classic GPT-style families (GPT-NeoX, GPT-J, CodeGen, Phi, Persimmon, GPT-BigCode, OPT, BioGPT, GPT-1, CTRL,
BLOOM, MPT, GPT-NeoX-Japanese) and the decoder features they brought, against transformers directly: ALiBi slopes
equal to BLOOM's and MPT's for any head count, CTRL's sinusoidal table, CodeGen's sharded q/v/k split, the parameter
count of each family equal to transformers' model's, a padded batch through ALiBi and offset positions, OPT-350m's
post-LN block, and the new spec fields left out of a dump at their defaults. The sweep
(``tests/test_family_sweep.py``) compares the logits of every family at its tiny scale; these tests pin the parts.
"""

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from mha_cli.core.hf_import import import_hf_config  # noqa: E402
from mha_cli.core.params import count_params  # noqa: E402
from mha_cli.core.schemas import ModelSpec  # noqa: E402
from mha_cli.nn import build_model  # noqa: E402
from mha_cli.nn.alibi import alibi_attention, alibi_slopes  # noqa: E402
from mha_cli.nn.hf_state_dict import load_transformers_state_dict  # noqa: E402
from mha_cli.nn.sinusoidal import sinusoidal_positions  # noqa: E402
from tests.benchmark_modules import load_benchmark  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CLASSIC = (
    "gpt_neox", "gpt_neox_japanese", "gptj", "codegen", "phi", "persimmon", "gpt_bigcode", "opt", "biogpt",
    "openai-gpt", "ctrl", "bloom", "mpt",
)  # fmt: skip


def _family_sweep():
    return load_benchmark("family_sweep")


def _loaded(config):
    """(transformers' model for ``config``, our decoder with its weights loaded strictly)."""
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    reference = AutoModelForCausalLM.from_config(config).eval()
    spec = import_hf_config(config.to_dict(), name=config.model_type).model
    ours = build_model(spec, dtype=torch.float32).eval()
    load_transformers_state_dict(ours, reference.state_dict())
    return reference, ours


@pytest.mark.parametrize("n_heads", [1, 2, 3, 4, 5, 6, 8, 12, 16, 20, 24, 40, 112])
def test_alibi_slopes_are_blooms_and_mpts_for_any_head_count(n_heads):
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor
    from transformers.models.mpt.modeling_mpt import build_mpt_alibi_tensor

    ones = torch.ones(1, 2)  # key positions 0 and 1: the bias at position 1 is the slope
    bloom = build_alibi_tensor(ones, n_heads, torch.float32).reshape(n_heads, 2)[:, 1]  # (n_h,)
    mpt = build_mpt_alibi_tensor(n_heads, 2).reshape(n_heads, 2)  # positions -1, 0
    ours = alibi_slopes(n_heads)
    torch.testing.assert_close(ours, bloom, rtol=0, atol=0)
    torch.testing.assert_close(ours, mpt[:, 1] - mpt[:, 0], rtol=1e-6, atol=0)


def test_alibi_attention_with_grouped_kv_heads_is_the_explicit_biased_softmax():
    g = torch.Generator().manual_seed(0)
    q = torch.randn(2, 6, 5, 8, generator=g)  # (b, n_h, s, h_d)
    k, v = torch.randn(2, 2, 7, 8, generator=g), torch.randn(2, 2, 7, 8, generator=g)  # (b, n_kv, t, h_d)
    slopes = alibi_slopes(6)
    got = alibi_attention(q, k, v, slopes)  # the last 5 of 7 positions
    k6, v6 = k.repeat_interleave(3, dim=1), v.repeat_interleave(3, dim=1)  # (b, n_h, t, h_d)
    scores = q @ k6.transpose(-2, -1) / 8**0.5 + slopes[:, None, None] * torch.arange(7.0)  # (b, n_h, s, t)
    # keys biased from position 0 (BLOOM's convention): the same softmax as from the last key
    causal = torch.arange(7)[None, :] <= torch.arange(2, 7)[:, None]  # (s, t)
    expected = scores.masked_fill(~causal, float("-inf")).softmax(-1) @ v6
    torch.testing.assert_close(got, expected)


def test_sinusoidal_positions_are_ctrls_table():
    from transformers.models.ctrl.modeling_ctrl import positional_encoding

    table = positional_encoding(40, 64, torch.float32)  # (n, d)
    torch.testing.assert_close(sinusoidal_positions(torch.arange(40), 64), table)


def test_codegen_shards_split_as_its_attention_reads_them():
    """CodeGen's forward views qkv_proj's output as 4 shards of (q, v, k) quarters: the split gives those rows."""
    from mha_cli.core.families import family
    from mha_cli.nn.hf_state_dict import to_mha_state_dict

    spec = ModelSpec(d_model=48, n_layers=1, n_heads=4, vocab_size=8, d_ff=8, family="codegen", mlp="plain")
    fused = torch.arange(3 * 48 * 2.0).reshape(3 * 48, 2)  # (3d, in): row r holds 2r, 2r + 1
    out = to_mha_state_dict({"transformer.h.0.attn.qkv_proj.weight": fused}, family("codegen").weights, spec)
    rows = fused.reshape(4, 3, 12, 2)  # shard, (q, v, k), quarter
    for index, part in enumerate(("q", "v", "k")):
        torch.testing.assert_close(out[f"model.layers.0.self_attn.{part}_proj.weight"], rows[:, index].reshape(48, 2))


@pytest.mark.parametrize("model_type", CLASSIC)
def test_the_parameter_count_is_transformers_models(model_type):
    built = _family_sweep().build_tiny(model_type)
    assert not isinstance(built, Exception), built
    config, reference = built
    spec = import_hf_config(config.to_dict(), name=model_type).model
    theirs = sum(p.numel() for p in reference.parameters())
    ours = sum(p.numel() for p in build_model(spec, device="meta").parameters())
    assert count_params(spec).total == ours == theirs


def test_a_left_padded_batch_through_bloom_and_opt_gives_transformers_logits():
    """ALiBi and OPT's offset positions, each row at its own positions (the mask's cumulative sum)."""
    from transformers import BloomConfig, OPTConfig

    mask = torch.tensor([[0, 0, 0, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1, 1, 1]])
    ids = torch.randint(3, 100, (2, 8), generator=torch.Generator().manual_seed(2))
    for config in (
        BloomConfig(vocab_size=100, hidden_size=48, n_layer=2, n_head=3),
        OPTConfig(vocab_size=100, hidden_size=48, num_hidden_layers=2, num_attention_heads=4, ffn_dim=96,
                  max_position_embeddings=32, word_embed_proj_dim=48),
    ):  # fmt: skip
        reference, ours = _loaded(config)
        with torch.no_grad():
            expected = reference(input_ids=ids, attention_mask=mask).logits  # (b, s, v)
            got = ours(ids, attention_mask=mask)  # (b, s, v)
        real = mask.bool()
        torch.testing.assert_close(got[real], expected[real], atol=1e-4, rtol=0)


def test_opt_350m_post_ln_blocks_give_transformers_logits():
    from transformers import OPTConfig

    config = OPTConfig(
        vocab_size=100, hidden_size=48, num_hidden_layers=2, num_attention_heads=4, ffn_dim=96,
        max_position_embeddings=32, word_embed_proj_dim=48, do_layer_norm_before=False,
    )  # fmt: skip
    reference, ours = _loaded(config)
    assert ours.spec.block.norm_placement == "post_residual" and not ours.spec.embeddings.final_norm
    ids = torch.randint(0, 100, (2, 9), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        torch.testing.assert_close(ours(ids), reference(input_ids=ids).logits, atol=1e-4, rtol=0)


def test_the_new_fields_are_left_out_of_a_dump_at_their_defaults_and_checked():
    base = {"d_model": 64, "n_layers": 2, "n_heads": 4, "vocab_size": 32, "d_ff": 128}
    dumped = ModelSpec(**base).model_dump()
    for field in (
        "parallel_residual", "alibi", "embedding_norm", "position_offset", "lm_head_bias", "sinusoidal_positions",
        "last_o_bias", "final_norm", "qk_norm_type",
    ):  # fmt: skip
        assert field not in dumped
    assert ModelSpec(**base, alibi=True).rotary is None
    for bad in (
        {"parallel_residual": True, "n_norms_per_layer": 1},
        {"alibi": True, "position_embeddings": 16},
        {"alibi": True, "rope": {"theta": 10000.0}},
        {"sinusoidal_positions": True, "position_embeddings": 16},
        {"position_offset": 2},
        {"qk_norm_type": "layernorm"},
        {"norm_placement": "post_residual", "n_norms_per_layer": 1},
    ):
        with pytest.raises(ValueError):
            ModelSpec(**base, **bad)


@pytest.mark.parametrize(
    "arch",
    [
        {"new_decoder_architecture": True, "num_kv_heads": 2},  # Falcon-40B/180B: ln_attn, ln_mlp
        {"parallel_attn": False, "multi_query": False},  # Falcon-RW's sequential block (here with RoPE)
    ],
)
def test_falcons_two_norm_blocks_give_transformers_logits_and_weights(arch):
    from transformers import FalconConfig

    config = FalconConfig(
        vocab_size=100, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, alibi=False, **arch
    )
    reference, ours = _loaded(config)
    assert ours.spec.block.n_norms == 2
    assert count_params(ours.spec).total == sum(p.numel() for p in reference.parameters())
    ids = torch.randint(0, 100, (2, 9), generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        torch.testing.assert_close(ours(ids), reference(input_ids=ids).logits, atol=1e-4, rtol=0)


def test_phis_qk_layernorms_give_transformers_logits_and_weights():
    from transformers import PhiConfig

    config = PhiConfig(
        vocab_size=100, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
        qk_layernorm=True,
    )  # fmt: skip
    reference, ours = _loaded(config)
    assert ours.spec.attention.qk_norm_type == "layernorm"
    assert count_params(ours.spec).total == sum(p.numel() for p in reference.parameters())
    ids = torch.randint(0, 100, (2, 9), generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        torch.testing.assert_close(ours(ids), reference(input_ids=ids).logits, atol=1e-4, rtol=0)


@pytest.mark.parametrize(
    "extra",
    [
        {"alibi": True, "embedding_norm": True, "norm": "layernorm"},  # BLOOM's: each rank its heads' slopes
        {"parallel_residual": True, "lm_head_bias": True, "tied_embeddings": False, "norm": "layernorm"},  # NeoX, GPT-J
    ],
    ids=["alibi", "parallel-head-bias"],
)
def test_sharded_logits_equal_the_full_model_for_the_classic_features(extra):
    from mha_cli.nn.tensor_parallel import shard_tensor
    from tests.tp_threads import run_ranks

    the_spec = ModelSpec(d_model=48, n_layers=2, n_heads=6, n_kv_heads=2, d_ff=64, vocab_size=100, **extra)
    torch.manual_seed(0)
    full_model = build_model(the_spec).eval()
    with torch.no_grad():
        for param in full_model.parameters():
            param.add_(torch.randn_like(param) * 0.1)
    ids = torch.randint(0, 100, (2, 9), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = full_model(ids)  # (b, s, v)

    def shard(full, name, rank, tp):
        return shard_tensor(name, full[name], the_spec, rank, tp)

    build = lambda rank: build_model(the_spec, tp_rank=rank, tp_size=2)  # noqa: E731
    results, _ = run_ranks(build, shard, full_model.state_dict(), ids, 2)
    for logits in results:
        torch.testing.assert_close(logits, expected, atol=1e-5, rtol=1e-5)


def test_a_design_with_alibi_is_not_written_as_a_llama_config():
    from mha_cli.core.errors import BadInputError
    from mha_cli.core.recommend.hf_config import hf_config

    design = ModelSpec(d_model=64, n_layers=2, n_heads=4, vocab_size=32, d_ff=128, alibi=True)
    with pytest.raises(BadInputError, match="ALiBi"):
        hf_config(design, max_position_embeddings=128)


def test_an_older_pythia_config_reads_its_rotary_pct_and_base_and_counts_pythia_70m():
    """Pythia-70m's config.json (rotary_pct, rotary_emb_base): its published 70,426,624 weights."""
    config = {
        "model_type": "gpt_neox", "hidden_size": 512, "num_attention_heads": 8, "num_hidden_layers": 6,
        "intermediate_size": 2048, "rotary_pct": 0.25, "rotary_emb_base": 10000, "use_parallel_residual": True,
        "vocab_size": 50304, "tie_word_embeddings": False, "max_position_embeddings": 2048, "hidden_act": "gelu",
    }  # fmt: skip
    imported = import_hf_config(config)
    assert imported.model.attention.rope.partial_rotary_factor == 0.25 and imported.model.block.parallel_residual
    assert not any(note.startswith("rope_theta absent") for note in imported.assumptions)
    assert count_params(imported.model).total == 70_426_624


@pytest.mark.parametrize(
    ("name", "config_class", "fields", "published"),
    [
        ("bloom-560m", "BloomConfig", {"vocab_size": 250880, "hidden_size": 1024, "n_layer": 24, "n_head": 16},
         559_214_592),
        ("gpt-j-6b", "GPTJConfig", {"vocab_size": 50400, "n_embd": 4096, "n_layer": 28, "n_head": 16, "rotary_dim": 64},
         6_050_882_784),
        ("phi-2", "PhiConfig", {"vocab_size": 51200, "hidden_size": 2560, "intermediate_size": 10240,
                                "num_hidden_layers": 32, "num_attention_heads": 32, "partial_rotary_factor": 0.4},
         2_779_683_840),
    ],
    ids=lambda value: value if isinstance(value, str) and "-" in value else "",
)  # fmt: skip
def test_a_full_size_config_counts_the_published_weights_as_transformers_builds_them(
    name, config_class, fields, published
):
    import transformers
    from transformers import AutoModelForCausalLM

    config = getattr(transformers, config_class)(**fields)
    with torch.device("meta"):
        theirs = sum(p.numel() for p in AutoModelForCausalLM.from_config(config).parameters())
    assert count_params(import_hf_config(config.to_dict(), name=name).model).total == theirs == published
