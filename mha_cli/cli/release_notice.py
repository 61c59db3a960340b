"""The notice that a release typed past the newest mha read (``--engine vllm@0.99``) was priced as that one, and
the refusal of the release priced (typed, or the newest read of the generation named) when it cannot load the model."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mha_cli.cli.output import Output
    from mha_cli.core.engine.releases_read import NewestRead
    from mha_cli.core.schemas import EngineName, ModelSpec


def notice_past_newest_read(engine: EngineName | None, typed: str | None, output: Output) -> NewestRead | None:
    """The newest release of ``engine`` (None: vLLM) read when ``typed``, the release ``--engine`` named, is later,
    said in one notice line on stderr; else None."""
    from mha_cli.core.engine.releases_read import past_newest_read, past_newest_read_note

    engine = engine or "vllm"
    newest = past_newest_read(engine, typed)
    if newest is None or typed is None:
        return None
    output.notice(past_newest_read_note(engine, typed, newest))
    return newest


def releases_priced(newest: NewestRead | None) -> tuple[str | None, str | None]:
    """(``priced_as_release``, ``priced_rules_release``) of a plan's JSON: the newest release read, whose flags the
    launch lines take, and the one whose memory and step rules priced it (vLLM: ``VLLM_MEMORY_RULES_READ``); both
    None when the release typed is not past it."""
    return (None, None) if newest is None else (newest.release, newest.rules)


def refuse_release_without_model(
    engine: EngineName | None,
    typed: str | None,
    model: ModelSpec,
    output: Output,
    *,
    generation_id: str | None = None,
    designed: bool = False,
) -> None:
    """Refuse (exit 2) when the release of ``engine`` the plan prices cannot load ``model``: its model registry has
    none of the model's architectures (``designed``: the one ``mha recommend`` writes it as), in that release or in
    any release read (``core.engine.architectures_served``). The release priced is ``typed`` (``--engine
    vllm@0.5.0``), else the newest release read of generation ``generation_id`` (``--engine vllm``: the latest).
    Without ``--engine`` (``engine`` None) vLLM's newest is priced, and its lack is a notice, not a refusal."""
    from mha_cli.core.engine.architectures_served import (
        Lacking,
        designed_as,
        loaded_by,
        release_priced,
        served_as,
        support,
    )
    from mha_cli.core.engine.releases_read import ENGINE_NAMES
    from mha_cli.core.errors import BadInputError

    named = engine is not None
    engine = engine or "vllm"
    release = release_priced(engine, typed, generation_id)
    names = designed_as(model) if designed else served_as(model)
    found = support(engine, release, names) if release is not None else None
    if found is None and engine == "trtllm" and typed is not None and names:  # trial 344 #1: trtllm@0.8 priced
        output.notice(  # gpt-oss as starting, unsaid; no release's model support is read for TensorRT-LLM
            f"TensorRT-LLM {typed}: which models a release loads is not read by mha (no registry of its releases is"
            f" at hand), so that it loads {names[0]} is assumed: check the release's supported-models list"
        )
    if found is None:
        from mha_cli.core.engine.rope_served import rope_refusal

        refusal = None if typed is None or release is None else rope_refusal(engine, release, model)
        if refusal is not None:
            raise BadInputError(refusal)
        return
    name = ENGINE_NAMES[engine]
    priced = release if typed is not None else f"{release} (the newest release read, which --engine {engine} prices)"
    if not named:
        priced = f"{release}, which mha prices without --engine,"
    if isinstance(found, Lacking):
        when, side = ("first", "or later") if found.later else ("last", "or earlier")
        line = f"{name} {priced} has no {found.architecture} ({when} in {found.release})"
        fix = f"give --engine {engine}@{found.release} {side}, a release that loads it"
    else:
        line = f"{name} {priced} has no {found.architecture}, nor does any release read ({found.releases})"
        other = loaded_by(names, but=engine)
        fix = (
            f"give --engine {other}, a release that loads it" if other is not None
            else "no vLLM or SGLang release read loads it" + (": leave out --engine to price the family anyway" if named else "")
        )  # fmt: skip
    if named:
        raise BadInputError(f"{line}: {fix}")
    output.notice(f"{line}: priced as mha reads the family; {fix}")
