"""`mha experiment heads|mqa|mla --quick`: output structure and invariants, never learned values."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
import torch

from mha_cli.core.errors import EXIT_BAD_INPUT
from mha_cli.core.params import count_params
from mha_cli.core.schemas import MLASpec, ModelSpec
from mha_cli.experiments.common import SMOKE_CAVEAT, command_line, typed_command
from mha_cli.experiments.data import IGNORE_INDEX, copy_task_batch, evaluation_windows, load_pydoc_corpus
from mha_cli.experiments.heads import judge_head_counts, steps_to_solve
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


# heads ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def heads_result(tmp_path_factory) -> tuple[dict, Path]:
    from tests.conftest import Cli

    out_dir = tmp_path_factory.mktemp("heads")
    return run_quick(Cli(), "heads", out_dir), out_dir


def test_heads_quick_writes_every_output(heads_result):
    data, out_dir = heads_result
    assert_outputs_written(data, out_dir, "heads")
    settings = data["settings"]
    assert [p["n_heads"] for p in data["points"]] == [1, 2, 4, 8, 16]
    assert [p["head_dim"] for p in data["points"]] == [64, 32, 16, 8, 4]  # d_model 64 split n ways
    assert len(data["runs"]) == 5 * len(settings["seeds"])
    assert all(len(run["train_loss"]) == settings["steps"] for run in data["runs"])
    # Parameters of a 1-layer model with learned positions: attention 4 d^2 whatever the head count.
    assert len({run["n_parameters"] for run in data["runs"]}) == 1
    assert data["chance_loss"] == pytest.approx(float(torch.log(torch.tensor(16.0))))
    judged = judge_head_counts(
        [p["n_heads"] for p in data["points"]],
        [p["mean_eval_loss"] for p in data["points"]],
        settings["tolerance_nats"],
        measure="held-out loss",
    )
    assert data["judgement"] == judged.model_dump()
    assert f"Final loss, **{judged.verdict}**" in Path(data["files"]["report"]).read_text()
    for run in data["runs"]:
        assert run["steps_to_solve"] == steps_to_solve(run["train_loss"], settings["solved_nats"])
    unsolved = any(p["mean_steps_to_solve"] is None for p in data["points"])
    assert (data["speed_judgement"] is None) == unsolved


def test_heads_quick_is_deterministic_on_cpu(cli, heads_result, tmp_path):
    first, _ = heads_result
    again = run_quick(cli, "heads", tmp_path)
    assert [run["train_loss"] for run in again["runs"]] == [run["train_loss"] for run in first["runs"]]
    assert again["points"] == first["points"]


@pytest.mark.parametrize(
    ("losses", "verdict", "enough"),
    [
        ([2.0, 1.5, 1.0, 0.5, 0.1], "help", 16),
        ([2.0, 1.0, 0.5, 0.51, 0.52], "plateau", 4),
        ([2.0, 0.5, 0.6, 0.9, 1.2], "help-then-hurt", 2),
        ([0.5, 0.52, 0.7, 0.9, 1.2], "hurt", 1),
        ([0.50, 0.52, 0.49, 0.51, 0.53], "no-effect", 1),
    ],
)
def test_judge_head_counts(losses, verdict, enough):
    judged = judge_head_counts([1, 2, 4, 8, 16], losses, tolerance=0.05)
    assert (judged.verdict, judged.enough_heads) == (verdict, enough)
    assert judged.best_heads == [1, 2, 4, 8, 16][losses.index(min(losses))]


def test_steps_to_solve_uses_the_trailing_mean():
    losses = [1.0] * 10 + [0.0] * 10  # the 10-step mean drops below 0.5 once 6 zeros are in the window
    assert steps_to_solve(losses, 0.5) == 16
    assert steps_to_solve(losses, 0.0) is None


# mqa --------------------------------------------------------------------------------------------


def test_mqa_quick_measured_equals_computed(cli, tmp_path):
    data = run_quick(cli, "mqa", tmp_path)
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
    assert logits.shape == (2, 5, spec.vocab_size)
    bare = build_lm(spec, attention=False)
    assert n_parameters(bare) == expected_parameters(spec, attention=False) < n_parameters(model)


def test_copy_task_scores_only_the_copy():
    inputs, targets = copy_task_batch(3, 5, 7, torch.Generator().manual_seed(0))
    assert inputs.shape == targets.shape == (3, 10)
    assert (inputs[:, 5] == 7).all()  # the separator
    assert (targets[:, :5] == IGNORE_INDEX).all()
    assert torch.equal(targets[:, 5:], inputs[:, :5])  # after the separator, the first half again


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


def test_quick_runs_say_they_are_smoke_runs(heads_result):
    from rich.console import Console

    from mha_cli.cli.experiment_cmd import render_heads
    from mha_cli.experiments.heads_models import HeadsResult

    data, out_dir = heads_result
    assert data["quick"] is True
    report = (out_dir / "report.md").read_text()
    assert report.startswith("# Experiment: number of heads at fixed width (copy task) (smoke run)")
    assert SMOKE_CAVEAT in report.split("Command:")[0]
    console = Console(record=True, width=200)
    render_heads(console, HeadsResult.model_validate(data))
    text = console.export_text()
    assert text.startswith(SMOKE_CAVEAT) and "(smoke run, not evidence) :" in text


def _tick_texts(axes) -> list[str]:
    return [t.get_text() for t in axes.get_yticklabels() + axes.get_yticklabels(minor=True)]


def test_heads_plot_drops_an_unjudged_speed_panel_and_uses_plain_log_ticks(heads_result):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from mha_cli.experiments.heads import judge_speed
    from mha_cli.experiments.heads_models import HeadsPoint, HeadsResult
    from mha_cli.experiments.heads_plot import heads_figure

    data, _ = heads_result
    result = HeadsResult.model_validate(data)
    unjudged = heads_figure(result.model_copy(update={"speed_judgement": None}))
    assert len(unjudged.axes) == 2
    FigureCanvasAgg(unjudged).draw()
    for axes in unjudged.axes:
        labels = [text for text in _tick_texts(axes) if text]
        assert labels and not any("times" in text or "^" in text for text in labels), labels
    points = [
        HeadsPoint.model_validate(p | {"mean_steps_to_solve": 10.0 * (i + 1)}) for i, p in enumerate(data["points"])
    ]
    judged = result.model_copy(update={"points": points, "speed_judgement": judge_speed(points, 0.1)})
    assert [a.get_title() for a in heads_figure(judged).axes][2].startswith("Speed: ")


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
    figure = mqa_figure(result)
    assert figure.get_suptitle().startswith("quick run (--quick)")  # the smoke-run banner, as heads and mla
    assert mqa_figure(result.model_copy(update={"quick": False})).get_suptitle() == ""
    console = Console(record=True, width=80)
    render_mqa(console, result)
    text = console.export_text()
    assert "…" not in text and "1,048,576" in text
    assert all(len(line.rstrip()) <= 80 for line in text.splitlines())
