import os
import time

import pytest

from mha_cli.core.config_io import config_to_yaml, parse_config, read_mapping, write_text_atomic
from mha_cli.core.errors import BadInputError
from mha_cli.core.schemas import DeploymentSpec, MhaConfig, ModelSpec


def test_yaml_round_trip(tmp_path):
    config = MhaConfig(model=ModelSpec(d_model=256, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=100, d_ff=512),
                       deployment=DeploymentSpec(seq_len="4k", batch=2))  # fmt: skip
    path = tmp_path / "c.yaml"
    write_text_atomic(path, config_to_yaml(config, header="made by a test"))
    assert path.read_text().startswith("# made by a test\n")
    assert path.stat().st_mode & 0o777 == 0o666 & ~current_umask()  # not mkstemp's private 0600
    assert parse_config(read_mapping(path), str(path)) == config


def test_existing_file_is_not_overwritten_without_force(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("keep me")
    with pytest.raises(BadInputError, match="exists: pass --force"):
        write_text_atomic(path, "new")
    assert path.read_text() == "keep me"
    write_text_atomic(path, "new", force=True)
    assert path.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["c.yaml"]  # no temporary file left behind


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("bad.yaml", "model: [unclosed", "malformed YAML at line"),
        ("bad.json", '{"model": ', "malformed JSON at line 1"),
        ("list.yaml", "- 1\n- 2\n", "expected a mapping"),
        ("empty.yaml", "", "found empty"),
        ("int.yaml", "5\n", "found an integer$"),
        ("text.json", '"model"', "found a string$"),
        ("unsafe.yaml", "model: !!python/object/apply:os.system ['echo hi']", "malformed YAML"),
        ("tab.yaml", "model:\n\td_model: 512\n", "at line 2, column 1: a tab; YAML indents with spaces$"),
        ("deep_tab.yaml", "model:\n  d_model: 512\n  \tn_layers: 2\n", "line 3, column 3: a tab; YAML indents"),
    ],
)
def test_malformed_files_fail_with_one_line(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(BadInputError, match=message) as info:
        read_mapping(path)
    assert "\n" not in str(info.value)


def test_a_key_given_twice_in_one_yaml_mapping_is_refused_not_settled_for_the_last(tmp_path):
    """PyYAML keeps the last of two equal keys (``d_model: 4096`` then ``d_model: 2048`` read as 2048); YAML says keys
    are unique, so the file is refused at the second. A merge key's fields may still be overridden."""
    path = tmp_path / "c.yaml"
    path.write_text("model:\n  d_model: 4096\n  n_layers: 2\n  d_model: 2048\n")
    with pytest.raises(BadInputError) as info:
        read_mapping(path)
    assert str(info.value) == (
        f"{path}: malformed YAML at line 4, column 3: key 'd_model' given twice (first at line 2): keep one"
    )
    path.write_text("base: &b {batch: 2, seq_len: 64}\ndeployment: {<<: *b, batch: 1}\n")
    assert read_mapping(path)["deployment"] == {"batch": 1, "seq_len": 64}


def test_a_key_given_twice_in_our_json_config_is_refused_as_in_yaml(cli, tmp_path):
    """mha's own JSON config: a key an object gives twice is refused in one line with the YAML refusal's exit code
    (2), not settled for the last; a Hugging Face config.json keeps the last, as transformers' ``json.load`` does."""
    body = '{"model": {"d_model": 4096, "n_layers": 2, "d_model": 2048, "n_heads": 32, "vocab_size": 1000}}'
    ours, yaml_twin = tmp_path / "c.json", tmp_path / "c.yaml"
    ours.write_text(body)
    yaml_twin.write_text("model:\n  d_model: 4096\n  n_layers: 2\n  d_model: 2048\n")
    with pytest.raises(BadInputError) as info:
        read_mapping(ours)
    assert str(info.value) == f"{ours}: malformed JSON: key 'd_model' given twice in one object: keep one"
    refused, yaml_refused = cli.run("kv", str(ours)), cli.run("kv", str(yaml_twin))
    assert refused.exit_code == yaml_refused.exit_code == 2
    assert "key 'd_model' given twice in one object" in refused.output and "Traceback" not in refused.output
    hf = tmp_path / "config.json"
    hf.write_text(
        '{"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 2, "num_attention_heads": 32,'
        ' "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256, "hidden_size": 2048}'
    )
    read = cli.json("kv", str(hf))
    assert read["model"]["d_model"] == 2048
    # and says so: the figure moved with no line before (trial 304 #11)
    said = f"key 'hidden_size' is given twice in one object of {hf}: its last value is read, as transformers' json.load"
    assert any(line.startswith(said) for line in read["assumptions"])


def test_schema_errors_name_every_field(tmp_path):
    with pytest.raises(BadInputError) as info:
        parse_config({"model": {"d_model": 64, "n_layers": 0, "n_heads": 3}}, "c.yaml")
    text = str(info.value)
    assert "model.n_layers" in text and "model.vocab_size: missing" in text and "\n" not in text


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_folder_is_not_a_file_to_write(tmp_path):
    with pytest.raises(BadInputError, match="is a folder"):
        write_text_atomic(tmp_path, "x", force=True)


def test_a_path_under_a_file_is_a_path_mistyped_not_a_failed_write(tmp_path):
    """Trial 334 #3: `--out out.yaml/x.yaml` with out.yaml a file was exit 74 ("Not a directory"), where a folder
    that does not exist is exit 2; both are a path mistyped (docs/exit-codes.md), and say which part is wrong."""
    (tmp_path / "out.yaml").write_text("kept")
    with pytest.raises(BadInputError, match=r"out\.yaml is a file, not a folder to write x\.yaml into$"):
        write_text_atomic(tmp_path / "out.yaml" / "deeper" / "x.yaml", "x")
    with pytest.raises(BadInputError, match=r"no such folder to write x\.yaml into$"):
        write_text_atomic(tmp_path / "none" / "x.yaml", "x")
    assert (tmp_path / "out.yaml").read_text() == "kept" and sorted(p.name for p in tmp_path.iterdir()) == ["out.yaml"]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["recommend", "--params", "125M", "--out", "-"], "--out -: --out writes a .yaml or .json file"),
        (["kv", "llama-3-8b", "--plot", "/dev/stdout"], "--plot /dev/stdout: --plot writes a .png file"),
        (["probe", "the cat sat", "--out", "-"], "--out -: --out writes a .png file"),
    ],
)
def test_standard_output_as_a_file_name_says_json_prints_instead(cli, args, said):
    """Trial 334 #10: `--out -` was told to "name the file .yaml", as if the extension were the mistake."""
    result = cli.run(*args)
    assert result.exit_code == 2 and result.stdout == ""
    line = " ".join(result.output.split())
    assert said in line and "not standard output: name one (--json prints" in line


