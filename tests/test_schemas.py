import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from mha_cli.core.schemas import DeploymentSpec, MhaConfig, ModelSpec

BASE = dict(d_model=512, n_layers=4, n_heads=8, vocab_size=1000, d_ff=1024)


def make(**overrides) -> ModelSpec:
    return ModelSpec(**{**BASE, **overrides})


def error_text(**overrides) -> str:
    with pytest.raises(ValidationError) as info:
        make(**overrides)
    return str(info.value)


def test_defaults_resolve_to_mha_with_derived_head_dim():
    model = make()
    assert (
        model.attention.variant,
        model.attention.n_kv_heads,
        model.attention.head_dim,
        model.attention.q_per_kv,
    ) == ("MHA", 8, 64, 1)


def test_variant_is_inferred_from_head_counts():
    assert make(n_kv_heads=2).attention.variant == "GQA"
    assert make(n_kv_heads=1).attention.variant == "MQA"
    assert make(variant="mqa").attention.n_kv_heads == 1


def test_explicit_head_dim_wins_over_d_model_over_heads():
    model = make(head_dim=128)
    assert model.attention.head_dim == 128
    assert model.attention.width == 1024 != model.d_model


def test_indivisible_heads_quote_the_values():
    assert "n_heads (32) must be divisible by n_kv_heads (5)" in error_text(n_heads=32, n_kv_heads=5)


def test_indivisible_width_asks_for_head_dim():
    assert "d_model (500) is not divisible by n_heads (8): set head_dim explicitly" in error_text(d_model=500)


def test_variant_that_contradicts_heads_is_rejected():
    assert "variant MHA does not match" in error_text(n_kv_heads=2, variant="MHA")
    assert "variant GQA needs n_kv_heads" in error_text(variant="GQA")


def test_mla_resolves_head_dim_and_kv_heads():
    model = make(mla=dict(kv_lora_rank=64, qk_rope_head_dim=16, qk_nope_head_dim=32, v_head_dim=32))
    assert (
        model.attention.variant,
        model.attention.head_dim,
        model.attention.n_kv_heads,
        model.attention.mla.latent_dim,
    ) == ("MLA", 48, 8, 80)
    assert "needs an mla block" in error_text(variant="MLA")


@pytest.mark.parametrize("field", ["d_model", "n_layers", "n_heads", "vocab_size", "d_ff"])
@pytest.mark.parametrize("value", [0, -1, 10**12])
def test_zero_negative_and_absurd_sizes_are_rejected(field, value):
    error_text(**{field: value})


def test_unknown_fields_are_rejected():
    assert "extra" in error_text(n_head=8).lower()


def test_layer_pattern_cycles_from_layer_zero():
    model = make(n_layers=6, sliding_window=128, layer_pattern=["local", "global"])
    assert [model.layer_kind(i) for i in range(6)] == ["local", "global"] * 3
    assert (model.n_local_layers, model.n_global_layers) == (3, 3)
    assert make(sliding_window=128).n_local_layers == 4
    assert "sliding_window is not set" in error_text(layer_pattern=["local"])


def test_deployment_parses_human_quantities_and_dtype_aliases():
    spec = DeploymentSpec(seq_len="8k", kv_dtype="bfloat16")
    assert (spec.seq_len, spec.kv_dtype) == (8192, "bf16")
    with pytest.raises(ValidationError):
        DeploymentSpec(kv_dtype="fp7")
    with pytest.raises(ValidationError):
        DeploymentSpec(seq_len=0)


def test_config_round_trips_through_json():
    config = MhaConfig(model=make(n_kv_heads=2), deployment=DeploymentSpec(seq_len=4096, batch=4))
    assert MhaConfig.model_validate_json(config.model_dump_json()) == config


@given(
    n_kv=st.integers(min_value=1, max_value=16),
    group=st.integers(min_value=1, max_value=8),
    head_dim=st.sampled_from([32, 64, 128, 256]),
)
def test_any_divisible_geometry_validates_and_is_consistent(n_kv, group, head_dim):
    model = ModelSpec(d_model=1024, n_layers=2, n_heads=n_kv * group, n_kv_heads=n_kv, head_dim=head_dim,
                      vocab_size=100, d_ff=100)  # fmt: skip
    assert model.attention.q_per_kv * model.attention.n_kv_heads == model.attention.n_heads
    assert model.attention.variant == ("MHA" if group == 1 else "MQA" if n_kv == 1 else "GQA")


