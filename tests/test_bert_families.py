"""BERT's descendants run as causal LMs (``is_decoder``), against transformers built from config objects (nothing
downloaded): weights counted exactly (transformers' model on the meta device), BERT's logits equal to
BertLMHeadModel's with random weights, for a prefill and a cached decode; encoder configs refused in one line."""

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from mha_cli.core.errors import BadInputError  # noqa: E402
from mha_cli.core.hf_import import import_hf_config  # noqa: E402
from mha_cli.core.params import count_params  # noqa: E402

TINY = {
    "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 64, "vocab_size": 96,
    "max_position_embeddings": 40, "pad_token_id": 1, "is_decoder": True,
}  # fmt: skip


def _config(model_type: str, **extra):
    return transformers.AutoConfig.for_model(model_type, **{**TINY, **extra})


def _reference_count(config) -> int:
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize(
    ("model_type", "extra"),
    [
        ("bert", {}),
        ("bert", {"type_vocab_size": 3}),
        ("roberta", {}),
        ("bert-generation", {}),
        ("ernie", {}),
        ("electra", {"embedding_size": 16}),
        ("electra", {"embedding_size": 32}),  # as wide as hidden_size: no projection
        ("megatron-bert", {}),
        ("roberta-prelayernorm", {}),
        ("xlm-roberta-xl", {}),
        ("rembert", {"input_embedding_size": 16, "output_embedding_size": 48}),
        ("modernbert-decoder", {"classifier_bias": True}),
    ],
)
def test_weights_are_counted_as_transformers_builds_them(model_type, extra):
    config = _config(model_type, **extra)
    spec = import_hf_config(config.to_dict(), name=model_type).model
    assert count_params(spec).total == _reference_count(config)


@pytest.mark.parametrize(
    ("model_type", "left_out"),
    [("roformer", 40 * 8), ("big_bird", 32 * 32 + 32)],  # the sinusoidal table (positions x head_dim); the pooler
)
def test_weights_no_logit_reads_are_said_uncounted(model_type, left_out):
    from mha_cli.core.deployment import family_weights_note

    config = _config(model_type, embedding_size=16) if model_type == "roformer" else _config(model_type)
    spec = import_hf_config(config.to_dict()).model
    assert count_params(spec).total == _reference_count(config) - left_out
    assert "not counted" in family_weights_note(spec)


def test_an_untied_head_says_its_unused_second_bias_is_not_counted():
    config = _config("bert", tie_word_embeddings=False)
    imported = import_hf_config(config.to_dict())
    assert count_params(imported.model).total == _reference_count(config) - config.vocab_size
    assert any("not counted" in note and "second bias" in note for note in imported.assumptions)


def test_roberta_positions_start_past_the_padding_row():
    spec = import_hf_config(_config("roberta").to_dict()).model
    assert (spec.embeddings.position_offset, spec.embeddings.positions, spec.context_length) == (2, 40, 38)


def _perturbed(model):
    """Norms and biases moved off 1 and 0, so a decoder that skipped one would differ."""
    torch.manual_seed(1)
    with torch.no_grad():
        for name, tensor in model.state_dict().items():
            if name.endswith("bias") or "LayerNorm" in name:
                tensor.add_(torch.randn_like(tensor) * 0.1)
    return model


@pytest.mark.parametrize(
    ("model_type", "extra"),
    [("bert", {}), ("bert", {"tie_word_embeddings": False}), ("electra", {"embedding_size": 16})],
)
def test_logits_equal_transformers_for_a_prefill_and_a_cached_decode(model_type, extra):
    from mha_cli.nn import build_model
    from mha_cli.nn.hf_state_dict import load_transformers_state_dict

    config = _config(model_type, **extra)
    torch.manual_seed(0)
    reference = _perturbed(transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32).eval())
    spec = import_hf_config(config.to_dict(), name=model_type).model
    ours = build_model(spec, dtype=torch.float32).eval()
    load_transformers_state_dict(ours, reference.state_dict())  # strict: every name and shape
    ids = torch.randint(2, 96, (2, 9), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        expected = reference(input_ids=ids).logits  # (b, s, v)
        prefill = ours(ids)  # (b, s, v)
        caches = ours.new_cache(batch=2, max_seq=9)
        steps = [ours(ids[:, :4], caches, start_pos=0)]
        steps += [ours(ids[:, pos : pos + 1], caches, start_pos=pos) for pos in range(4, 9)]
    assert (prefill - expected).abs().max().item() < 1e-4
    assert (torch.cat(steps, dim=1) - expected).abs().max().item() < 1e-4


def test_the_token_type_row_matters():
    """The control: without row 0 of the token-type table, BERT's logits are not transformers'."""
    from mha_cli.nn import build_model
    from mha_cli.nn.hf_state_dict import load_transformers_state_dict

    config = _config("bert")
    reference = _perturbed(transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32).eval())
    spec = import_hf_config(config.to_dict()).model
    ours = build_model(spec, dtype=torch.float32).eval()
    load_transformers_state_dict(ours, reference.state_dict())
    with torch.no_grad():
        ours.model.embed_token_types.weight[0].add_(torch.randn(32))  # a constant shift the LayerNorm would undo
        ids = torch.arange(2, 10).unsqueeze(0)
        assert (ours(ids) - reference(input_ids=ids).logits).abs().max().item() > 1e-2