def test_non_mla_configs_do_not_carry_the_mla_cache_mode():
    gqa = MhaConfig(model=ModelSpec(d_model=64, n_layers=1, n_heads=4, n_kv_heads=2, vocab_size=10, d_ff=10))
    assert "mla_cache" not in config_to_yaml(gqa)
    mla = MhaConfig(model=ModelSpec(d_model=64, n_layers=1, n_heads=4, vocab_size=10, d_ff=10,
                                    mla=dict(kv_lora_rank=32, qk_rope_head_dim=8)))  # fmt: skip
    assert "mla_cache: absorbed" in config_to_yaml(mla)


def test_validation_messages_are_plain_words_with_the_value():
    with pytest.raises(BadInputError) as info:
        parse_config({"model": {"d_model": 0, "n_layers": "x", "n_heads": 8, "vocab_size": 10, "d_ff": 10,
                                "mlp": "relu"}}, "c.yaml")  # fmt: skip
    text = str(info.value)
    assert "model.d_model: must be greater than 0 (got 0)" in text
    assert "model.n_layers: must be a whole number (got 'x')" in text
    assert "model.mlp: must be one of 'gated' or 'plain' (got 'relu')" in text


def alias_bomb(levels: int = 9, fan_out: int = 9) -> str:
    """Nested anchors, each level using the one below ``fan_out`` times: ``fan_out ** levels`` values expanded."""
    lines = ["a0: &a0 [" + ", ".join(["x"] * fan_out) + "]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * fan_out) + "]" for i in range(1, levels + 1)]
    return "\n".join(lines) + f"\nmodel:\n  d_model: *a{levels}\n"