@given(n_heads=st.integers(min_value=2, max_value=64), n_kv=st.integers(min_value=1, max_value=64))
def test_indivisible_geometry_always_fails_cleanly(n_heads, n_kv):
    fields = dict(d_model=64 * n_heads, n_layers=1, n_heads=n_heads, n_kv_heads=n_kv, vocab_size=10, d_ff=10)
    if n_kv <= n_heads and n_heads % n_kv == 0:
        assert ModelSpec(**fields).attention.n_kv_heads == n_kv
    else:
        with pytest.raises(ValidationError):
            ModelSpec(**fields)


def test_a_derived_head_wider_than_the_bound_is_refused_like_an_explicit_one(cli, tmp_path):
    """Found by benchmarks/fuzz_cli.py (seed 3): d_model 100,000 over 4 heads made a 25,000-wide head that only an
    explicit head_dim was bounded against, and `mha check` crashed (exit 70) re-validating the model's own row."""
    with pytest.raises(ValidationError, match="exceeds the widest head"):
        ModelSpec(d_model=100_000, n_layers=2, n_heads=4, vocab_size=1000, d_ff=512)
    config = tmp_path / "wide.yaml"
    config.write_text("model: {d_model: 100000, n_layers: 2, n_heads: 4, vocab_size: 1000, d_ff: 512}\n")
    for command in ("check", "kv"):
        result = cli.run(command, str(config))
        assert result.exit_code == 2 and "exceeds the widest head (16,384)" in result.output


def test_token_layer_kinds_and_state_layers_are_counted_in_closed_form():
    """Hand counts: Gemma-3n's last 15 of 35 layers reuse earlier K/V (20 cache: 4 repeats of 4 local + 1 global);
    Qwen3-Next's 48 layers are 3 linear : 1 global (36 hold a state); Falcon-H1 runs its mixer beside every
    attention layer (all 44 hold a state)."""
    from mha_cli.core.presets import get_preset

    assert get_preset("gemma-3n-e4b").token_layer_kinds() == {"local": 16, "global": 4}
    next_80b = get_preset("qwen3-next-80b-a3b")
    assert (next_80b.token_layer_kinds(), next_80b.n_state_layers) == ({"global": 12}, 36)
    falcon = get_preset("falcon-h1-7b")
    assert (falcon.token_layer_kinds(), falcon.n_state_layers) == ({"global": 44}, 44)
    assert make().n_state_layers == 0


def test_token_layer_kinds_match_a_layer_by_layer_count_for_every_preset_and_pipeline_stage():
    """The closed form against the per-layer definitions (``caches_tokens``, ``layer_kind``, ``holds_state``), the
    kinds in the order their first layer comes (the cost model sums its attention ops in that order)."""
    from mha_cli.core.pipeline import stage_layout, stage_model
    from mha_cli.core.presets import PRESET_DATA, get_preset

    for name in PRESET_DATA:
        preset = get_preset(name)
        models = [preset]
        for pp in (2, 3, 4, 8):
            if preset.n_layers % pp == 0 and preset.layers.n_kv_shared_layers is None:
                models += [stage_model(preset, stage_layout(preset, pp, s)) for s in range(pp)]
        for model in models:
            by_layer: dict[str, int] = {}
            for layer in range(model.n_layers):
                if model.caches_tokens(layer):
                    by_layer[model.layer_kind(layer)] = by_layer.get(model.layer_kind(layer), 0) + 1
            assert list(model.token_layer_kinds().items()) == list(by_layer.items()), name
            assert model.n_state_layers == sum(model.holds_state(i) for i in range(model.n_layers)), name


def test_a_deployment_field_written_null_reads_as_left_out(cli, tmp_path):
    """Trial 379 #1: ``tp: null`` (which ``mha schema`` allows) was taken as set: check, kv and verify stopped on an
    internal error (exit 70) comparing None with the target's devices. Null is the field's default, left out."""
    from mha_cli.core.schemas import DeploymentSpec

    assert "tp" not in DeploymentSpec(tp=None, seq_len=8192).model_fields_set
    with pytest.raises(ValidationError):  # review 380 #5: a field that takes no null still refuses it
        DeploymentSpec(seq_len=None)
    written = tmp_path / "design.yaml"
    assert (
        cli.run("recommend", "--params", "1B", "--seq", "8k", "--target", "h100", "--out", str(written)).exit_code == 0
    )
    text = written.read_text()
    assert "\n  tp: 1\n" in text
    nulled = tmp_path / "nulled.yaml"
    nulled.write_text(text.replace("\n  tp: 1\n", "\n  tp: null\n"))
    assert cli.run("check", str(nulled)).exit_code == 0
    assert cli.json("kv", str(nulled))["kv"]["bytes_per_token"] == cli.json("kv", str(written))["kv"]["bytes_per_token"]
