"""Whether the vLLM or SGLang release a plan prices ships a model file for the model priced.

An engine loads a model by the class its config's ``architectures`` names, looked up in its model registry (vLLM
``vllm/model_executor/models/registry.py``, SGLang the ``EntryClass`` of ``sglang/srt/models/*.py``). Which
releases' registries have each architecture was read in the wheels of every release on PyPI (vLLM 0.1.4 on, SGLang
0.1.10 on) by ``benchmarks/engine_architectures.py``, into ``outputs/engine_flags/architectures.json`` and its copy
``mha_cli/data/engine_architectures.json``: per architecture, the first release read that has it and the later
releases read that lack it (vLLM drops some: ``_PREVIOUSLY_SUPPORTED_MODELS``). Rules:

- a model is served as one of the architectures its family's ``model_type`` s are named by
  (``core.families.architectures.ARCHITECTURES``; a text model as any of them: the config's own is not kept), a
  model with a vision tower as its multimodal class (``ForConditionalGeneration``: the family's, or ``WRAPPERS``);
- a release whose registry has none of them is refused: before the first release that has one ("first in"),
  or after the last that had one ("last in");
- a release not read (between two releases read, or a minor alone: ``0.17``, its newest release read) is
  answered as the newest release read at or before it: conservative for a first (a release between the last read
  without it and the first read with it is refused), lenient for a drop; one before the oldest release read
  (vLLM 0.1.0-0.1.3, no wheel; SGLang before 0.1.10, no registry of the form read) is not checked;
- an architecture no release read of the engine has (mha reads families an engine never served: SGLang never
  registered Falcon, Bloom, Jamba, Nemotron or SmolLM3) is refused too, naming the other engine's release that has
  it (``loaded_by``), where one does;
- the Transformers-backend fallback (``TransformersForCausalLM``, which both engines try for an architecture not
  registered) is not counted: mha prices each engine's own implementation; vLLM's architectures registered by name
  to that backend (``_TRANSFORMERS_SUPPORTED_MODELS``) are;
- a Ministral config (local:global windows in ``layer_types``) is also served as ``MistralForCausalLM``, the
  class ``mha recommend --format hf`` writes such a design as (``core.recommend.hf_config``):
  vLLM loads it with ``models/llama.py``, whose attention reads ``layer_types`` from 0.10.1 (0.10.0 reads only
  ``interleaved_sliding_window``; read in the vLLM 0.10.0, 0.10.1 and 0.34.0 wheels), so that class counts from
  0.10.1 for it; SGLang's ``models/llama.py`` (``MistralForCausalLM`` subclasses it) has no sliding window
  (read in the SGLang 0.5.10.post1 wheel), so no SGLang release serves its windows (``WINDOWS_FROM``).

The release checked is the one the plan prices (``release_priced``): the release typed, else the newest release
read of the generation named (``--engine vllm``: the newest release read, ``vllm-v1``: 0.20.2); without
``--engine``, vLLM's newest (``cli.release_notice``: a notice there, not a refusal). TensorRT-LLM is not checked: its
PyTorch backend's registry (``register_auto_model``) is not read, and a release typed (``trtllm@0.8``) gets a notice
saying which architecture is assumed loaded. Pure Python.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from mha_cli.core.engine.architectures_table import engines_table
from mha_cli.core.families.architectures import ARCHITECTURES

if TYPE_CHECKING:
    from mha_cli.core.schemas import ModelSpec

WRAPPERS: dict[str, str] = {
    "qwen3_5": "Qwen3_5ForConditionalGeneration", "qwen3_5_moe": "Qwen3_5MoeForConditionalGeneration",
    "llama4": "Llama4ForConditionalGeneration",
}  # fmt: skip
"""Multimodal classes ``ARCHITECTURES`` does not name, by the ``model_type`` of their config (the classes
``core.vision_tower`` lists the towers of: vLLM ``qwen3_5.py``, ``mllama4.py``)."""

WINDOWED_AS = "MistralForCausalLM"
"""The class a Ministral design (local:global windows in ``layer_types``) is written and served as."""
WINDOWED = f"{WINDOWED_AS} with per-layer windows (layer_types)"
"""``WINDOWED_AS`` serving such a design: what ``served_as`` and ``designed_as`` name for it."""
WINDOWS_FROM: dict[str, str | None] = {"vllm": "0.10.1", "sglang": None}
"""The first release whose ``WINDOWED_AS`` implementation reads ``layer_types`` (None: none read does): vLLM
``model_executor/models/llama.py`` ``LlamaAttention.__init__`` (0.10.1 wheel on); SGLang ``srt/models/llama.py``
(0.5.10.post1 wheel: no sliding window)."""

WRAPPED_TEXT: tuple[str, ...] = (
    "KimiK25ForConditionalGeneration", "Mistral3ForConditionalGeneration", "LlavaForConditionalGeneration",
    "Qwen2VLForConditionalGeneration", "Qwen2_5_VLForConditionalGeneration", "Qwen3VLForConditionalGeneration",
    "Qwen3VLMoeForConditionalGeneration", "Glm4vForConditionalGeneration", "Glm4vMoeForConditionalGeneration",
)  # fmt: skip
"""Multimodal classes a config.json names around a ``text_config`` mha reads alone (``ModelSpec.wrapper``): the
engines load the class, not the language model's own (Kimi-K2.5: ``KimiK25ForConditionalGeneration`` around
DeepSeek-V3's decoder, first in vLLM and SGLang long after ``DeepseekV3ForCausalLM``)."""

