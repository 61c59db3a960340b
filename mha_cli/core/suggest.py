"""Did-you-mean: the known names closest to a mistyped one (difflib), for every "unknown X" error."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

SUGGESTIONS = 4
CUTOFF = 0.6
"""difflib's similarity ratio a known name must reach to be suggested (``h10`` -> ``h100``; ``zzz`` -> nothing)."""


def close_names(word: str, known: Iterable[str], n: int = SUGGESTIONS, cutoff: float = CUTOFF) -> list[str]:
    """The known names most like ``word`` (case-insensitive), best first; empty when none is close."""
    by_key = {name.lower(): name for name in known}
    return [by_key[key] for key in difflib.get_close_matches(str(word).strip().lower(), by_key, n=n, cutoff=cutoff)]


def did_you_mean(word: str, known: Iterable[str], otherwise: str) -> str:
    """``"did you mean a, b?"``, or ``otherwise`` (e.g. ``"none is close: run `mha presets`"``) when nothing is close."""
    close = close_names(word, known)
    return f"did you mean {', '.join(close)}?" if close else otherwise


_SIZE = re.compile(r"^a?\d+(?:\.\d+)?b$")
"""A parameter count in a model name (``8b``, ``0.6b``, the active ``a3b``)."""


def model_sizes(name: str) -> set[str]:
    """The parameter counts a model name spells (``qwen3-30b-a3b`` -> {30b, a3b}), lower-cased."""
    return {word for word in re.split(r"[-_/ ]+", str(name).strip().lower()) if _SIZE.fullmatch(word)}


def did_you_mean_model(word: str, known: Iterable[str], otherwise: str) -> str:
    """``did_you_mean`` among the models of the sizes and versions ``word`` spells (all of them: ``qwen3-30b`` may
    be ``qwen3-30b-a3b``): a string distance would offer ``llama-3.1-70b`` for ``llama-3.1-7b``, a model ten times the
    size one character away, as ``h200`` for ``h20`` (``core.chip_names``), and ``mistral-7b-v0.1`` (a 4,096-token
    window) for ``mistral-7b-v0.3`` (none), ``llama-2-7b`` for ``llama-3.1-7b``, ``gpt2`` for ``gpt3`` (trial 304
    #3). Where some are of the family the name begins with (its first word of letters, ``qwen``), only those. A
    weight format typed that the models offered lack (``llama-3.1-405b-fp8``) is named as the option that prices it
    (trial 344 #4: the bf16 preset was offered alone, at twice the weights)."""
    sizes, versions = model_sizes(word), model_versions(word)
    same = [
        name for name in known
        if sizes <= model_sizes(name) and _versions_held(versions, name) and not _another_release(versions, name)
        and _same_checkpoint_words(word, name) and not _another_generation(word, name)
    ]  # fmt: skip
    family = re.match(r"[a-z]+", str(word).strip().lower())
    of_family = [name for name in same if family and family.group() in re.findall(r"[a-z]+", name.lower())]
    offered = did_you_mean(word, of_family or same, otherwise)
    formats = sorted(_format_words(word) - set().union(*(_checkpoint_words(name) for name in of_family or same)))
    if offered == otherwise or not formats:
        return offered
    return f"{offered} (in {formats[0]}: add --weight-dtype {formats[0]})"


_CHECKPOINT_WORDS = frozenset({"thinking", "exp", "preview", "awq", "gptq", "bnb", "gguf", "w4a16", "w8a8", "w4a8"})
"""Words naming another checkpoint of a model, whose figures differ (K2-Thinking's int4 weights and 256K context,
DeepSeek-V3.2-Exp's earlier release, a quantised repo's weights), beside the quantised formats ``_QUANTISED`` matches."""
_QUANTISED = re.compile(r"(?:fp[48]|int[48]|uint[48]|nvfp4|mxfp[468])")
"""A quantised weight format in a model name (``fp8``, ``int4``, ``nvfp4``), not the 16-bit ones a model is in."""
_TYPO_RATIO = 0.8
"""difflib's ratio at which a typed word is that checkpoint word mistyped (``thinkng``), not another word."""
_TYPO_LENGTH = 5
"""The shortest checkpoint word a typo is read as: ``gpt`` (gpt-oss) is no mistyped ``gptq``."""


def _checkpoint_words(name: str) -> set[str]:
    """The words of model ``name`` that name a checkpoint apart from the model's (``_CHECKPOINT_WORDS``, formats)."""
    words = re.split(r"[-_/ ]+", str(name).strip().lower())
    return {word for word in words if word in _CHECKPOINT_WORDS or _QUANTISED.fullmatch(word)}


WEIGHT_DTYPE_WORDS = frozenset({"fp8", "int4", "int8", "nvfp4", "awq", "gptq"})
"""The checkpoint words ``--weight-dtype`` takes as they are spelt (gptq: as ``gptq-int4``) on every model (not
mxfp4, which quantises routed experts only: review 346 #3) (``tests/test_chip_names.py`` checks each against
``core.weight_formats``, which imports this module)."""


def _format_words(name: str) -> set[str]:
    """The checkpoint words of ``name`` that ``--weight-dtype`` prices as they are spelt (``fp8``, ``int4``, ``awq``)."""
    return _checkpoint_words(name) & WEIGHT_DTYPE_WORDS


