"""Ways out: each change a command suggests is run again before it is printed; only those that pass are kept.

A generator words the changes it expects to help, flags first and why in brackets (``core.fit`` for a memory plan
that does not fit: ``--kv-dtype fp8 (50% of this cache)``; ``core.cost.search`` for latency targets no deployment
meets; ``core.memory.layout_changes`` for a --tp the target cannot hold). ``settle`` runs the command again with
each change (a ``Judge``: the same code that judged the original, so the memory plan for ``mha kv`` and ``mha
check``, the recommender for ``mha recommend``, the search for ``mha plan``) and keeps those that pass. When no
single change passes it tries pairs: each change with a way out of where it leads (the generator's ways there, which
the judge returns), at most ``MAX_PAIRS_TRIED``. When nothing passes, one entry starting ``none:`` says what was
tried. A change naming a flag its command does not take is never printed (``flags``: the command's). Pure Python.
"""

import shlex
from collections.abc import Callable, Collection
from typing import NamedTuple

from mha_cli.core.errors import MhaError
from mha_cli.core.record import Record


def gib_as_bytes(gib: str | float) -> int:
    """``--kv-cache-gib``'s value (GiB, a number or its text) as bytes, as every command reads it."""
    return round(float(gib) * 2**30)


FLAG_FIELDS: dict[str, tuple[str, Callable[[str], object]]] = {
    "--target": ("target", str),
    "--tp": ("tp", int),
    "--weight-dtype": ("weight_dtype", str),
    "--kv-dtype": ("kv_dtype", str),
    "--batch": ("batch", int),
    "--seq": ("seq_len", int),
    "--gpu-memory-utilization": ("gpu_memory_utilization", float),
    "--max-num-seqs": ("max_num_seqs", int),
    "--kv-cache-gib": ("kv_cache_memory_bytes", gib_as_bytes),
    "--max-model-len": ("max_model_len", int),
}
"""The deployment field each flag a way out of ``mha kv`` or ``mha check`` names sets (its value read by the
callable: ``--kv-cache-gib``'s GiB as the bytes the deployment holds)."""
KV_FLAGS: dict[str, tuple[str, type]] = {**FLAG_FIELDS, "--dp": ("dp", int)}
"""``mha kv``'s: those and DP attention's ``--dp`` (``core.dp_attention``), which ``check`` and ``recommend`` do not
take."""

MAX_PAIRS_TRIED = 8
"""Pairs judged at most when no single change passes (a judge of ``mha recommend`` or ``mha plan`` runs the
recommender or the search again: about 0.1 s each on a 671B MoE design)."""
MAX_PAIRS_SHOWN = 3


class WayOut(Record):
    """One way out, run again before it was printed."""

    text: str
    """The way as worked out on the current design: the flags, then why in brackets (kv and check print it so;
    recommend prints ``change: figure``, the design it gives run again); ``none: ...`` when nothing passes."""
    change: str
    """The flags alone (empty for ``none: ...``): what to set in the command, as its options parse them; each
    replaces the option of that name (the command refuses one given twice with different values)."""
    fits: bool
    """Whether the command run again with this change passes (fits the target, or meets the latency targets);
    false only for ``none: ...``."""
    figure: str
    """What the change gives when run again (the sequences at once and the weights per device; the pick and its
    tokens/s per GPU), or, for ``none: ...``, what was tried."""
    max_sequences: int | None = None
    """Sequences of the (new) context the engine runs at once with the change, over all replicas (memory plans)."""


class Verdict(NamedTuple):
    """What the command finds run again with a change."""

    passes: bool
    figure: str
    """What it gives, or why it does not pass."""
    max_sequences: int | None
    ways: list[str]
    """When it does not pass: the generator's ways out from there (the second change of a pair comes from them)."""


Judge = Callable[[list[str]], Verdict]
"""The command run again with a change's words (``["--weight-dtype", "fp8"]``), by the code that judged it first."""


def accepted(run: Callable[[list[str]], object]) -> Judge:
    """A judge of a refusal's way out: it passes when ``run`` (the command with the change) raises no ``MhaError``."""

    def judge(words: list[str]) -> Verdict:
        try:
            run(words)
        except MhaError as exc:
            return Verdict(False, f"refused: {exc.message}", None, [])
        return Verdict(True, "accepted", None, [])

    return judge