FOLLOWED: frozenset[str] = frozenset(ARCHITECTURES) | frozenset(WRAPPERS.values()) | frozenset(WRAPPED_TEXT)
"""Every architecture a model mha reads is served as: what ``benchmarks/engine_architectures.py`` follows."""

ENGINES_READ = ("vllm", "sglang")
MULTIMODAL = "ForConditionalGeneration"


class Lacking(NamedTuple):
    """A release typed whose registry has none of the model's architectures."""

    architecture: str
    release: str
    """The first release read that has it (``later``), or the last one that had it (not ``later``)."""
    later: bool
    """Whether a later release has it (else: it was dropped)."""


class NeverRead(NamedTuple):
    """No release read of the engine has any of the model's architectures."""

    architecture: str
    releases: str
    """The releases read, as ``0.1.4 to 0.34.0``."""


def served_as(model: ModelSpec) -> tuple[str, ...]:
    """The architectures ``model`` may be served as (empty: no registered family): the class its config.json wraps
    the language model in where that class is followed (``ModelSpec.wrapper``), else its family's."""
    from mha_cli.core.families import family

    if model.wrapper is not None and model.wrapper in FOLLOWED:
        return (model.wrapper,)
    found = family(model.family) if model.family else None
    if found is None:
        return ()
    names = [name for name, model_type in ARCHITECTURES.items() if model_type in found.model_types]
    names += [WRAPPERS[t] for t in found.model_types if t in WRAPPERS]
    if model.family == "ministral":
        names.append(WINDOWED)
    if model.vision is not None:
        return tuple(name for name in names if name.endswith(MULTIMODAL))
    return tuple(names)


def designed_as(model: ModelSpec) -> tuple[str, ...]:
    """The architecture a design of ``mha recommend`` is written as (``core.recommend.hf_config``: Llama,
    Mistral with windows (``WINDOWED``), Qwen3-MoE or DeepSeek-V3); empty where it writes none (shared experts)."""
    from mha_cli.core.errors import BadInputError
    from mha_cli.core.recommend.hf_config import hf_config

    try:
        config = hf_config(model, max_position_embeddings=1)
    except BadInputError:
        return ()
    return (WINDOWED,) if "layer_types" in config else tuple(config["architectures"])


def release_priced(engine: str, typed: str | None, generation_id: str | None) -> str | None:
    """The release whose registry ``support`` checks: ``typed``, else the newest release read that generation
    ``generation_id`` (None: the engine's latest) covers; None for an engine not read."""
    from mha_cli.core.engine.flags import release_key
    from mha_cli.core.engine.generations import generation

    if typed is not None or engine not in ENGINES_READ:
        return typed
    covering = generation(generation_id, engine)  # type: ignore[arg-type]
    read = [r for r in engines_table()[engine]["releases_read"] if covering.covers(release_key(r)[:2])]
    return read[-1] if read else None


