"""ModelSpec in parts: a spec written before the parts (flat, config schema 1) reads as the same model, every flat
field has one place, and the parts derive what they leave out once."""

from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from mha_cli.core.config_io import parse_config, read_mapping
from mha_cli.core.errors import BadInputError
from mha_cli.core.model_migration import FLAT_FIELDS, PARTS, nest_flat_fields
from mha_cli.core.presets import get_preset, preset_names
from mha_cli.core.schemas import AttentionSpec, ModelSpec
from tests.spec_paths import flat_path, read_path

V1_CONFIGS = Path(__file__).parent / "fixtures" / "configs_v1"
OUTPUTS = Path(__file__).parent.parent / "outputs" / "configs"


@pytest.mark.parametrize("name", sorted(path.stem for path in V1_CONFIGS.glob("*.yaml")))
def test_a_schema_1_file_reads_as_the_model_its_command_writes_today(name):
    """The examples as ``mha recommend`` wrote them before the parts (flat model, schema_version 1; kept verbatim
    from git) read as the same config as the files it writes now (nested, schema_version 2)."""
    old = parse_config(read_mapping(V1_CONFIGS / f"{name}.yaml"), name)
    new = parse_config(read_mapping(OUTPUTS / f"{name}.yaml"), name)
    assert old.schema_version == 1 and new.schema_version == 2
    # recommend writes the context a design is for (its RoPE table's length) since version 1's files were kept,
    # and its RoPE base (MHA042: 500,000 to 16K tokens, 10,000,000 at 128K for head_dim 128; version 1's left RoPE at
    # its 10,000 default)
    assert old.model.context_length is None and new.model.context_length == new.deployment.seq_len
    from mha_cli.core.recommend.rope_base import rope_base

    theta = rope_base(new.deployment.seq_len, new.model.attention.head_dim).theta
    assert old.model.attention.rope is None and new.model.attention.rope.theta == theta
    assert theta == (10_000_000 if name == "70b-128k-8xh100" else 500_000)
    then = {"context_length": new.model.context_length, "attention": new.model.attention}
    assert old.model.attention.model_copy(update={"rope": new.model.attention.rope}) == new.model.attention
    assert old.model.model_copy(update=then) == new.model
    assert old.deployment == new.deployment


def test_a_flat_spec_and_its_nested_dump_are_one_model():
    """Nested out, nested back in, through YAML too: the same spec, for every preset (each its family's flat layout
    under its own nested data)."""
    for name in preset_names():
        spec = get_preset(name)
        assert ModelSpec.model_validate(spec.model_dump()) == spec, name
        assert ModelSpec.model_validate(yaml.safe_load(yaml.safe_dump(spec.model_dump(mode="json")))) == spec, name


def test_every_flat_field_has_one_place_and_every_part_field_one_flat_name():
    places = list(FLAT_FIELDS.values())
    assert len(places) == len(set(places))  # no two old names map to one field
    for flat, (part, name) in FLAT_FIELDS.items():
        assert part in PARTS and name in ModelSpec.model_fields[part].annotation.model_fields, flat
    part_fields = {(part, name) for part in PARTS for name in ModelSpec.model_fields[part].annotation.model_fields}
    assert set(places) <= part_fields  # the old names are frozen at version 1's; a new field needs none
    # version 1's 67 fields less the 8 that stayed at the top level, and Gemma 4's global-layer geometry (3), its
    # K/V-sharing layers' projections and MLP width (2) and per-layer embeddings (1), which its reader fills
    assert len(FLAT_FIELDS) == 65
    assert set(ModelSpec.model_fields) & set(FLAT_FIELDS) == set()  # no name lives in both forms


def test_llama_3_8b_flat_names_land_where_the_parts_say():
    spec = ModelSpec(d_model=4096, n_layers=32, n_heads=32, n_kv_heads=8, vocab_size=128256, d_ff=14336,
                     tied_embeddings=False, sliding_window=None, attn_sinks=False)  # fmt: skip
    assert (spec.attention.n_heads, spec.attention.n_kv_heads, spec.attention.head_dim) == (32, 8, 128)
    assert (spec.attention.variant, spec.attention.q_per_kv, spec.attention.width) == ("GQA", 4, 4096)
    assert (spec.block.d_ff, spec.embeddings.vocab_size, spec.embeddings.tied) == (14336, 128256, False)
    assert read_path(spec, flat_path("tied_embeddings")) is False and flat_path("d_model") == "d_model"


