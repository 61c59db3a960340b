"""Spellings of one chip: the "did you mean" of an unknown target, which never offers a different chip.

A string-distance suggestion (``core.suggest``) would answer ``h20`` with ``h200`` and ``h200`` with ``h20``: one
character apart, two different GPUs. Here a known name is offered only when it spells the same chip as the typed one:
the same words once case, separators, vendor and series words (``nvidia``, ``geforce``, ``rtx``, ``amd``, ...) and a
memory size are set aside. ``H100_SXM``, ``nvidia h100-sxm`` and ``h100 sxm 80GB`` all spell ``h100-sxm``; a memory
size typed must be the known chip's (within ``MEMORY_TOLERANCE``). Where no known name spells it exactly, edition and
form-factor words (``sxm``, ``pcie``, ``server``, ``ws``, ...) may differ: ``rtx-pro-6000`` is offered both editions,
but an edition typed rules out a row marked with another (``a100-80gb-sxm`` is the unmarked a100-80gb row, not
a100-80gb-pcie);
an SXM socket generation (``sxm5``) is the ``sxm`` edition, so ``h100 sxm5`` is the h100-sxm row alone; ``NVL`` with
a GPU count (``gb300-nvl72``) is the edition word ``nvl``. An edition that
is another part of the chip with other figures, which no target lists (``h800-pcie``, ``h200-nvl``:
``OTHER_PARTS_NOT_LISTED``), offers nothing. A digit or a model letter that differs is another chip (``h1000``, ``mi300a``): nothing is
offered for it.

An edition word cut short (``h100-sx``, ``h100 pci``: at least two letters, the start of one edition alone), or of
three letters or more with one mistyped (``h100-sxn``), is read whole, and the RTX PRO series word glued to its number (``rtxpro6000``) is read apart. ``rtx6000`` offers nothing:
it names the Quadro RTX 6000 (Turing), which no target lists, as much as the RTX 6000 Ada.

Two slips are read as that chip too, each only where it cannot be another chip's name: a letter typed twice
(``l40ss``, ``hh100``, ``h100 sxxm``: digits are never merged, ``h1000`` stays another chip) and a plural ``s`` after
the model number (``h100s``: the H100s) in a lettered family none of whose chips has an ``s`` for a model letter
(``l4s`` is not read as ``l4``: the L-family has the L40S, as ``l40`` is not ``l40s``; ``v100s`` is the Tesla V100S,
which no target names: ``S_CHIPS_NOT_LISTED``; ``rtx 4080s``, a number alone, is GeForce's "Super"). A digit dropped
(``h10``, ``b20``, ``gb30``) or a model letter added (``h200x``) stays another chip.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping

from mha_cli.core.suggest import SUGGESTIONS

SET_ASIDE = frozenset(
    {"nvidia", "geforce", "tesla", "rtx", "amd", "instinct", "radeon", "intel", "google", "apple", "edition",
     "generation", "gpu", "blackwell"}
)  # fmt: skip
"""Vendor, series and filler words: they never tell two known chips apart."""
EDITIONS = frozenset(
    {"sxm", "sxm2", "sxm4", "sxm5", "sxm6", "pcie", "nvl", "oam", "hgx", "dgx", "server", "srv", "workstation", "ws"}
)
"""Form factors and editions of one chip: left out or misnamed, they still name that chip."""
EDITION_SYNONYMS = {"server": "srv", "workstation": "ws", "hgx": "sxm", "dgx": "sxm"}
"""Edition words spelled two ways: the RTX PRO 6000 Server and Workstation Editions (``srv``, ``ws`` rows), and
NVIDIA's HGX and DGX boards, which carry the SXM part."""
MEMORY_TOLERANCE = 0.05
"""How far a memory size typed may be from the chip's (``h100 79gib`` names the 80 GB part)."""

OTHER_PARTS_NOT_LISTED = {
    "h800": frozenset({"pcie"}), "h200": frozenset({"nvl", "pcie"}), "v100": frozenset({"pcie"}),
}  # fmt: skip
"""Edition words that name another part of a listed chip, with other figures, which no target lists: the H800 PCIe,
80 GB HBM2e at 2.0 TB/s (the h800 row is the SXM5 part at 3.35 TB/s: NVIDIA H800 datasheet, nvidia.cn), the H200
NVL, a PCIe card at up to 600 W, BF16 1,671 / FP8 3,341 TFLOPS sparse against the SXM's 1,979 / 3,958
(https://www.nvidia.com/en-us/data-center/h200/), and the Tesla V100 PCIe, 112 tensor TFLOPS at 250 W against the
SXM2's 125 at 300 W, the part both v100 rows are (NVIDIA Tesla V100 datasheet; trial 381 #7). Offered the SXM row,
each would be priced as another chip."""

