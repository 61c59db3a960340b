"""The committed skill document is exactly what the rules generate: the engine and the doc cannot drift."""

from mha_cli.core.errors import EXIT_BAD_INPUT, EXIT_CHECK_FAILED
from mha_cli.core.rules import RULES
from mha_cli.core.skill_doc import SKILL_PATH, generate_skill_doc
from tests.conftest import REPO

COMMITTED = REPO / SKILL_PATH


def test_committed_document_is_current():
    assert COMMITTED.read_text(encoding="utf-8") == generate_skill_doc(), "run `mha skill --write`"


def test_document_has_front_matter_and_every_rule():
    text = generate_skill_doc()
    front = text.split("---\n")[1]
    assert "name: mha-configurator" in front and "description:" in front
    for heading in ("## Inputs", "## Outputs, in order", "## Hard rules", "## Exit codes"):
        assert heading in text
    for rule in RULES:
        assert f"#### {rule.id} `{rule.name}`" in text
        assert rule.rationale in text and rule.reference in text


def test_skill_command_check_and_write(cli, tmp_path):
    stale = tmp_path / "skill.md"
    stale.write_text(generate_skill_doc().replace("MHA090", "MHA09O"))  # an older document
    said = cli.run("skill", "--check", "--path", str(stale))
    assert said.exit_code == EXIT_CHECK_FAILED
    # an absolute path is named once (trial 334 #14: "X is stale (looked at X)")
    assert said.stderr == f"{stale} is stale: run `mha skill --write --path {stale}`\n"
    assert cli.run("skill", "--check", "--path", str(tmp_path / "missing.md")).exit_code == EXIT_CHECK_FAILED
    assert cli.run("skill", "--write", "--path", str(stale)).exit_code == 0
    assert stale.read_text() == generate_skill_doc()
    assert cli.run("skill", "--check", "--path", str(stale)).exit_code == 0
    assert cli.run("skill", "--check", "--path", str(COMMITTED)).exit_code == 0
    assert cli.run("skill").stdout == generate_skill_doc()


def test_skill_check_works_outside_the_repository(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = cli.run("skill", "--check")
    assert result.exit_code == 0, result.output
    missing = cli.run("skill", "--check", "--path", "nowhere.md")
    assert missing.exit_code == EXIT_CHECK_FAILED and str(tmp_path / "nowhere.md") in missing.output


def test_a_stale_document_at_another_path_is_told_the_command_that_rewrites_it(cli, tmp_path):
    """``--check --path X`` advised ``mha skill --write``, which writes the default path, not X (found by newuser
    trial 230); the command printed, run, makes X current."""
    stale = tmp_path / "my skill.md"
    stale.write_text(generate_skill_doc()[:400])
    result = cli.run("skill", "--check", "--path", str(stale))
    line = " ".join(result.output.split())
    assert result.exit_code == EXIT_CHECK_FAILED and f"run `mha skill --write --path '{stale}'`" in line
    assert cli.run("skill", "--write", "--path", str(stale)).exit_code == 0
    assert cli.run("skill", "--check", "--path", str(stale)).exit_code == 0


def test_write_refuses_a_file_that_is_no_skill_document_without_force(cli, tmp_path):
    """Trial 319 #2: ``--path design.yaml --write`` replaced the design with the skill document, exit 0. The check
    names the command that does overwrite it, and that command works; a missing folder is said, not a command that
    fails."""
    design = tmp_path / "design.yaml"
    design.write_text("model:\n  d_model: 512\n")
    refused = cli.run("skill", "--write", "--path", str(design))
    assert (
        refused.exit_code == EXIT_BAD_INPUT and "is no skill document" in refused.output and "--force" in refused.output
    )
    assert design.read_text() == "model:\n  d_model: 512\n"
    told = " ".join(cli.run("skill", "--check", "--path", str(design)).output.split())
    assert "is no skill document" in told and f"`mha skill --write --path {design} --force` to replace it" in told
    assert cli.run("skill", "--write", "--path", str(design), "--force").exit_code == 0
    assert design.read_text() == generate_skill_doc()
    nowhere = " ".join(cli.run("skill", "--check", "--path", str(tmp_path / "no" / "sk.md")).output.split())
    assert "its folder" in nowhere and "does not exist" in nowhere and "run `" not in nowhere  # exit 2: below


def test_a_mistyped_path_is_bad_input_not_a_stale_document(cli, tmp_path):
    """Trial 340 #3 and #4: a folder that does not exist gave exit 1, as a stale document does, and an empty --path
    was read as the working folder (with a --force hint for it). Each is exit 2 in one line; the control, a missing
    file in a folder that is there, stays exit 1."""
    for words, said in (
        (("--check", "--path", str(tmp_path / "no" / "sk.md")), f"its folder {tmp_path / 'no'} does not exist"),
        (("--write", "--path", str(tmp_path / "no" / "sk.md")), "does not exist"),
        (("--write", "--path", ""), "--path is empty"),
        (("--check", "--path", ""), "--path is empty"),
        (("--write", "--path", str(tmp_path), "--force"), "is a folder"),
        (("--check", "--path", "/etc/passwd/sk.md"), "its folder /etc/passwd is a file, not a folder"),
    ):
        result = cli.run("skill", *words)
        assert result.exit_code == EXIT_BAD_INPUT and said in result.stderr, (words, result.output)
        assert len(result.stderr.strip().splitlines()) == 1 and "--force" not in result.stderr
    assert cli.run("skill", "--check", "--path", str(tmp_path / "sk.md")).exit_code == EXIT_CHECK_FAILED
    assert list(tmp_path.iterdir()) == []