def test_one_name_per_concept():
    """The twins are gone: ``kv_heads``/``dim_per_head`` were ``n_kv_heads``/``head_dim`` made ints; the parts hold
    ints from validation on."""
    spec = get_preset("deepseek-v3")
    for twin in ("kv_heads", "dim_per_head", "n_heads", "head_dim", "vocab_size", "moe", "mla"):
        assert not hasattr(spec, twin), twin
    assert (spec.attention.n_kv_heads, spec.attention.head_dim, spec.attention.variant) == (128, 192, "MLA")
    for name in ("n_kv_heads", "head_dim", "variant"):
        assert AttentionSpec.model_fields[name].is_required()  # derived only from what the part is given


def test_a_field_given_both_ways_is_refused_not_chosen():
    with pytest.raises(ValueError, match="n_heads is given twice"):
        nest_flat_fields({"n_heads": 8, "attention": {"n_heads": 16}})
    with pytest.raises(ValidationError, match="given twice"):
        ModelSpec.model_validate({"d_model": 64, "n_layers": 1, "n_heads": 4, "attention": {"n_heads": 8},
                                  "vocab_size": 10, "d_ff": 8})  # fmt: skip


def test_the_head_defaults_are_derived_in_one_place():
    """head_dim from d_model, n_kv_heads from the variant, the variant from the counts; MLA's from its widths."""
    base = {"d_model": 96, "n_layers": 1, "vocab_size": 10, "d_ff": 8}
    mqa = ModelSpec(**base, n_heads=6, variant="mqa")
    assert (mqa.attention.head_dim, mqa.attention.n_kv_heads, mqa.attention.variant) == (16, 1, "MQA")
    mla = ModelSpec(**base, n_heads=6, mla={"kv_lora_rank": 32, "qk_rope_head_dim": 8, "qk_nope_head_dim": 16})
    assert (mla.attention.head_dim, mla.attention.n_kv_heads, mla.attention.variant) == (24, 6, "MLA")
    with pytest.raises(ValidationError, match=r"d_model \(96\) is not divisible by n_heads \(5\)"):
        ModelSpec(**base, n_heads=5)
    with pytest.raises(ValidationError, match="variant GQA needs n_kv_heads"):
        ModelSpec(**base, n_heads=6, variant="GQA")


def test_a_copy_refuses_a_field_the_model_does_not_have():
    """``model_copy(update=...)`` with an old flat name would set an attribute nothing reads: refused."""
    spec = get_preset("llama-3-8b")
    with pytest.raises(TypeError, match="ModelSpec has no field sliding_window"):
        spec.model_copy(update={"sliding_window": 4096})


def test_the_exported_schema_accepts_the_files_mha_writes(tmp_path):
    """What ``recommend --out`` writes (an MLA config leaves out n_kv_heads and head_dim) has every required key of
    the schema ``mha schema`` prints and no key it does not describe; the schema is version 2's."""
    from mha_cli.core.config_io import config_to_yaml
    from mha_cli.core.schema_export import config_json_schema
    from mha_cli.core.schemas import MhaConfig

    schema = config_json_schema()
    assert schema["properties"]["schema_version"]["const"] == 2
    defs = schema["$defs"]
    parts = {"attention": "AttentionSpec", "block": "BlockSpec", "embeddings": "EmbeddingSpec"}
    for preset in ("deepseek-v3", "llama-3-8b", "gemma-2-9b"):
        written = yaml.safe_load(config_to_yaml(MhaConfig(model=get_preset(preset))))["model"]
        assert set(defs["ModelSpec"]["required"]) <= set(written) <= set(defs["ModelSpec"]["properties"]), preset
        for part, name in parts.items():
            keys = set(written[part])
            assert set(defs[name].get("required", [])) <= keys <= set(defs[name]["properties"]), (preset, part)
    assert (
        "head_dim"
        not in yaml.safe_load(config_to_yaml(MhaConfig(model=get_preset("deepseek-v3"))))["model"]["attention"]
    )