_MEMORY = re.compile(r"(\d+)(?:gb|g|gib)")
_SXM_GENERATION = re.compile(r"^sxm\d$")
"""An SXM socket generation (``sxm5``): the chip's SXM edition, spelled as its ``sxm`` row is."""
_RACK = re.compile(r"nvl\d+")
"""NVL with a GPU count (NVL72, NVL36, NVL4): the rack or board of an ``nvl`` edition."""
_GLUED_PREFIX = re.compile(rf"({'|'.join(sorted(SET_ASIDE, key=len, reverse=True))})(?=\d)")
_GLUED_PRO = re.compile(r"(?:rtx)?pro(\d\w*)")
_GLUED_EDITION = re.compile(rf"(.*\d.*?)({'|'.join(sorted(EDITIONS, key=len, reverse=True))})")


class Spelling:
    """A name reduced to what tells chips apart: its words, the same without editions, and a memory size."""

    def __init__(self, name: str) -> None:
        words: list[str] = []
        self.memory_gb: float | None = None
        for token in re.findall(r"[a-z0-9]+", name.lower()):
            pro = _GLUED_PRO.fullmatch(token)  # rtxpro6000, pro6000 -> pro 6000 (the RTX PRO series word)
            if pro:
                words.append("pro")
                token = pro.group(1)
            token = _GLUED_PREFIX.sub("", token, count=1)  # rtx4090 -> 4090
            memory = _MEMORY.fullmatch(token)
            after_model = any(re.search(r"\d", w) for w in words)
            if memory or (after_model and re.fullmatch(r"\d{1,3}", token)):  # 80gb, 141GB, or a100-80
                self.memory_gb = float(memory.group(1) if memory else token)
                continue
            if _RACK.fullmatch(token):  # gb300-nvl72 -> gb300 nvl
                token = "nvl"
            glued = _GLUED_EDITION.fullmatch(token)  # h100sxm -> h100 sxm
            for word in glued.groups() if glued else (token,):
                if word and word not in SET_ASIDE:
                    word = _SXM_GENERATION.sub("sxm", word)  # sxm5 is the SXM edition, not the NVL or PCIe
                    words.append(EDITION_SYNONYMS.get(word, word))
        self.words = tuple(words)
        self.exact = "".join(words)
        self.without_editions = "".join(w for w in words if w not in EDITIONS)

    def memory_agrees(self, memory_gb: float | None) -> bool:
        """No size typed, or one within ``MEMORY_TOLERANCE`` of ``memory_gb`` (the known chip's)."""
        if self.memory_gb is None or memory_gb is None:
            return True
        return abs(self.memory_gb - memory_gb) <= MEMORY_TOLERANCE * memory_gb


S_CHIPS_NOT_LISTED = ("v100s",)
"""Chips whose ``s`` is a model letter though no target names them, so their family reads no plural ``s``: NVIDIA's
Tesla V100S (PCIe, 32 GB of HBM2 at 1,134 GB/s against the V100's 900 GB/s: NVIDIA's V100S datasheet), which
``v100s`` names, not the V100s."""

_DOUBLED_LETTER = re.compile(r"([a-z])\1+")
_PLURAL = re.compile(r"([a-z]*)(\d+)s")
"""A model word with a plural ``s``: the family's letters, the model number (``h100s``: ``h``, ``100``)."""


