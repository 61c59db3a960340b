"""The docs cannot drift: every generated block of ``docs/`` is what the code generates today, and the README stays
short, keeps CI's set-up commands and links only to pages that exist."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest
import yaml

from mha_cli.cli import docs_gen
from mha_cli.cli.docs_gen import REGENERATE, command_tree, json_keys_table, stale_blocks
from mha_cli.core.markdown import read_block, replace_block
from mha_cli.core.record import Record
from tests.conftest import REPO

README = REPO / "README.md"
README_MAX_LINES = 200
LINK = re.compile(r"\]\(([^)#\s]+)(?:#([^)\s]*))?\)")
"""A Markdown link: its target and its #anchor (empty when it has none)."""
FENCE = re.compile(r"^```.*?^```", re.M | re.S)


def anchors(page) -> set[str]:
    """The anchors GitHub gives the headings of ``page``: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#+ (.+)$", FENCE.sub("", page.read_text(encoding="utf-8")), re.M)
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


def test_every_generated_block_is_current():
    stale = stale_blocks()
    assert stale == [], "\n".join(stale)


def test_every_command_has_a_page_with_its_options():
    for name in command_tree().commands:
        page = REPO / "docs" / "commands" / f"{name}.md"
        assert page.is_file(), f"no page for `mha {name}`: add {page.relative_to(REPO)} and run `{REGENERATE}`"
        assert read_block(page.read_text(encoding="utf-8"), "options"), page


def test_a_changed_help_text_makes_its_page_stale(monkeypatch):
    """The control: the committed kv page no longer matches once one option's help differs."""
    tree = command_tree()
    batch = next(param for param in tree.commands["kv"].params if param.name == "batch")
    monkeypatch.setattr(batch, "help", "Concurrent sequences (reworded).")
    assert stale_blocks(tree=tree) == [f"docs/commands/kv.md: block 'options' is stale: run `{REGENERATE}`"]


def test_a_removed_option_makes_its_page_stale():
    tree = command_tree()
    tree.commands["plan"].params = [param for param in tree.commands["plan"].params if param.name != "seed"]
    assert stale_blocks(tree=tree) == [f"docs/commands/plan.md: block 'options' is stale: run `{REGENERATE}`"]


def test_a_new_target_makes_the_supported_page_stale(monkeypatch):
    from mha_cli.core import supported_doc
    from mha_cli.core.targets import load_targets

    targets = dict(load_targets())
    last = list(targets)[-1]
    targets["h100-copy"] = targets[last].model_copy(update={"id": "h100-copy"})
    monkeypatch.setattr(supported_doc, "load_targets", lambda: targets)
    assert stale_blocks() == [f"docs/supported.md: block 'targets' is stale: run `{REGENERATE}`"]


def test_a_page_without_its_block_is_named(tmp_path):
    shutil.copytree(REPO / "docs", tmp_path / "docs")
    page = tmp_path / "docs" / "commands" / "schema.md"
    page.write_text("# `mha schema`\n", encoding="utf-8")
    assert stale_blocks(root=tmp_path) == [
        f"docs/commands/schema.md: no generated block 'options' (add its markers, then run `{REGENERATE}`)"
    ]


def test_check_exits_1_on_a_stale_block_and_write_mends_it(tmp_path, capsys):
    shutil.copytree(REPO / "docs", tmp_path / "docs")
    page = tmp_path / "docs" / "supported.md"
    text = page.read_text(encoding="utf-8")
    page.write_text(replace_block(text, "presets", "an old table\n", REGENERATE), encoding="utf-8")
    assert docs_gen.main(["--check"], root=tmp_path) == 1
    assert f"docs/supported.md: block 'presets' is stale: run `{REGENERATE}`" in capsys.readouterr().err
    assert docs_gen.main([], root=tmp_path) == 0
    assert page.read_text(encoding="utf-8") == text
    assert docs_gen.main(["--check"], root=tmp_path) == 0
    assert docs_gen.main(["--bogus"], root=tmp_path) == 2


def test_replacing_a_block_keeps_the_prose_around_it():
    text = "intro\n<!-- BEGIN GENERATED t: x -->\nold\n<!-- END GENERATED t -->\noutro\n"
    new = replace_block(text, "t", "| a |\n", "cmd")
    assert new.startswith("intro\n") and new.endswith("\noutro\n")
    assert read_block(new, "t") == "| a |\n" and read_block(new, "other") is None
    with pytest.raises(ValueError, match="no generated block 'other'"):
        replace_block(text, "other", "x\n", "cmd")