def loaded_by(names: tuple[str, ...], but: str) -> str | None:
    """The ``--engine`` of another engine read than ``but`` whose release loads one of ``names``: the engine alone
    where its newest release read does, else ``engine@release`` of the newest that does; None where none does."""
    for engine in ENGINES_READ:
        if engine == but:
            continue
        table = engines_table()[engine]
        having = [r for r in table["releases_read"] for name in names if _has(_span(engine, name), r)]
        if having:
            from mha_cli.core.engine.flags import release_key

            newest = max(having, key=release_key)
            return engine if newest == table["releases_read"][-1] else f"{engine}@{newest}"
    return None


def lacking_elsewhere(names: tuple[str, ...], priced: str) -> dict[str, str]:
    """The engines read other than ``priced`` whose newest release read loads none of ``names`` (``served_as``),
    each with why, in words: their launch lines, written for that release, would not start."""
    from mha_cli.core.engine.releases_read import ENGINE_NAMES

    out: dict[str, str] = {}
    for engine in ENGINES_READ:
        if engine == priced:
            continue
        newest = engines_table()[engine]["releases_read"][-1]
        found = support(engine, newest, names)
        if isinstance(found, Lacking):
            out[engine] = f"{ENGINE_NAMES[engine]} {newest} has no {found.architecture} (last in {found.release})"
        elif found is not None:
            out[engine] = f"no {ENGINE_NAMES[engine]} release read ({found.releases}) registers {found.architecture}"
    return out


def support(engine: str, typed: str, names: tuple[str, ...]) -> Lacking | NeverRead | None:
    """Why release ``typed`` of ``engine`` can load none of the architectures ``names`` (``served_as``), or that no
    release read can; None: it can, or nothing is known (an engine not read, TensorRT-LLM; no names; names the
    table did not follow when it was read, such as a family registered after it)."""
    from mha_cli.core.engine.flags import release_key

    if engine not in ENGINES_READ or not names:
        return None
    table = engines_table()[engine]
    if not any(name == WINDOWED or name in table["architectures"] for name in names):
        return None
    read: list[str] = table["releases_read"]
    spans = {name: span for name in names if (span := _span(engine, name)).get("first")}
    if not spans:
        return NeverRead(names[0], f"{read[0]} to {read[-1]}")
    key = release_key(typed)
    answered_by = [release for release in read if release_key(release) <= key]  # a release not read: the one before
    if not answered_by or any(_has(span, answered_by[-1]) for span in spans.values()):
        return None  # before the oldest release read: not known
    later = sorted((release_key(span["first"]), name, span["first"]) for name, span in spans.items()
                   if release_key(span["first"]) > key)  # fmt: skip
    if later:
        return Lacking(later[0][1], later[0][2], later=True)
    dropped = sorted((release_key(last), name, last) for name, span in spans.items()
                     for last in [r for r in answered_by if _has(span, r)][-1:])  # fmt: skip
    return Lacking(dropped[-1][1], dropped[-1][2], later=False)


def first_served(engine: str, names: tuple[str, ...]) -> str | None:
    """The first release read of ``engine`` whose registry has one of ``names`` (``served_as``); None where none is
    known (an engine not read, no names, none registered)."""
    from mha_cli.core.engine.flags import release_key

    if engine not in ENGINES_READ or not names:
        return None
    firsts = [span["first"] for name in names if (span := _span(engine, name)).get("first")]
    return min(firsts, key=release_key) if firsts else None


def _span(engine: str, name: str) -> dict:
    """The releases read of ``engine`` that have ``name``: the table's, ``WINDOWS_FROM`` for ``WINDOWED``."""
    if name == WINDOWED:
        return {"first": WINDOWS_FROM[engine]}
    return engines_table()[engine]["architectures"].get(name, {})


def _has(span: dict, release: str) -> bool:
    """Whether the registry of ``release`` (a release read) has the architecture of ``span``."""
    from mha_cli.core.engine.flags import release_key

    if not span.get("first"):
        return False
    return release_key(release) >= release_key(span["first"]) and release not in span.get("lacking", ())
