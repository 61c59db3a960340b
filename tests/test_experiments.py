"""`mha experiment mqa|mla --quick` (heads: test_experiment_heads.py): output structure and invariants, never
learned values."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
import torch

from mha_cli.core.errors import EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OUTPUT_FAILED
from mha_cli.core.params import count_params
from mha_cli.core.schemas import MLASpec, ModelSpec
from mha_cli.experiments.common import command_line, typed_command
from mha_cli.experiments.data import evaluation_windows, load_pydoc_corpus
from mha_cli.experiments.lm import build_lm, expected_parameters, n_parameters

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def run_quick(cli, name: str, out_dir: Path, *extra: str) -> dict:
    """Run one quick experiment through the CLI and return its JSON result."""
    return cli.json("experiment", name, "--quick", "--device", "cpu", "--out-dir", str(out_dir), *extra)


def assert_outputs_written(data: dict, out_dir: Path, name: str) -> None:
    files = data["files"]
    assert Path(files["report"]) == out_dir / "report.md"
    assert Path(files["plot"]) == out_dir / f"{name}.png"
    report = Path(files["report"]).read_text()
    command = f"mha experiment {name} --quick --seed 0 --device cpu --out-dir {out_dir}"
    assert data["command"] == command
    assert f"```\n{command}\n```" in report.split("## Setup")[0]  # the command heads the report
    assert f"torch {torch.__version__}" in report and "deterministic algorithms on" in report
    assert Path(files["plot"]).read_bytes()[:8] == PNG_SIGNATURE
    assert json.loads(Path(files["results"]).read_text()) == data  # the file is what --json printed


# mqa --------------------------------------------------------------------------------------------


def test_mqa_quick_measured_equals_computed(cli, tmp_path):
    result = cli.run("experiment", "mqa", "--quick", "--device", "cpu", "--out-dir", str(tmp_path), "--json")
    assert result.exit_code == 0 and result.stderr == ""  # no progress bar off a terminal (trial 260 #7)
    data = json.loads(result.stdout)
    assert_outputs_written(data, tmp_path, "mqa")
    s = data["settings"]
    assert s["seq_len"] == 2048 and s["kv_dtype"] == "bf16"
    assert [r["variant"] for r in data["rows"]] == ["MHA", "GQA", "MQA"]
    assert [r["n_kv_heads"] for r in data["rows"]] == [s["n_heads"], s["gqa_kv_heads"], 1]
    for row in data["rows"]:
        # K and V, n_kv heads of head_dim values, 2 bytes each (bf16), N tokens, every layer
        expected = 2 * row["n_kv_heads"] * s["head_dim"] * 2 * s["seq_len"] * s["n_layers"]
        assert row["kv_bytes_measured"] == row["kv_bytes_computed"] == expected
        assert row["params_measured"] == row["params_computed"]
        assert row["attention_params_measured"] == row["attention_params_computed"]
        q_and_o = 2 * s["d_model"] * s["n_heads"] * s["head_dim"]
        assert row["attention_params_measured"] == q_and_o + 2 * s["d_model"] * row["n_kv_heads"] * s["head_dim"]
        assert row["kv_fraction_of_mha"] == row["n_kv_heads"] / s["n_heads"]
        # the control, a calculator that reads every model as MHA, is right for MHA only
        assert row["kv_bytes_if_gqa_ignored"] == data["rows"][0]["kv_bytes_measured"]
        assert (row["kv_bytes_if_gqa_ignored"] == row["kv_bytes_measured"]) == (row["variant"] == "MHA")
    assert data["all_match"] is True and data["control_refuted"] is True
    report = Path(data["files"]["report"]).read_text()
    assert "ignores GQA" in report and "refutes it" in report and "do not depend on the seed" in report


# Outputs, options, building blocks -------------------------------------------------------------


def test_existing_outputs_need_force(cli, tmp_path):
    report = tmp_path / "report.md"
    report.write_text("an earlier report\n")
    result = cli.run("experiment", "mqa", "--quick", "--device", "cpu", "--out-dir", str(tmp_path))
    assert result.exit_code == EXIT_BAD_INPUT
    assert "report.md exists: pass --force" in result.output
    assert report.read_text() == "an earlier report\n"
    assert not (tmp_path / "mqa.png").exists()  # refused before running, nothing written
    data = run_quick(cli, "mqa", tmp_path, "--force")
    assert report.read_text().startswith("# Experiment") and data["all_match"]


def test_unknown_device_is_bad_input(cli, tmp_path):
    result = cli.run("experiment", "heads", "--quick", "--device", "tpu", "--out-dir", str(tmp_path / "x"))
    assert result.exit_code == EXIT_BAD_INPUT
    assert "unknown device 'tpu'" in result.output
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize(
    "spec",
    [
        ModelSpec(d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=50, d_ff=48, position_embeddings=16),
        ModelSpec(
            d_model=32,
            n_layers=1,
            n_heads=4,
            vocab_size=50,
            d_ff=48,
            mlp="plain",
            mlp_bias=True,
            norm="layernorm",
            tied_embeddings=True,
            qkv_bias=True,
            o_bias=True,
        ),
        ModelSpec(
            d_model=32,
            n_layers=2,
            n_heads=4,
            vocab_size=50,
            d_ff=48,
            mla=MLASpec(kv_lora_rank=8, qk_rope_head_dim=4, qk_nope_head_dim=8, v_head_dim=8, q_lora_rank=12),
        ),
    ],
    ids=["gqa-untied-positions", "mha-plain-layernorm-tied-biases", "mla-q-lora"],
)
def test_experiment_lm_parameters_match_count_params_with_and_without_attention(spec):
    model = build_lm(spec)
    assert n_parameters(model) == count_params(spec).total == expected_parameters(spec)
    logits = model(torch.zeros(2, 5, dtype=torch.long))
    assert logits.shape == (2, 5, spec.embeddings.vocab_size)
    bare = build_lm(spec, attention=False)
    assert n_parameters(bare) == expected_parameters(spec, attention=False) < n_parameters(model)


def test_pydoc_corpus_split_is_disjoint_and_whole():
    from pydoc_data.topics import topics

    corpus = load_pydoc_corpus()
    assert corpus.n_train_topics + corpus.n_validation_topics == len(topics)
    assert corpus.n_validation_topics == -(-len(topics) // 10)
    separators = 2 * (len(topics) - 2)  # "\n\n" between topics within each split
    total = sum(len(text.encode("utf-8")) for text in topics.values())
    assert len(corpus.train) + len(corpus.validation) == total + separators
    inputs, targets = evaluation_windows(corpus.validation, 8, 4)
    assert torch.equal(inputs[:, 1:], targets[:, :-1])


# Review fixes: output folder, recorded command, smoke-run caveat, plots, terminal width ---------


def test_an_out_dir_that_cannot_be_made_or_is_a_file_is_one_line_exit_2(cli, tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("not a folder\n")
    for out_dir, message in [
        (afile, f"--out-dir {afile} is a file, not a folder: pass a folder"),
        (afile / "sub", f"cannot create --out-dir {afile / 'sub'} (Not a directory): pass a writable folder"),
    ]:
        result = cli.run("experiment", "mqa", "--quick", "--device", "cpu", "--out-dir", str(out_dir))
        assert result.exit_code == EXIT_BAD_INPUT, result.output
        assert result.output.strip() == f"error: {message}"


def test_the_command_is_recorded_as_typed(cli, tmp_path, monkeypatch):
    typed = ["experiment", "mqa", "--quick", "--out-dir", str(tmp_path), "--device", "cpu", "--force"]
    monkeypatch.setattr(sys, "argv", ["/home/me/.venv/bin/mha", *typed])
    data = cli.json(*typed)
    assert data["command"] == shlex.join(["mha", *typed])  # what was typed, --force included
    assert f"```\n{data['command']}\n```" in (tmp_path / "report.md").read_text()


def test_typed_command_normalises_the_program_and_falls_back_to_the_options():
    argv = ["/repo/mha_cli/__main__.py", "experiment", "heads", "--seed", "3"]
    assert typed_command("heads", argv) == "mha experiment heads --seed 3"
    assert typed_command("heads", ["pytest", "-k", "experiment", "tests/"]) is None
    rebuilt = command_line("mla", quick=True, seed=1, device="cpu", out_dir=None, force=True, argv=["pytest"])
    assert rebuilt == "mha experiment mla --quick --seed 1 --device cpu --force"


def test_mqa_plot_units_come_from_the_data_and_the_table_fits_80_columns(cli, tmp_path):
    from rich.console import Console

    from mha_cli.cli.experiment_cmd import render_mqa
    from mha_cli.experiments.mqa import MqaResult, mqa_figure

    result = MqaResult.model_validate(run_quick(cli, "mqa", tmp_path))
    params, cache = mqa_figure(result).axes
    assert max(r.attention_params_measured for r in result.rows) == 16_384  # quick: 4 x 64 x 64
    assert params.get_ylabel() == "attention parameters per layer (thousands)"
    assert max(bar.get_height() for bar in params.patches) == pytest.approx(16.384)
    assert cache.get_ylabel() == "MiB" and max(bar.get_height() for bar in cache.patches) == 1.0  # 1,048,576 B
    # the control is drawn beside the measurement (trial 262 #6: only the report had it): MHA's bytes for every row
    labels = [text.get_text() for text in cache.get_legend().get_texts()]
    assert labels == ["computed", "measured", "control: GQA ignored"]
    assert [bar.get_height() for bar in cache.containers[2]] == [1.0, 1.0, 1.0]
    figure = mqa_figure(result)
    assert figure.get_suptitle().startswith("quick run (--quick)")  # the smoke-run banner, as heads and mla
    assert mqa_figure(result.model_copy(update={"quick": False})).get_suptitle() == ""
    console = Console(record=True, width=80)
    render_mqa(console, result)
    text = console.export_text()
    assert "…" not in text and "1,048,576" in text
    assert all(len(line.rstrip()) <= 80 for line in text.splitlines())


@pytest.mark.parametrize("stop", [KeyboardInterrupt, RuntimeError], ids=["interrupted", "failed"])
def test_a_run_that_stops_removes_the_folders_it_made(cli, tmp_path, monkeypatch, stop):
    """An interrupted or failed run left its empty --out-dir (and any parent it made) behind (noted last session); a
    folder that was there before stays, and so does anything the run wrote."""
    import mha_cli.experiments.mqa as mqa

    def stops(**_: object) -> None:
        raise stop()

    monkeypatch.setattr(mqa, "run_mqa", stops)
    made = tmp_path / "new" / "deeper"
    result = cli.run("experiment", "mqa", "--quick", "--device", "cpu", "--out-dir", str(made))
    assert result.exit_code in (EXIT_INTERRUPTED, EXIT_INTERNAL), result.output
    assert list(tmp_path.iterdir()) == []  # new/ and new/deeper/ removed; tmp_path, there before, kept
    kept = tmp_path / "kept"
    kept.mkdir()
    assert cli.run("experiment", "mqa", "--quick", "--out-dir", str(kept / "sub")).exit_code != 0
    assert [path.name for path in tmp_path.iterdir()] == ["kept"] and list(kept.iterdir()) == []


def test_a_folder_that_cannot_be_made_leaves_no_parent_behind(cli, tmp_path):
    """--out-dir new/<a name too long>: mkdir made new/, failed at the long name, and new/ stayed (review 263 #13).
    The system refusing the folder is exit 74, as for --out (trial 374 #4: a folder without permission was exit 2)."""
    result = cli.run(
        "experiment", "mqa", "--quick", "--device", "cpu", "--out-dir", str(tmp_path / "new" / ("x" * 300))
    )
    assert result.exit_code == EXIT_OUTPUT_FAILED and "cannot create --out-dir" in result.output, result.output
    assert list(tmp_path.iterdir()) == []
