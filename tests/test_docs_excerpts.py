"""Every docs/ page's console excerpts of the commands that need no torch are what those commands print today.

The parsing, the run and the matching rule are ``tests/console_excerpts.py``'s (README's test uses the same). No
console block of docs/ is generated (``python -m mha_cli.cli.docs_gen`` writes options, JSON keys and support
tables only), so each one is a hand-written promise checked here.
"""

import pytest

from tests.console_excerpts import NO_TORCH, REPO, TORCH, excerpts, missing, run

DOCS = REPO / "docs"
ALL = [
    (page.relative_to(REPO).as_posix(), excerpt)
    for page in sorted(DOCS.rglob("*.md"))
    for excerpt in excerpts(page.read_text(encoding="utf-8"))
]
CHECKED = [(page, excerpt) for page, excerpt in ALL if excerpt.subcommand in NO_TORCH]


def test_every_excerpt_is_of_a_command_known_to_need_torch_or_not():
    assert {excerpt.subcommand for _, excerpt in ALL} <= NO_TORCH | TORCH


def test_every_command_without_torch_has_a_checked_excerpt_on_its_page():
    pages = {page for page, _ in CHECKED}
    assert {f"docs/commands/{name}.md" for name in NO_TORCH} <= pages


@pytest.mark.parametrize(
    ("page", "excerpt"), CHECKED, ids=[f"{page}:{excerpt.command[:50]}" for page, excerpt in CHECKED]
)
def test_docs_excerpt_is_what_the_command_prints(page, excerpt, cli, tmp_path, monkeypatch):
    output, exit_code, shown = run(excerpt, cli, tmp_path, monkeypatch)
    lost = missing(shown, output)
    assert not lost, f"{page} shows lines `{excerpt.command}` no longer prints:\n" + "\n".join(lost)
    if excerpt.exit_code is not None:
        assert exit_code == excerpt.exit_code, f"{page}: `{excerpt.command}` exits {exit_code}, not {excerpt.exit_code}"


OUTPUT = "title\n\n  id   name\n ──────────\n  a    one\n  b    two\nfooter\n"


def test_shown_lines_match_word_for_word_in_order_and_contiguous():
    assert missing(["title", "", "  id   name", " ──────────", "..."], OUTPUT) == []
    assert missing(["...", "  a one", "  b two", "..."], OUTPUT) == []  # columns' spacing collapses
    assert missing(["...", "  b two", "...", "  a one", "..."], OUTPUT) == ["a one"]  # out of order
    assert missing(["...", "  a one", "footer"], OUTPUT) == ["a one footer"]  # not contiguous: a line skipped
    assert missing(["...", " ─────", "..."], OUTPUT) == ["─────"]  # a shorter rule is a stale table


def test_an_excerpt_without_elisions_at_its_ends_shows_the_whole_output():
    assert missing(["title", "..."], OUTPUT) == []
    assert missing(["  a one", "..."], OUTPUT) == ["a one"]  # the output does not start there
    assert missing(["...", "  a one"], OUTPUT) == ["a one"]  # nor end there
    assert missing(["...", "footer"], OUTPUT) == []


def test_echo_exit_code_is_folded_into_the_command_before_it():
    page = "```console\n$ mha check x \\\n    --seq 64k\n...\nFAILED\n$ echo $?\n1\n```\n"
    (excerpt,) = excerpts(page)
    assert (excerpt.command, excerpt.shown, excerpt.exit_code) == ("mha check x  --seq 64k", ["...", "FAILED"], 1)


def test_an_environment_assignment_is_not_the_command(tmp_path):
    (excerpt,) = excerpts("```console\n$ MHA_DATA_DIR=/tmp/mha mha calibrate --from x | head -2\n```\n")
    assert (excerpt.words[:2], excerpt.assignments, excerpt.pipeline[1:]) == (
        ["mha", "calibrate"],
        {"MHA_DATA_DIR": "/tmp/mha"},
        ["head -2"],
    )


def test_a_pipe_the_check_cannot_read_is_refused(cli, tmp_path, monkeypatch):
    (excerpt,) = excerpts("```console\n$ mha targets | grep h100\nh100\n```\n")
    with pytest.raises(ValueError, match="grep h100"):
        run(excerpt, cli, tmp_path, monkeypatch)