def test_an_error_names_the_field_as_the_file_writes_it():
    """A flat (schema 1) file's error names its flat field; a nested file's, the part's path."""
    flat = {"d_model": 64, "n_layers": 2, "n_heads": "4", "vocab_size": 10, "d_ff": 8, "moe": {"n_experts": True}}
    with pytest.raises(BadInputError) as info:
        parse_config({"model": flat}, "old.yaml")
    assert "model.n_heads: must be a whole number (got '4')" in str(info.value)
    assert "model.moe.n_experts: must be a whole number (got True)" in str(info.value)
    nested = {"d_model": 64, "n_layers": 2, "attention": {"n_heads": "4"}, "block": {"d_ff": 8},
              "embeddings": {"vocab_size": 10}}  # fmt: skip
    with pytest.raises(BadInputError, match=r"model\.attention\.n_heads: must be a whole number"):
        parse_config({"model": nested}, "new.yaml")


PARTS_MODEL = "{d_model: 64, n_layers: 2, attention: {n_heads: 4}, block: {d_ff: 8}, embeddings: {vocab_size: 10}}"
FLAT_MODEL = "{d_model: 64, n_layers: 2, n_heads: 4, d_ff: 8, vocab_size: 10}"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (f"schema_version: 2\nmodel: {FLAT_MODEL}\n",
         "model: schema_version 2 writes the model in parts, but this file writes n_heads, d_ff and vocab_size at the"
         " top level as schema_version 1 did: move each into its part (n_heads -> attention.n_heads) or set"
         " schema_version: 1 (every field at the top level)"),
        (f"schema_version: 1\nmodel: {PARTS_MODEL}\n",
         "model: schema_version 1 writes every model field at the top level, but this file writes the attention,"
         " block and embeddings parts of schema_version 2: set schema_version: 2"),
        ("model: {d_model: 64, n_layers: 2, n_heads: 4, block: {d_ff: 8}, vocab_size: 10}\n",
         "model: mixes the two layouts, n_heads and vocab_size at the top level (schema_version 1) beside the block"
         " part (schema_version 2): move each into its part (n_heads -> attention.n_heads) and set schema_version: 2"),
        ("model: {attention: 5, d_model: 64, n_layers: 2, n_heads: 4, d_ff: 8, vocab_size: 10}\n",
         "model.attention: must be a mapping of the attention part's fields (got 5); beside flat fields (n_heads, d_ff"
         " and vocab_size), leave the part out"),
        ("model: {d_model: 64, n_layers: 2, attention: [4], block: {d_ff: 8}, embeddings: {vocab_size: 10}}\n",
         "model.attention: must be a mapping of the attention part's fields (got a list)"),
        ("schema_version: 2\nmodel: {d_model: 64, n_layers: 2, attention: {n_heads: 4, kv_heads: 2},"
         " layers: {layer_pattern: [global]}, block: {d_ff: 8}, embeddings: {vocab_size: 10, tied_embeddings: true}}\n",
         "model.attention.kv_heads: unknown field; did you mean attention.n_kv_heads?; model.layers.layer_pattern:"
         " unknown field; did you mean layers.pattern? (layer_pattern is its schema_version 1 name);"
         " model.embeddings.tied_embeddings: unknown field; did you mean embeddings.tied? (tied_embeddings is its"
         " schema_version 1 name)"),
        ("model: {d_model: 64, n_layers: 2, attention: {n_heads: 4}, block: {d_ff: 8, sliding_window: 16},"
         " embeddings: {vocab_size: 10}}\n",
         "model.block.sliding_window: unknown field; did you mean layers.sliding_window?"),
        ("model: {d_model: 64, n_layers: 2, window: 16, attention: {n_heads: 4}, block: {d_ff: 8},"
         " embeddings: {vocab_size: 10}}\n",  # at the top level too (review 301 #5)
         "model.window: unknown field; did you mean layers.sliding_window? (the window a local layer"
         " attends to and caches, with layers.pattern naming the local layers; attention.masked_window is a mask on"
         " global layers that caches every token)"),
        ("model: {d_model: 64, n_layers: 2, attention: {n_heads: 4, window: 16}, block: {d_ff: 8},"
         " embeddings: {vocab_size: 10}}\n",  # spelt closest to masked_window, which caches every token
         "model.attention.window: unknown field; did you mean layers.sliding_window? (the window a local layer"
         " attends to and caches, with layers.pattern naming the local layers; attention.masked_window is a mask on"
         " global layers that caches every token)"),
        (f"schema_version: 1\nmodel: {FLAT_MODEL[:-1]}, n_kv_heads: 3}}\n",
         "model: n_heads (4) must be divisible by n_kv_heads (3)"),
        (f"schema_version: 1\nmodel: {FLAT_MODEL[:-1]}, layer_pattern: [local, global]}}\n",
         "model: layer_pattern has local layers but sliding_window is not set"),
        (f"model: {FLAT_MODEL[:-1]}, embedding_size: 32}}\n",
         "model: embedding_size other than d_model needs lm_head_transform (the head reads at that width)"),
        ("schema_version: 1\nmodel: {d_model: 64, n_layers: 2}\n",
         "model.n_heads: missing (required); model.d_ff: missing (required); model.vocab_size: missing (required)"),
        ("model: {d_model: 64, n_layers: 2, attention: {n_heads: 4, variant: GQA, num_key_value_heads: 2},"
         " block: {d_ff: 8}, embeddings: {vocab_size: 10}}\n",
         "model.attention.num_key_value_heads: unknown field; did you mean attention.n_kv_heads?"
         " (num_key_value_heads is config.json's name; `mha kv` reads a config.json as it is)"),
        ("model: {d_model: 64, n_layers: 2, attention: {n_heads: 4, variant: GQA}, block: {d_ff: 8},"
         " embeddings: {vocab_size: 10}}\n",
         "model.attention: variant GQA needs n_kv_heads (a divisor of n_heads between 1 and n_heads)"),
        (f"schema_version: 2.0\nmodel: {FLAT_MODEL}\n", "schema_version: must be 1 or 2 (got 2.0)"),
        (f"schema_version: true\nmodel: {FLAT_MODEL}\n", "schema_version: must be 1 or 2 (got true)"),
        (f"schema_version: null\nmodel: {FLAT_MODEL}\n", "schema_version: must be 1 or 2 (got null)"),
        ("model: {d_model: 64, n_layers: 2, attention: 'gqa', block: {d_ff: 8}, embeddings: {vocab_size: 10}}\n",
         "model.attention: must be a mapping of the attention part's fields (got a string)"),
        ("model: {d_model: 4096, n_layers: 2, attention: {kv_heads: 8, n_heads: 32, variant: gqa},"
         " block: {d_ff: 14336}, embeddings: {vocab_size: 1000}}\n",
         "model.attention.kv_heads: unknown field; did you mean attention.n_kv_heads?"),
    ],
    ids=["v2-flat", "v1-parts", "mixed", "scalar-part", "list-part", "old-names-in-parts", "wrong-part", "top-window", "window",
         "flat-cross-field", "flat-part-error", "flat-model-error", "v1-empty", "gqa-old-kv-name", "gqa-no-kv",
         "version-float", "version-bool", "version-null", "string-part", "misspelt-field-before-gqa-check"],
)  # fmt: skip
def test_a_layout_error_is_one_line_naming_the_fields_as_written(cli, tmp_path, text, message):
    """The layout a file writes must agree with its schema_version; an error names each field as the file writes
    it and, for an old name or a misplaced field, where it belongs. One line on stderr, exit 2."""
    from mha_cli.core.errors import EXIT_BAD_INPUT

    path = tmp_path / "c.yaml"
    path.write_text(text)
    result = cli.run("check", str(path))
    assert result.exit_code == EXIT_BAD_INPUT, result.output
    assert result.stderr.strip().splitlines() == [f"error: {path}: {message}"]