class _Documented(Record):
    size: int
    """Bytes, exactly."""
    label: str | None = None
    """A name, or null."""


class _Undocumented(Record):
    size: int
    """Bytes."""
    added: int = 0


def test_json_keys_come_with_their_docstrings_and_a_key_without_one_is_refused():
    assert json_keys_table(_Documented).splitlines()[2:] == [
        "| `size` | integer | Bytes, exactly. |",
        "| `label` | string or null | A name, or null. |",
    ]
    with pytest.raises(ValueError, match=r"_Undocumented\.added has no docstring"):
        json_keys_table(_Undocumented)


def test_check_page_documents_every_json_key_check_prints(cli):
    keys = set(cli.json("check", "llama-3-8b", "--target", "h100"))
    block = read_block((REPO / "docs" / "commands" / "check.md").read_text(encoding="utf-8"), "json-keys")
    documented = set(re.findall(r"^\| `([a-z_]+)` \|", block.split("Each of `findings`")[0], re.M))
    assert keys == documented


def test_generating_the_docs_does_not_import_torch():
    code = "import sys; from mha_cli.cli.docs_gen import stale_blocks; stale_blocks(); print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_readme_is_short():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines: move detail to docs/ (at most {README_MAX_LINES})"


def test_readme_keeps_the_commands_ci_runs():
    text = README.read_text(encoding="utf-8")
    setup = 'python3 -m venv .venv && .venv/bin/pip install torch==2.13.0 -e ".[dev]"'
    assert text.count(setup) == 2
    assert ".venv/bin/python -m pytest\n" in text
    assert ".venv/bin/mha recommend --params 7B --seq 8192 --target a100\n" in text


@pytest.mark.parametrize("page", [README, *sorted((REPO / "docs").rglob("*.md"))], ids=lambda p: p.name)
def test_every_relative_link_resolves(page):
    links = [(t, a) for t, a in LINK.findall(page.read_text(encoding="utf-8")) if not re.match(r"[a-z]+:", t)]
    missing = [t for t, _ in links if not (page.parent / t).exists()]
    assert missing == [], f"{page.relative_to(REPO)} links to missing {missing}"
    bad = [f"{t}#{a}" for t, a in links if a and (page.parent / t).is_file() and a not in anchors(page.parent / t)]
    assert bad == [], f"{page.relative_to(REPO)} links to headings that do not exist: {bad}"


def test_anchors_are_read_as_github_writes_them(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("# Measured on this project's CPU\n```\n# not a heading\n```\n## `mha kv` JSON keys\n")
    assert anchors(page) == {"measured-on-this-projects-cpu", "mha-kv-json-keys"}


def test_readme_links_into_docs():
    targets = [target for target, _ in LINK.findall(README.read_text(encoding="utf-8"))]
    assert {"docs/supported.md", "docs/how-numbers-are-computed.md", "docs/validation.md"} <= set(targets)
    assert all((README.parent / t).is_file() for t in targets if t.startswith("docs/"))


def test_every_docs_page_is_in_the_site_navigation():
    """`mkdocs build --strict` (CI) checks links and anchors; a page missing from the nav would only be a note."""

    def pages(nav) -> list[str]:
        items = nav if isinstance(nav, list) else list(nav.values())
        return [page for item in items for page in (pages(item) if not isinstance(item, str) else [item])]

    nav = pages(yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))["nav"])
    on_disk = sorted(path.relative_to(REPO / "docs").as_posix() for path in (REPO / "docs").rglob("*.md"))
    assert sorted(nav) == on_disk


@pytest.mark.parametrize("block", range(3))
def test_the_python_api_examples_run_as_written(block):
    """Trial 327 #4: docs/python-api.md's examples used names they never defined (x, hf_model, input_ids, mask) and
    showed no way to load a design of one's own. Each block now runs alone, its asserts included (the decoder's logits
    against transformers' on a small Llama built from a config object)."""
    pytest.importorskip("transformers")
    text = (REPO / "docs" / "python-api.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 3
    exec(compile(blocks[block], f"docs/python-api.md block {block}", "exec"), {})
