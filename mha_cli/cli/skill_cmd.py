"""``mha skill``: print, write or check the configurator skill document generated from the rules.

Exit codes: 0; 1 with ``--check`` when the file differs from what the rules generate; 2 for bad
input (``--write`` and ``--check`` together, ``--write`` over a file that is no skill document without ``--force``,
an empty ``--path``, one that is a folder, or one whose folder does not exist: a path mistyped, not a stale file).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from mha_cli.cli.options import named_path
from mha_cli.cli.output import Output, write_stdout
from mha_cli.core.config_io import write_text_atomic
from mha_cli.core.errors import EXIT_CHECK_FAILED, BadInputError
from mha_cli.core.skill_doc import OPENING, SKILL_PATH, generate_skill_doc

if TYPE_CHECKING:
    from mha_cli.cli.app import CommandRegistry


def skill(
    write: Annotated[bool, typer.Option("--write", help="Regenerate the document (overwrites it).")] = False,
    check: Annotated[bool, typer.Option("--check", help=f"Exit {EXIT_CHECK_FAILED} if the file is stale.")] = False,
    path: Annotated[
        Path, typer.Option("--path", parser=named_path("--path"), help="The document's path.")
    ] = SKILL_PATH,
    force: Annotated[
        bool, typer.Option("--force", help="With --write: overwrite a file at --path that is no skill document.")
    ] = False,
) -> None:
    """Print the mha-configurator skill document, generated from the rules catalog."""
    if write and check:
        raise BadInputError("--write and --check exclude each other: pick one")
    if path.is_dir():
        raise BadInputError(f"--path {path} is a folder: give the skill document's file")
    if (write or check) and not path.parent.is_dir():  # trial 340 #3: exit 1 read as a stale document
        what = "is a file, not a folder" if path.parent.exists() else "does not exist"
        raise BadInputError(f"--path {path}: its folder {path.parent} {what}")
    text = generate_skill_doc()
    out = Output(False)
    if write:
        if _foreign(path) and not force:
            raise BadInputError(
                f"{path} exists and is no skill document (it does not start with {OPENING!r}): pass --force to"
                " overwrite it, or name another --path"
            )
        write_text_atomic(path, text, force=True)
        out.wrote(path)
        return
    if check:
        current = path.read_text(encoding="utf-8") if path.is_file() else None
        if current != text:
            rerun = "mha skill --write" + ("" if path == SKILL_PATH else f" --path {shlex.quote(str(path))}")
            # where a relative path was resolved, said once (trial 334 #14: an absolute one was named twice)
            looked = "" if str(path) == str(path.resolve()) else f" (looked at {path.resolve()})"
            if _foreign(path):  # review 325 #16: not "stale", and no command that overwrites it unasked
                out.notice(
                    f"{path} is no skill document{looked}: give --path the skill document's, or"
                    f" `{rerun} --force` to replace it"
                )
                raise typer.Exit(code=EXIT_CHECK_FAILED)
            what = "missing" if current is None else "stale"
            out.notice(f"{path} is {what}{looked}: run `{rerun}`")
            raise typer.Exit(code=EXIT_CHECK_FAILED)
        out.notice(f"{path} is current")
        return
    write_stdout(text)


def _foreign(path: Path) -> bool:
    """Whether ``path`` holds something other than a skill document (a file ``--write`` overwrites only with
    ``--force``; trial 319 #2: ``--path design.yaml --write`` replaced a design file)."""
    if not path.exists():
        return False
    try:
        with path.open("rb") as handle:
            return handle.read(len(OPENING)) != OPENING.encode()
    except OSError:
        return True


def register(registry: CommandRegistry) -> None:
    registry.add("skill", skill)