@pytest.mark.parametrize(
    ("model_type", "extra", "named"),
    [
        ("bert", {"is_decoder": False}, "is_decoder"),
        ("roberta", {"add_cross_attention": True}, "add_cross_attention"),
        ("ernie", {"use_task_id": True}, "use_task_id"),
        ("bert", {"hidden_act": "mish"}, "hidden_act"),
        ("bert", {"position_embedding_type": "relative_key"}, "position_embedding_type"),
        ("roformer", {"rotary_value": True}, "rotary_value"),
    ],
)
def test_configs_it_does_not_build_are_refused_naming_the_field(model_type, extra, named):
    with pytest.raises(BadInputError) as refused:
        import_hf_config(_config(model_type, **extra).to_dict())
    assert named in refused.value.message and "\n" not in refused.value.message


@pytest.mark.parametrize(("layers", "pattern"), [(6, ["global", "local", "local"]), (2, ["global", "local"])])
def test_an_older_modernbert_decoder_config_reads_as_its_config_class_derives_it(layers, pattern):
    """A config.json of before transformers 5 (local_attention, global_attn_every_n_layers, the two RoPE thetas):
    the same windows, layer pattern and RoPE as the config class's own to_dict(); fewer layers than the cycle take
    its first ones (2 layers were refused: a pattern of 3 entries)."""
    config = transformers.AutoConfig.for_model(
        "modernbert-decoder", hidden_size=32, num_hidden_layers=layers, num_attention_heads=4, intermediate_size=48,
        vocab_size=96, local_attention=16, global_attn_every_n_layers=3,
    )  # fmt: skip
    current = import_hf_config(config.to_dict()).model
    older = {k: v for k, v in config.to_dict().items() if k not in ("layer_types", "sliding_window", "rope_parameters")}
    older.update(local_attention=16, global_attn_every_n_layers=3, global_rope_theta=160000.0, local_rope_theta=1e4)
    spec = import_hf_config(older).model
    assert (spec.layers.sliding_window, spec.layers.pattern, spec.attention.rope, spec.attention.rope_local) == (
        current.layers.sliding_window, current.layers.pattern, current.attention.rope, current.attention.rope_local,
    )  # fmt: skip
    assert (spec.layers.sliding_window, spec.layers.pattern) == (8, pattern)


@pytest.mark.parametrize("model_type", ["bert", "electra", "rembert", "modernbert-decoder"])
def test_chained_pipeline_stages_are_the_whole_decoder(model_type):
    """Two stages: the first holds the embedding side (token types, its norm, ELECTRA's projection), the second the
    head side (the transform); ModernBERT's second stage keeps its first layer's input norm. Each holds the weights
    ``stage_params`` says, and one rank of tp 1 all that ``count_params`` counts."""
    from mha_cli.core.params import params_per_rank
    from mha_cli.core.pipeline import stage_layout, stage_params
    from mha_cli.nn import build_model
    from mha_cli.nn.pipeline import build_stage
    from mha_cli.nn.tensor_parallel import seeded_tensor

    extra = {"electra": {"embedding_size": 16}, "rembert": {"input_embedding_size": 16, "output_embedding_size": 48}}
    spec = import_hf_config(_config(model_type, num_hidden_layers=4, **extra.get(model_type, {})).to_dict()).model
    whole = build_model(spec, dtype=torch.float32).eval()
    whole.load_state_dict({n: seeded_tensor(n, t.shape, 3) for n, t in whole.state_dict().items()}, strict=True)
    stages = [build_stage(spec, 2, s, dtype=torch.float32).eval() for s in range(2)]
    for stage in stages:
        names = {n: seeded_tensor(stage.whole_model_name(n), t.shape, 3) for n, t in stage.state_dict().items()}
        stage.load_state_dict(names, strict=True)
    ids = torch.randint(2, 96, (2, 7), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        torch.testing.assert_close(stages[1](stages[0](ids)), whole(ids), rtol=1e-5, atol=1e-5)
    held = [stage_params(spec, stage_layout(spec, 2, s)) for s in range(2)]
    assert held == [sum(p.numel() for p in stage.parameters()) for stage in stages]
    assert params_per_rank(spec, 1, 1) == count_params(spec).total == sum(p.numel() for p in whole.parameters())
