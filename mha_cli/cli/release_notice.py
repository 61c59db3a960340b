"""The notice that a release typed past the newest mha read (``--engine vllm@0.99``) was priced as that one, and
the refusal of a release typed before the first that ships the model's architecture."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mha_cli.cli.output import Output
    from mha_cli.core.schemas import EngineName, ModelSpec


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


def refuse_release_without_model(
    engine: EngineName | None, typed: str | None, model: ModelSpec, output: Output, *, designed: bool = False
) -> None:
    """Refuse (exit 2) a release typed (``--engine vllm@0.5.0``) of ``engine`` (None: vLLM) whose model registry has
    none of ``model``'s architectures (``designed``: the one ``mha recommend`` writes it as); a notice when no
    release read has one (``core.engine.architectures_served``). Nothing is read when no release is typed."""
    if typed is None:
        return
    from mha_cli.core.engine.architectures_served import Lacking, designed_as, served_as, support
    from mha_cli.core.engine.releases_read import ENGINE_NAMES
    from mha_cli.core.errors import BadInputError

    engine = engine or "vllm"
    found = support(engine, typed, designed_as(model) if designed else served_as(model))
    name = ENGINE_NAMES[engine]
    if isinstance(found, Lacking):
        when, give = ("first", "a later") if found.later else ("last", "an earlier")
        raise BadInputError(
            f"{name} {typed} has no {found.architecture} ({when} in {found.release}): give {give} release"
        )
    if found is not None:
        output.notice(
            f"{name}'s model registry has no {found.architecture} in any release read ({found.releases}): priced as"
            f" mha reads the family; {name} {typed} may not load it"
        )