def _same_checkpoint_words(typed: str, name: str) -> bool:
    """Whether model ``name`` spells the checkpoint words ``typed`` spells and no other, a typed word close to one
    (``thinkng``) counting as it, and a weight format ``--weight-dtype`` prices (``_format_words``) left to that
    option: ``kimi-k2-thinking`` is not offered ``kimi-k2-instruct``, ``deepseek-v3.2`` not ``deepseek-v3.2-exp``
    (trial 344 #4)."""
    typed_words = re.split(r"[-_/ ]+", str(typed).strip().lower())

    def spelled(word: str) -> bool:
        return any(difflib.SequenceMatcher(None, word, own).ratio() >= _TYPO_RATIO for own in typed_words)

    meant = {own for own in _CHECKPOINT_WORDS if len(own) >= _TYPO_LENGTH and spelled(own)}
    held = _checkpoint_words(name)
    asked = (_checkpoint_words(typed) - _format_words(typed)) | meant
    return asked <= held and all(spelled(word) for word in held)


_RELEASE_TAG = re.compile(r"\d{4}")
"""A release tag in a model name: a date's four digits (``2507``, ``0324``, ``2024``), not a family's number."""


def _another_release(typed: set[str], name: str) -> bool:
    """Whether model ``name`` spells a release tag (``_RELEASE_TAG``) ``typed`` does not, where ``typed`` spells a
    version: another release of the model typed (``qwen3-235b-a22b-2507``, a 262,144-token context, for
    ``qwen3-235b``: the original has 40,960; ``deepseek-v3-0324`` for ``deepseek-v3``; trial 307 #3). A family's
    number a typo lost is no release (``qwen-235b-a22b-2507`` is still offered ``qwen3-235b-a22b-2507``: review 308
    #1); a name typed with no version at all (``llama-8b``) may be offered every version."""
    if not typed:
        return False
    held = {_plain(version) for version in typed}
    return any(_RELEASE_TAG.fullmatch(version) and _plain(version) not in held for version in model_versions(name))


def _generation(name: str) -> str | None:
    """The generation a model name leads with, compared as its digits (``gemma-4-e4b`` -> 4, ``gemma-3n-e4b`` -> 3,
    ``qwen3-8b`` -> 3, ``llama-3.1-8b`` -> 31); None where it leads with none (``qwen-235b``: a size)."""
    words = re.split(r"[-_/ ]+", str(name).strip().lower())
    joined = re.fullmatch(r"[a-z]+v?(\d+(?:\.\d+)?)[a-z]?", words[0])
    if joined:
        return _plain(joined.group(1))
    if len(words) > 1 and words[0].isalpha() and not _SIZE.fullmatch(words[1]):
        apart = re.fullmatch(r"v?(\d+(?:\.\d+)?)[a-z]?", words[1])
        return _plain(apart.group(1)) if apart else None
    return None


def _another_generation(typed: str, name: str) -> bool:
    """Whether ``name`` leads with another generation than ``typed`` (trial 371 #3: ``gemma-4-e4b`` was offered
    ``gemma-3n-e4b`` and ``gemma-3-4b``, whose ``4`` the version check read as the size ``e4b``/``4b``)."""
    typed_generation, generation = _generation(typed), _generation(name)
    return typed_generation is not None and generation is not None and typed_generation != generation


def _versions_held(typed: set[str], name: str) -> bool:
    """Whether model ``name`` spells every version ``typed``, compared without dots, leading zeros or a trailing .0
    (``4`` is ``4.0``, ``1`` is ``01``, ``31`` is ``3.1``); a typed number that is one of ``name``'s sizes less its
    ``b`` is that size, not a version (``llama-3.1-8``, ``command-r7``: review 305 #1)."""
    words = re.split(r"[-_/ ]+", str(name).strip().lower())
    held = {_plain(version) for version in model_versions(name)}
    return all(
        _plain(version) in held or any(re.fullmatch(rf"[a-z]*{re.escape(version)}b", w) for w in words)
        for version in typed
    )


def _plain(version: str) -> str:
    """``4.0`` -> ``4``, ``01`` -> ``1``, ``3.1`` -> ``31``: a version compared as its digits."""
    parts = [part.lstrip("0") or "0" for part in version.split(".")]
    while len(parts) > 1 and parts[-1] == "0":
        parts.pop()
    return "".join(parts)


_VERSION = re.compile(r"^(?:[a-z]*?)v?(\d+(?:\.\d+)*)$")
"""A version in a model name: a word of digits (``3.1``, ``v0.3``) or the digits a name ends in (``qwen2.5``,
``gpt3``)."""


def model_versions(name: str) -> set[str]:
    """The versions a model name spells (``llama-3.1-8b`` -> {3.1}, ``qwen2.5-7b`` -> {2.5}, ``mistral-7b-v0.3``
    -> {0.3}), its parameter counts left out, lower-cased."""
    words = [
        w for w in re.split(r"[-_/ ]+", str(name).strip().lower()) if not _SIZE.fullmatch(w) and not _FORMAT.match(w)
    ]
    return {found.group(1) for word in words if (found := _VERSION.fullmatch(word))}


_FORMAT = re.compile(r"(?:fp|bf|int|uint|nvfp|mxfp)\d")
"""A weight format in a model name (``fp8``, ``int4``): no version."""