def test_an_alias_bomb_is_refused_in_well_under_a_second(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(alias_bomb())  # 9**10 values once expanded: gigabytes
    start = time.perf_counter()
    with pytest.raises(BadInputError, match="more than 1,000,000 values once its YAML aliases are expanded") as info:
        read_mapping(path)
    assert time.perf_counter() - start < 2.0
    assert len(str(info.value)) < 300


def test_a_few_aliases_are_fine_and_never_expanded_into_messages(tmp_path):
    path = tmp_path / "small_bomb.yaml"
    path.write_text(alias_bomb(levels=3, fan_out=9))  # 9**4 values: under the limit, so validation sees it
    data = read_mapping(path)
    with pytest.raises(BadInputError) as info:
        parse_config({"model": {**data["model"], "n_layers": 2, "n_heads": 4, "vocab_size": 100, "d_ff": 128}}, "c")
    assert "model.d_model: must be a whole number (got [[[" in str(info.value)
    assert len(str(info.value)) < 150  # the list is quoted a few items deep, never expanded


def test_a_self_referring_alias_is_refused(tmp_path):
    path = tmp_path / "cycle.yaml"
    path.write_text("model: &a\n  x: *a\n")
    with pytest.raises(BadInputError, match="refers to a value that contains it"):
        read_mapping(path)


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("date.yaml", "notes: [2001-13-01]\n", r"a value cannot be read \(month must be in 1..12\)"),
        ("tag.yaml", "notes: !!int abc\n", "a value cannot be read"),
        ("digits.yaml", "model: {d_model: " + "1" * 5000 + "}\n", "more than 4,300 digits"),
        ("digits.json", '{"model": {"d_model": ' + "1" * 5000 + "}}", "more than 4,300 digits"),
        ("deep.yaml", "model: " + "[" * 100_000 + "]" * 100_000, "malformed YAML|nested too deeply"),
        ("deep.json", '{"model": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
        ("latin1.yaml", "name: caf\xe9\n", r"not UTF-8 text \(byte 9 cannot be decoded\): save it as UTF-8$"),
        # trial 334 #13: "malformed YAML: cannot parse", with no place and no fix
        ("escape.yaml", "model:\n  d_model: 64\x1b\n", "at line 2, column 14: character U[+]001B is not allowed"),
    ],
)
def test_values_a_parser_cannot_convert_are_bad_input(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(BadInputError, match=message) as info:
        read_mapping(path)
    assert "\n" not in str(info.value) and len(str(info.value)) < 300


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_a_utf8_byte_order_mark_is_accepted(tmp_path, suffix):
    path = tmp_path / f"bom{suffix}"
    path.write_bytes(b"\xef\xbb\xbf" + b'{"model": {"d_model": 64}}')
    assert read_mapping(path) == {"model": {"d_model": 64}}


def test_a_large_yaml_config_is_read_by_the_c_loader(tmp_path, monkeypatch):
    """libyaml's loader, not the pure-Python one (about 15 s on this file; 2 s with libyaml): checked by the loader
    class, not a clock, which a loaded CI machine ran past (3.19 s against a 3 s bound)."""
    yaml = pytest.importorskip("yaml")
    if not hasattr(yaml, "CSafeLoader"):
        pytest.skip("PyYAML built without libyaml")
    path = tmp_path / "large.yaml"
    notes = "".join(f"  - note number {i} about this model\n" for i in range(60_000))  # about 2 MiB
    path.write_text("model: {d_model: 64}\nnotes:\n" + notes)
    loaders = []
    load = yaml.load
    monkeypatch.setattr(yaml, "load", lambda text, Loader: loaders.append(Loader) or load(text, Loader=Loader))
    data = read_mapping(path)
    assert len(data["notes"]) == 60_000 and data["notes"][-1] == "note number 59999 about this model"
    assert len(loaders) == 1 and issubclass(loaders[0], yaml.CSafeLoader)


def test_paths_that_cannot_be_opened_are_bad_input(tmp_path, monkeypatch):
    long_name = tmp_path / ("a" * 300 + ".yaml")
    with pytest.raises(BadInputError, match=r"cannot open it \(File name too long\)") as info:
        read_mapping(long_name)
    assert len(str(info.value)) < 300

    locked = tmp_path / "locked" / "c.yaml"

    def refuse(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(type(locked), "stat", refuse)  # as for a folder without search permission (even as root)
    with pytest.raises(BadInputError, match=r"locked/c.yaml: cannot open it \(Permission denied\)"):
        read_mapping(locked)


def test_a_path_with_a_newline_is_quoted_on_one_line(tmp_path):
    path = tmp_path / "two\nlines.yaml"
    with pytest.raises(BadInputError) as info:
        read_mapping(path)
    assert "\n" not in str(info.value) and "two\\nlines.yaml" in str(info.value)


def test_thousands_of_bad_fields_make_one_short_line():
    data = {"model": {f"unknown_{i}": i for i in range(3000)}}
    with pytest.raises(BadInputError) as info:
        parse_config(data, "c.yaml")
    text = str(info.value)
    assert len(text) < 600 and "more" in text and "\n" not in text


def test_a_million_plain_values_are_refused_as_they_are_read(tmp_path, monkeypatch):
    """Issue 25: 1.8 million plain values (3.6 MB, under the size bound) were built first (7 s), then refused with a
    message about aliases the file does not have. They are now counted from the parser's events, and refused at
    the bound before the document is built: the loader that builds it is never called."""
    import yaml

    path = tmp_path / "many.yaml"
    path.write_text("notes: [" + ",".join(["1"] * 1_800_000) + "]\n")

    def never(*args, **kwargs):
        raise AssertionError("the document was built")

    monkeypatch.setattr(yaml, "load", never)
    with pytest.raises(BadInputError, match=r"more than 1,000,000 values \(a config file holds a few thousand\)"):
        read_mapping(path)


def test_values_under_the_bound_are_read_whole(tmp_path):
    """Control: 999,990 values of notes are read (the counter does not refuse what it should not)."""
    path = tmp_path / "notes.yaml"
    path.write_text("notes: [" + ",".join(["1"] * 999_990) + "]\n")
    assert len(read_mapping(path)["notes"]) == 999_990


def test_an_exponent_without_a_dot_is_a_float_as_in_json(tmp_path):
    """``norm_eps: 1e-6`` (config.json's ``1e-06`` copied over) is the float YAML 1.2 and JSON say, not the string
    PyYAML's YAML 1.1 makes of it; with a dot it always was one."""
    path = tmp_path / "eps.yaml"
    path.write_text("a: 1e-6\nb: 1.0e-6\nc: -2E+3\nd: 1e\ne: '1e-6'\n")
    assert read_mapping(path) == {"a": 1e-6, "b": 1e-6, "c": -2000.0, "d": "1e", "e": "1e-6"}


def test_yaml_1_1_octal_and_base_60_numbers_are_not_read_as_numbers(cli, tmp_path):
    """Trial 387 #2: a hand-edited ``n_layers: 010`` was read as octal 8 and ``seq_len: 1:00`` as base-60 60, both
    with exit 0. They stay the strings they are, which the schema refuses in one line; plain, hex, underscored and
    dotted numbers read as before (the control)."""
    path = tmp_path / "numbers.yaml"
    path.write_text("a: 010\nb: 1:00\nc: 1:30.5\nd: 8\ne: 0x10\nf: 1_000\ng: 1.5\nh: -3\ni: 0\n")
    assert read_mapping(path) == {"a": "010", "b": "1:00", "c": "1:30.5", "d": 8, "e": 16, "f": 1000, "g": 1.5,
                                  "h": -3, "i": 0}  # fmt: skip
    design = tmp_path / "design.yaml"
    assert cli.run("recommend", "--params", "10M", "--seq", "2048", "--out", str(design)).exit_code == 0
    text = design.read_text()
    layers = next(line for line in text.splitlines() if line.strip().startswith("n_layers:"))
    design.write_text(text.replace(layers, layers.split(":")[0] + ": 010", 1))
    refused = cli.run("check", str(design))
    assert refused.exit_code == 2 and "n_layers" in refused.stderr and "Traceback" not in refused.output