def test_a_file_without_schema_version_reads_in_the_layout_it_writes():
    """Flat: version 1 (as every file before the parts); in parts: version 2. The same model either way."""
    flat = parse_config(yaml.safe_load(f"model: {FLAT_MODEL}"), "flat.yaml")
    nested = parse_config(yaml.safe_load(f"model: {PARTS_MODEL}"), "nested.yaml")
    assert (flat.schema_version, nested.schema_version) == (1, 2)
    assert flat.model == nested.model


def test_a_bare_model_file_keeps_its_schema_version_at_the_top(cli, tmp_path):
    """A file holding only the model (``d_model`` at the top, no ``model:``) may state its version beside it: read as
    the file's, not refused as an unknown model field; its layout is checked against it."""
    from mha_cli.core.errors import EXIT_BAD_INPUT

    path = tmp_path / "bare.yaml"
    path.write_text(f"schema_version: 2\n{yaml.safe_dump(yaml.safe_load(PARTS_MODEL))}")
    assert cli.json("kv", str(path), "--seq", "64")["model"]["attention"]["n_heads"] == 4
    path.write_text(f"schema_version: 1\n{yaml.safe_dump(yaml.safe_load(PARTS_MODEL))}")
    result = cli.run("kv", str(path), "--seq", "64")
    assert result.exit_code == EXIT_BAD_INPUT and "schema_version 1 writes every model field" in result.stderr


