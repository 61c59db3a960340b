"""A path typed empty (``--out-dir "$DIR"`` with it unset) is refused in one line (exit 2), writing nothing: typer
reads "" as the folder '.', so ``experiment --out-dir ""`` wrote its report, plot and JSON into the working folder,
``--out ""`` / ``--plot ""`` were refused as ".: name the file ...", a name the user never typed, and
``calibrate --from ""`` read every result file of the working folder."""

import pytest

from mha_cli.core.errors import EXIT_BAD_INPUT


@pytest.mark.parametrize(
    "args",
    [
        ["experiment", "mqa", "--quick", "--device", "cpu", "--out-dir", ""],
        ["recommend", "--params", "125M", "--out", " "],
        ["kv", "llama-3-8b", "--plot", ""],
        ["plan", "llama-3-8b", "--target", "h100", "--plot", ""],
        ["probe", "a b", "--out", ""],
        ["plan", "llama-3-8b", "--target", "h100", "--lengths-file", ""],
        ["calibrate", "--from", "", "--model", "llama-3-8b", "--target", "h100"],
    ],
    ids=["experiment-out-dir", "recommend-out", "kv-plot", "plan-plot", "probe-out", "plan-lengths", "calibrate-from"],
)
def test_an_empty_output_path_is_refused_and_nothing_is_written(cli, tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    result = cli.run(*args)
    assert result.exit_code == EXIT_BAD_INPUT, result.output
    option = next(arg for arg in args if arg in ("--out-dir", "--out", "--plot", "--lengths-file", "--from"))
    assert result.stderr == f"error: {option} is empty: give a path\n"
    assert result.stdout == "" and list(tmp_path.iterdir()) == []


def test_an_empty_target_name_is_refused_not_read_as_every_target(cli):
    """``mha targets "$GPU"`` with it unset listed every target, exit 0, as if no name were given."""
    for name in ("", " "):
        result = cli.run("targets", name, "--json")
        assert result.exit_code == EXIT_BAD_INPUT and result.stdout == ""
        assert result.stderr == (
            "error: the target name is empty: give an id or alias, or leave it out to list every target\n"
        )


@pytest.mark.parametrize("force", [[], ["--force"]])
def test_a_plot_path_that_is_a_folder_says_so_with_or_without_force(cli, tmp_path, force):
    """``--plot d.png`` on a folder asked for --force, and then said it was a folder (found by newuser trial 239); a
    folder without the ending was told to name it .png (trial 389 #6)."""
    for folder in (tmp_path / "d.png", tmp_path / "plots"):
        folder.mkdir()
        result = cli.run("kv", "llama-3-8b", "--plot", str(folder), *force)
        assert result.exit_code == 2 and result.stderr.endswith("is a folder: name a .png file\n")