def _slip_readings(words: tuple[str, ...], known: list[Spelling]) -> list[tuple[str, ...]]:
    """The words once read without a doubled letter, then without a plural ``s`` where the family has no ``s``
    model letter; each reading that differs from the words typed, first the nearest."""
    readings: list[tuple[str, ...]] = []
    single = tuple(_DOUBLED_LETTER.sub(r"\1", word) for word in words)
    if single != words:
        readings.append(single)
    cut = tuple(_whole_edition(word) for word in words)  # h100-sx: the SXM edition cut short
    if cut != words:
        readings.append(cut)
    model = next((i for i, word in enumerate(single) if re.search(r"\d", word)), None)
    plural = _PLURAL.fullmatch(single[model]) if model is not None else None
    if plural is not None and plural.group(1):  # a number alone (rtx 4080s) is GeForce's, whose s is "Super"
        family_letter = re.compile(rf"{plural.group(1)}\d+s")
        words_known = [word for spelling in known for word in spelling.words]
        if not any(family_letter.fullmatch(word) for word in (*words_known, *S_CHIPS_NOT_LISTED)):
            readings.append((*single[:model], plural.group(1) + plural.group(2), *single[model + 1 :]))
    return readings


def _whole_edition(word: str) -> str:
    """``word`` read as the one edition it begins (``sx`` -> ``sxm``, ``pci`` -> ``pcie``), at least two letters and
    no digit, or, at three or more, the one it spells with a letter mistyped (``sxn`` -> ``sxm``); else ``word``."""
    if len(word) < 2 or re.search(r"\d", word) or word in EDITIONS:
        return word
    begun = {_SXM_GENERATION.sub("sxm", e) for e in EDITIONS if e.startswith(word)}
    if not begun and len(word) >= 3:  # one letter mistyped (sxn, pcle: trial 334 #9); editions tell no chips apart
        same_length = [e for e in EDITIONS if len(e) == len(word)]
        begun = {e for e in same_length if sum(a != b for a, b in zip(e, word, strict=True)) == 1}
    begun = {EDITION_SYNONYMS.get(e, e) for e in begun}
    return begun.pop() if len(begun) == 1 else word


def _spelling_matches(words: tuple[str, ...], agreeing: Mapping[str, Spelling]) -> list[str]:
    """The names in ``agreeing`` spelled as ``words`` exactly; only when there is none, the same without editions,
    less those whose own edition another typed one rules out (``a100-80gb-sxm`` is not ``a100-80gb-pcie``; the
    unmarked ``a100-80gb`` stays), unless that leaves none."""
    exact = "".join(words)
    exact_names = [name for name, s in agreeing.items() if s.exact == exact]
    if exact_names:
        return exact_names
    without_editions = "".join(w for w in words if w not in EDITIONS)
    same_chip = [name for name, s in agreeing.items() if s.without_editions and s.without_editions == without_editions]
    typed_editions = {w for w in words if w in EDITIONS}
    compatible = [name for name in same_chip if not _editions_disagree(typed_editions, agreeing[name].words)]
    return compatible or same_chip


def _editions_disagree(typed_editions: set[str], known_words: tuple[str, ...]) -> bool:
    """Whether a known name's edition words and the typed ones are both given and share none."""
    known_editions = {w for w in known_words if w in EDITIONS}
    return bool(typed_editions and known_editions and not typed_editions & known_editions)


def _another_part_not_listed(words: tuple[str, ...]) -> bool:
    """Whether ``words`` name a chip with an edition word that is another part of it (``OTHER_PARTS_NOT_LISTED``)."""
    return any(OTHER_PARTS_NOT_LISTED.get(word, frozenset()) & set(words) for word in words)


def same_chip_names(word: str, known: Mapping[str, float | None], n: int = SUGGESTIONS) -> list[str]:
    """The names in ``known`` (each with its memory in GB, or None) that spell the chip ``word`` names, best first;
    empty when none does. Exact spellings first; only when there is none, the same chip in another edition; only when
    neither, the same read past a slip (a doubled letter, a plural ``s``: ``_slip_readings``)."""
    typed = Spelling(str(word))
    if not typed.exact or _another_part_not_listed(typed.words):
        return []
    spelled = {name: Spelling(name) for name in known}
    agreeing = {name: s for name, s in spelled.items() if typed.memory_agrees(s.memory_gb or known[name])}
    matches = _spelling_matches(typed.words, agreeing)
    for reading in [] if matches else _slip_readings(typed.words, list(spelled.values())):
        if _another_part_not_listed(reading):  # h200-pc read whole is the H200 PCIe, no target: nothing offered
            return []
        matches = _spelling_matches(reading, agreeing)
        if matches:
            break

    def likeness(name: str) -> float:
        return difflib.SequenceMatcher(None, typed.exact, spelled[name].exact).ratio()

    return sorted(matches, key=likeness, reverse=True)[:n]