def split_way(text: str) -> tuple[str, str]:
    """``("--kv-dtype fp8", "50% of this cache")`` from ``--kv-dtype fp8 (50% of this cache)``."""
    change, _, why = text.partition(" (")
    return change.strip(), why.removesuffix(")")


def flag_updates(words: list[str], fields: dict[str, tuple[str, type]] | None = None) -> dict[str, object]:
    """The ``{field: value}`` the flags of ``words`` set (``FLAG_FIELDS``' names unless ``fields`` maps them)."""
    fields = fields or FLAG_FIELDS
    return {fields[flag][0]: fields[flag][1](value) for flag, value in zip(words[::2], words[1::2], strict=False)}


def _names_only(words: list[str], flags: Collection[str]) -> bool:
    """Whether ``words`` are ``--flag value`` pairs, every flag one of ``flags``."""
    return len(words) % 2 == 0 and all(flag in flags for flag in words[::2])


def settle(
    texts: list[str], judge: Judge, flags: Collection[str], *, keep: int | None = None, goal: str = "fits"
) -> list[WayOut]:
    """The ways out of ``texts`` that pass ``judge``, each with what it gives; pairs when no single one passes
    (``_pairs``); else one ``none: ...`` entry (the generator's own when it gave one). ``flags``: the options of the
    command the ways are printed by; ``keep``: stop after that many pass; ``goal``: what passing means, for the
    ``none:`` line. Empty when ``texts`` is (nothing to get out of)."""
    if not texts:
        return []
    tried: dict[str, Verdict] = {}
    passing: list[WayOut] = []
    for text in texts:
        if text.startswith("none:"):  # the generator's word that nothing it knows passes: words, not flags
            continue
        change, _ = split_way(text)
        words = shlex.split(change)
        if change in tried or not words or not _names_only(words, flags):
            continue
        verdict = tried[change] = judge(words)
        if verdict.passes:
            passing.append(WayOut(text=text, change=change, fits=True, figure=verdict.figure,
                                  max_sequences=verdict.max_sequences))  # fmt: skip
            if keep is not None and len(passing) >= keep:
                break
    if passing:
        return passing
    pairs = _pairs(tried, judge, flags)
    if pairs:
        return pairs
    told = next((text for text in texts if text.startswith("none:")), None)
    paired = any(verdict.ways for verdict in tried.values())
    figure = f"tried {', '.join(tried) or 'no change'}" + (
        " alone and each with the ways out from there" if paired else " alone"
    )
    return [WayOut(text=told or f"none: {figure}; none {goal}", change="", fits=False, figure=figure)]


def _pairs(tried: dict[str, Verdict], judge: Judge, flags: Collection[str]) -> list[WayOut]:
    """Each change that failed alone (in the generator's order) with each way out of where it leads that names other
    flags, judged together: the first ``MAX_PAIRS_SHOWN`` that pass, of ``MAX_PAIRS_TRIED`` at most."""
    found: list[WayOut] = []
    seen: set[frozenset[tuple[str, str]]] = set()
    judged = 0
    for first, verdict in tried.items():
        for text in verdict.ways:
            if text.startswith("none:"):
                continue
            second, _ = split_way(text)  # why it helps there is the generator's guess: the figure says what it does
            words_a, words_b = shlex.split(first), shlex.split(second)
            pair = words_a + words_b
            key = frozenset(zip(pair[::2], pair[1::2], strict=False))
            if not words_b or not _names_only(words_b, flags):
                continue
            if any(shown <= key for shown in seen):  # judged already, or holds a pair judged already
                continue
            if set(words_a[::2]) & set(words_b[::2]):  # the same flag twice: not a pair
                continue
            if judged == MAX_PAIRS_TRIED:
                return found
            seen.add(key)
            judged += 1
            together = judge(pair)
            if together.passes:
                found.append(WayOut(
                    text=f"{first} {second} (together: {first} alone is not enough)",
                    change=f"{first} {second}", fits=True, figure=together.figure,
                    max_sequences=together.max_sequences,
                ))  # fmt: skip
                if len(found) == MAX_PAIRS_SHOWN:
                    return found
    return found
