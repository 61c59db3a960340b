"""The notice that a release typed past the newest mha read (``--engine vllm@0.99``) was priced as that one."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mha_cli.cli.output import Output
    from mha_cli.core.schemas import EngineName


def notice_past_newest_read(engine: EngineName | None, typed: str | None, output: Output) -> str | None:
    """The newest release of ``engine`` (None: vLLM) read when ``typed``, the release ``--engine`` named, is later,
    said in one notice line on stderr; else None."""
    from mha_cli.core.engine.releases_read import past_newest_read, past_newest_read_note

    engine = engine or "vllm"
    newest = past_newest_read(engine, typed)
    if newest is None or typed is None:
        return None
    output.notice(past_newest_read_note(engine, typed, newest))
    return newest.release
