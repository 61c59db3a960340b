"""Every example config in outputs/configs is exactly what its header command writes today."""

import shlex

import pytest

from tests.conftest import REPO

CONFIGS = sorted((REPO / "outputs" / "configs").glob("*.yaml"))
HEADER = "# written by: "


def test_there_are_example_configs():
    assert len(CONFIGS) >= 3


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_config_is_what_its_header_command_writes(cli, path, tmp_path, monkeypatch):
    committed = path.read_bytes()
    first = committed.decode("utf-8").splitlines()[0]
    assert first.startswith(HEADER), f"{path.name}: no `{HEADER}mha recommend ...` line"
    words = shlex.split(first.removeprefix(HEADER))
    assert words[:2] == ["mha", "recommend"] and "--out" in words
    out = words[words.index("--out") + 1]
    # Run the same command line in a scratch folder, so the header it writes (with its relative --out) is the same.
    monkeypatch.chdir(tmp_path)
    (tmp_path / out).parent.mkdir(parents=True, exist_ok=True)
    result = cli.run(*words[1:])
    assert result.exit_code == 0, result.output
    assert (tmp_path / out).read_bytes() == committed, f"stale: run `{first.removeprefix(HEADER)} --force`"
