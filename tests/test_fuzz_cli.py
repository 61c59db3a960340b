"""Property-based tests over the CLI and the parsers (bounded: a few seconds). The longer release run is
``python benchmarks/fuzz_cli.py --examples 2000`` (docs/input-limits.md), with the same generator and checks."""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mha_cli.core.config_io import parse_config, read_mapping
from mha_cli.core.errors import BadInputError
from mha_cli.core.quantities import parse_byte_size, parse_param_count, parse_token_count
from mha_cli.core.targets import resolve_target

_spec = importlib.util.spec_from_file_location("fuzz_cli", Path(__file__).parent.parent / "benchmarks" / "fuzz_cli.py")
fuzz_cli = sys.modules.setdefault("fuzz_cli", importlib.util.module_from_spec(_spec))  # dataclasses look it up
_spec.loader.exec_module(fuzz_cli)

QUICK = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])  # fmt: skip


def one_short_line(exc: BadInputError) -> bool:
    text = str(exc)
    return "\n" not in text and len(text) <= 1000  # 5 fields named at most, each value quoted briefly


@QUICK
@given(st.one_of(st.text(max_size=80), st.sampled_from(fuzz_cli.HOSTILE_TEXT), st.integers().map(str)))
def test_quantity_parsers_return_a_positive_int_or_one_short_line(text):
    for parse in (parse_param_count, parse_token_count, parse_byte_size):
        try:
            value = parse(text)
        except BadInputError as exc:
            assert one_short_line(exc)
        else:
            assert isinstance(value, int) and value > 0


@QUICK
@given(st.one_of(st.text(max_size=80), st.sampled_from(fuzz_cli.HOSTILE_TEXT + fuzz_cli.TARGETS)))
def test_target_specs_resolve_or_give_one_short_line(spec):
    start = time.perf_counter()
    try:
        resolved = resolve_target(spec)
    except BadInputError as exc:
        assert one_short_line(exc)
    else:
        assert 1 <= resolved.n_devices <= 4096
    assert time.perf_counter() - start < 2.0


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=20)),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)


@QUICK
@given(st.dictionaries(st.sampled_from(["model", "deployment", "notes", "schema_version", "extra"]), json_values),
       st.dictionaries(st.sampled_from([*fuzz_cli.SMALL_MODEL, "n_kv_heads", "mla", "moe", "layer_pattern"]),
                       json_values))  # fmt: skip
def test_any_mapping_validates_or_gives_one_short_line(data, model_fields):
    if "model" in data and isinstance(data["model"], dict):
        data["model"] = {**fuzz_cli.SMALL_MODEL, **model_fields}
    try:
        parse_config(data, "c.yaml")
    except BadInputError as exc:
        assert one_short_line(exc)


@QUICK
@given(st.binary(max_size=200) | st.sampled_from([d.encode() for d in fuzz_cli.RAW_DOCUMENTS]),
       st.sampled_from([".yaml", ".json"]))  # fmt: skip
def test_any_file_reads_as_a_mapping_or_gives_one_short_line(tmp_path_factory, data, suffix):
    path = tmp_path_factory.mktemp("read") / f"c{suffix}"
    path.write_bytes(data)
    try:
        assert isinstance(read_mapping(path), dict)
    except BadInputError as exc:
        assert one_short_line(exc)


@settings(max_examples=40, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
@given(fuzz_cli.examples())
def test_generated_command_lines_keep_every_promise(tmp_path_factory, example):
    """Documented exit code, one error line and empty stdout on failure, JSON on --json, --out whole or absent."""
    code, problem = fuzz_cli.check_example(example, tmp_path_factory.mktemp("fuzz"))
    assert problem is None, (example.args, problem)
    assert code in fuzz_cli.DOCUMENTED_EXITS


@pytest.mark.parametrize(
    "args",
    [
        ["kv", "gpt2", "--seq", "1" * 20_000 + "!"],
        ["targets", "1xa" + " " * 2000 + "b"],
        ["probe", "a b", "--seed", "-1"],
    ],
    ids=["long-seq", "long-target", "probe-seed"],
)
def test_the_fuzz_checks_fail_on_a_broken_promise(tmp_path, monkeypatch, args):
    """A control: the checks catch an error line printed twice (so a clean run means something)."""
    from mha_cli.cli import output

    real = output.print_error
    monkeypatch.setattr(output, "print_error", lambda message: (real(message), real(message)))
    monkeypatch.setattr("mha_cli.cli.app.print_error", output.print_error)
    code, problem = fuzz_cli.check_example(fuzz_cli.Example(category="control", args=args), tmp_path)
    assert code == 2 and "without exactly one error line" in problem
