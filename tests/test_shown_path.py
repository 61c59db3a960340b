"""A path in an error line keeps the part a typo is in: the file name and the first missing folder are never cut;
only folders in the middle of a long path are left out (issue 38: a mistyped path's name was cut off)."""

from __future__ import annotations

import pytest

from mha_cli.core.errors import EXIT_BAD_INPUT, NAME_MAX, quoted_path, shown_path

TYPO = "llama-3-8b-confgi.json"


def test_a_long_path_keeps_its_file_name_and_first_missing_folder():
    missing_root = "/no-such-root-for-mha-tests/" + "a" * 100 + "/" + "b" * 100 + "/" + TYPO
    assert quoted_path(missing_root) == f"'/no-such-root-for-mha-tests/.../{TYPO}' ({len(missing_root):,} characters)"
    assert shown_path(missing_root) == quoted_path(missing_root)


def test_folders_nearest_the_file_are_kept_while_they_fit(tmp_path):
    near, far = "n" * 30, "f" * 100
    (tmp_path / far / near).mkdir(parents=True)
    path = str(tmp_path / far / near / TYPO)
    shown = quoted_path(path)
    assert shown.startswith(f"'{str(tmp_path).split('/')[0]}/") and shown.endswith(
        f"/.../{near}/{TYPO}' ({len(path):,} characters)"
    )
    assert len(shown) < len(path)
    typo_in_a_folder = str(tmp_path / far / "mising" / ("c" * 100) / TYPO)
    assert f"/mising/.../{TYPO}'" in quoted_path(typo_in_a_folder)  # the first folder that is not there stays


def test_short_and_unprintable_paths_and_names_no_file_can_have():
    assert shown_path("configs/llama.yaml") == "configs/llama.yaml"
    assert shown_path("a\nb.yaml") == "'a\\nb.yaml'"
    assert quoted_path("deepseek-v3.jsn") == "'deepseek-v3.jsn'"
    name = "x" * 200  # a long name, but one a file may have: whole
    assert quoted_path(name) == repr(name)
    too_long = "x" * (NAME_MAX + 1)  # no file has this name: cut like any long input
    assert quoted_path(too_long) == repr("x" * 120) + f"... ({NAME_MAX + 1:,} characters)"
    assert quoted_path("/" * 20_000) == repr("/" * 120) + "... (20,000 characters)"  # longer than any path


@pytest.fixture
def long_folder(tmp_path):
    """An existing folder whose path is over 120 characters long."""
    folder = tmp_path / ("a" * 60) / ("b" * 60)
    folder.mkdir(parents=True)
    return folder


@pytest.mark.parametrize(
    ("args", "name"),
    [
        (["kv", "{folder}/" + TYPO], TYPO),
        (["check", "{folder}/tiny-confgi.yaml"], "tiny-confgi.yaml"),
        (["verify", "{folder}/tiny-confgi.yaml"], "tiny-confgi.yaml"),
        (["plan", "{folder}/tiny-confgi.yaml", "--target", "h100", "--tp", "1", "--closed-form"], "tiny-confgi.yaml"),
        (["plan", "llama-3-8b", "--target", "h100", "--tp", "1", "--lengths-file", "{folder}/lenghts.txt"],
         "lenghts.txt"),
        (["calibrate", "--from", "{folder}/reslts.json", "--target", "h100", "--model", "llama-3-8b"], "reslts.json"),
        (["kv", "llama-3-8b", "--target", "h100", "--profile", "{folder}/profle.json"], "profle.json"),
        (["kv", "llama-3-8b", "--plot", "{folder}/kv.jpg"], "kv.jpg"),
    ],
    ids=["kv", "check", "verify", "plan", "lengths-file", "calibrate-from", "profile", "plot"],
)  # fmt: skip
def test_commands_name_the_mistyped_file_whole(cli, long_folder, args, name):
    result = cli.run(*(arg.replace("{folder}", str(long_folder)) for arg in args))
    assert result.exit_code == EXIT_BAD_INPUT, result.output
    assert result.stderr.count("\n") == 1 and f"/{name}' (" in result.stderr, result.stderr


def test_a_short_mistyped_name_is_shown_whole(cli):
    result = cli.run("kv", "deepseek-v3.jsn")
    assert result.exit_code == EXIT_BAD_INPUT
    assert result.stderr.startswith(
        "error: 'deepseek-v3.jsn' is neither a preset nor a file: did you mean deepseek-v3,"
    )
