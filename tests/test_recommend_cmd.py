"""`mha recommend` through the CLI: JSON keys scripts rely on, --out, exit codes, bad input."""

import subprocess
import sys

import pytest
import yaml

from mha_cli.core.config_io import parse_config
from mha_cli.core.errors import EXIT_BAD_INPUT, EXIT_CHECK_FAILED
from mha_cli.core.skill_doc import SKILL_PATH
from tests.conftest import REPO

SKILL = REPO / SKILL_PATH


def test_json_has_the_stable_keys(cli):
    data = cli.json("recommend", "--params", "8B", "--seq", "8k", "--target", "h100")
    model = data["model"]
    assert {k: model[k] for k in ("d_model", "n_layers", "n_heads", "n_kv_heads", "head_dim", "variant")} == {
        "d_model": 4096, "n_layers": 32, "n_heads": 32, "n_kv_heads": 8, "head_dim": 128, "variant": "GQA",
    }  # fmt: skip
    assert model["total_params"] == 8_030_261_248
    assert data["kv"]["bytes_per_token"] == 131_072
    assert data["rules_fired"][:2] == ["MHA001", "MHA004"] and "MHA020" in data["rules_fired"]
    assert data["memory"]["fits"] is True and data["roofline"]["decode_bound"] == "memory"


def test_out_writes_a_config_that_kv_reads(cli, tmp_path):
    out = tmp_path / "design.yaml"
    result = cli.run("recommend", "--params", "7B", "--seq", "8192", "--target", "a100", "--out", str(out))
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert text.startswith("# written by: mha recommend --params 7B --seq 8192 --target a100 --out ")
    config = parse_config(yaml.safe_load(text), str(out))
    assert (config.model.d_model, config.model.n_kv_heads, config.deployment.target) == (4096, 8, "a100")
    kv = cli.json("kv", str(out))
    rec = cli.json("recommend", "--params", "7B", "--seq", "8192", "--target", "a100")
    assert kv["bytes_per_token"] == rec["kv"]["bytes_per_token"]
    assert kv["memory"]["max_sequences"] == rec["memory"]["max_sequences"]
    # never overwrite without --force, and nothing half-written
    again = cli.run("recommend", "--params", "1B", "--out", str(out))
    assert again.exit_code == EXIT_BAD_INPUT and out.read_text() == text
    assert cli.run("recommend", "--params", "1B", "--out", str(out), "--force").exit_code == 0
    assert parse_config(yaml.safe_load(out.read_text()), str(out)).model.d_model == 2048


def test_a_plan_that_does_not_fit_is_flagged_and_exit_code_is_documented(cli):
    result = cli.run("recommend", "--params", "70B", "--seq", "128k", "--target", "h100")
    assert result.exit_code == 0 and "DOES NOT FIT" in result.stdout and "4xh100-sxm" in result.stdout
    failing = cli.run("recommend", "--params", "70B", "--seq", "128k", "--target", "h100", "--fail-if-no-fit")
    assert failing.exit_code == EXIT_CHECK_FAILED
    fits = cli.run("recommend", "--params", "8B", "--target", "h100", "--fail-if-no-fit")
    assert fits.exit_code == 0


def test_human_report_has_every_section(cli):
    out = cli.run("recommend", "--params", "7B", "--seq", "8192", "--target", "a100").stdout
    for section in ("Recommended architecture", "Parameters", "KV cache", "Memory plan", "Roofline", "Alternatives",
                    "Rule trace", "init", "test"):  # fmt: skip
        assert section in out


BAD = [
    ["--params", "1K"],
    ["--params", "0"],
    ["--params", "-5B"],
    ["--params", "7B", "--seq", "0"],
    ["--params", "7B", "--target", "nosuchgpu"],
    ["--params", "7B", "--batch", "0"],
    ["--params", "7B", "--priority", "speed"],
    ["--params", "7B", "--variant", "XQA"],
    ["--params", "7B", "--d-model", "100"],
    ["--params", "7B", "--vocab", "0"],
    ["--params", "seven"],
]


@pytest.mark.parametrize("args", BAD, ids=[" ".join(a) for a in BAD])
def test_bad_input_is_one_line_exit_2(cli, args):
    result = cli.run("recommend", *args)
    assert result.exit_code == EXIT_BAD_INPUT, result.output
    assert "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1 and result.stderr.startswith("error:")


@pytest.mark.parametrize(
    "args",
    [["recommend", "--params", "7B", "--json"], ["check", "llama-3-8b", "--json"], ["skill", "--path", str(SKILL)]],
)
def test_recommend_and_check_never_import_torch(args):
    code = (
        "import sys; from mha_cli.cli.app import app\n"
        "try:\n    app(sys.argv[1:])\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    result = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