def test_a_part_field_in_the_wrong_part_names_no_old_name_when_it_kept_its_name():
    """``n_kv_heads`` is ``attention.n_kv_heads`` in both layouts: written under ``block`` the hint names its part,
    and says nothing of a schema_version 1 name; ``attn_sinks`` (``attention.sinks`` now) is one."""
    from mha_cli.core.config_layout import IN_PARTS, unknown_field_hint

    hint = unknown_field_hint(IN_PARTS)
    assert hint(("model", "block", "n_kv_heads")) == "did you mean attention.n_kv_heads?"
    assert hint(("model", "block", "attn_sinks")) == (
        "did you mean attention.sinks? (attn_sinks is its schema_version 1 name)"
    )


def test_a_config_json_name_in_our_file_is_sent_where_ours_keeps_it():
    """``rope_theta`` under ``attention`` was sent to ``attention.rope_local`` (the closest spelling; newuser trial
    241). Each config.json name's place is a real field path of the schema."""
    from mha_cli.core.config_layout import CONFIG_JSON_NAMES, IN_PARTS, unknown_field_hint

    hint = unknown_field_hint(IN_PARTS)
    assert hint(("model", "attention", "rope_theta")) == (
        "did you mean attention.rope.theta? (rope_theta is config.json's name; `mha kv` reads a config.json as it is)"
    )
    assert hint(("model", "hidden_size")).startswith("did you mean d_model?")
    for place in (one for both in CONFIG_JSON_NAMES.values() for one in both.split(" and ")):
        spec: type = ModelSpec
        for name in place.split("."):
            assert name in spec.model_fields, place
            annotation = spec.model_fields[name].annotation
            inner = [a for a in getattr(annotation, "__args__", (annotation,)) if hasattr(a, "model_fields")]
            spec = inner[0] if inner else annotation


def test_a_field_like_no_other_gets_no_hint_from_another_part():
    """Trial 350 #4: `foo_bar` under model: and under attention: was offered attention.o_bias (difflib 0.62); a near
    typo of a part's field still is (n_kv_head, qkv_bais)."""
    from mha_cli.core.config_layout import unknown_field_hint

    hint = unknown_field_hint(None)
    assert hint(("model", "foo_bar")) is None and hint(("model", "attention", "foo_bar")) is None
    assert hint(("model", "n_kv_head")) == "did you mean attention.n_kv_heads?"
    assert hint(("model", "attention", "qkv_bais")) == "did you mean attention.qkv_bias?"
    assert hint(("model", "d_modle")) == "did you mean d_model?"
