"""A device count written after a chip name, glued to it, or as the rack it fills: ``b200x8``, ``8h100``,
``gb300nvl72``, read as the ``NxCHIP`` form ``core.targets`` takes (``8xb200``).

``core.targets`` reads a count in front with an ``x`` (``8xh100``, ``2x8xh100``). People also type it

- after the chip with an ``x`` (``b200x8``, ``h20 x 8``): ``8xb200``, ``8xh20``;
- glued in front (``8h100``): ``8xh100``;
- as the NVL rack a per-GPU row is one GPU of (``gb300nvl72``, ``GB200-NVL72``: NVIDIA's GB200/GB300 NVL72, 72 GPUs
  in one NVLink domain, ``NVL_RACK_PARTS``): ``72xgb300``; a rack larger than that domain (``gb300nvl144``) is
  refused, naming the ``x`` form.

Each is read only when its chip part is a known id or alias as it stands, and only as that chip. Digits glued straight
after a chip name (``h2008``, ``h1008``, ``b200-8``) are never read: they cannot be told from a model number or a
memory size (``h2008`` reads as an H200 model number or eight H200s; ``h1000`` is no H100; ``a100-40`` is 40 GB), so such
a spec is refused naming each ``x`` spelling it could be, where the digits could be a count of that chip at all
(``_could_be_a_count``: one node or whole nodes, not a memory size of the chip, no alias hiding the chip's own number,
no TPU slice counted in TensorCores). A reading that another reading of the same text contradicts
is refused the same way. Nothing here offers a chip the spec does not spell (``core.chip_names``). Pure Python.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from mha_cli.core.errors import BadInputError, shown

NVL_RACK_PARTS = frozenset({"gb200", "gb300"})
"""Target ids whose row is one GPU of an NVL rack (``links.NODE_DEVICES``: NVIDIA GB200/GB300 NVL72, 72 GPUs in one
NVLink domain), so ``gb300nvl72`` names 72 of them."""

_AFTER = re.compile(r"(.+?)\s*[x*]\s*([0-9]+)")
_BEFORE = re.compile(r"([0-9]+)\s*([a-z].*)")
_RACK = re.compile(r"(.+?)[-_ ]?nvl([0-9]+)")


class GluedCount(NamedTuple):
    """A count read off a target spec: the chip part as typed, the devices, and whether it named a whole rack."""

    chip: str
    count: int
    rack: bool = False


def read_glued_count(
    text: str, spec: str, resolve: Callable[[str], str | None], max_devices: int, memory: Callable[[str], set[float]]
) -> GluedCount | None:
    """The count ``text`` (a target spec less any ``Nx`` in front; ``spec``, the whole, for messages) carries after
    the chip, glued in front of it or as its rack (the module docstring); ``resolve`` gives a chip part's target id
    (None: not a known id or alias). None when it carries none; ``BadInputError`` when readings of it disagree."""
    key = text.strip().lower()
    read: list[GluedCount] = []
    if (after := _AFTER.fullmatch(key)) and resolve(after.group(1)):
        read.append(GluedCount(after.group(1), int(after.group(2))))
    if (before := _BEFORE.fullmatch(key)) and resolve(before.group(2)):
        read.append(GluedCount(before.group(2), int(before.group(1))))
    if (rack := _RACK.fullmatch(key)) and resolve(rack.group(1)) in NVL_RACK_PARTS:
        _refuse_a_larger_domain(spec, rack.group(1), int(rack.group(2)), resolve)
        read.append(GluedCount(rack.group(1), int(rack.group(2)), rack=True))
    if read and not any(1 <= r.count <= max_devices for r in read):  # b200x0, 0b200: a count, out of range
        raise BadInputError(f"device count in {shown(spec)} must be between 1 and {max_devices:,}")
    read = [r for r in read if 1 <= r.count <= max_devices]
    if not read:
        return None
    others = [
        r
        for r in _glued_digits(key, resolve, max_devices, memory)
        if (resolve(r.chip), r.count) != (resolve(read[0].chip), read[0].count)
    ]
    if len({(resolve(r.chip), r.count) for r in read}) > 1 or others:
        raise _refusal(spec, [*read, *others])
    return read[0]


def _refuse_a_larger_domain(spec: str, chip: str, count: int, resolve: Callable[[str], str | None]) -> None:
    """Refuses an NVL rack larger than the part's NVLink domain (``gb300nvl144``: the name promises 144 GPUs in one
    domain, a GB300's holds 72, ``core.links.NODE_DEVICES``), naming the ``x`` form of as many GPUs over racks."""
    from mha_cli.core.links import node_devices

    domain = node_devices(str(resolve(chip)))
    if count > domain:
        raise BadInputError(
            f"{shown(spec)}: a {chip.upper()}'s NVLink domain holds {domain} GPUs (NVL{domain}); for {count:,} of them"
            f" over several racks write {count}x{chip}"
        )


def refuse_glued_digits(
    text: str, spec: str, resolve: Callable[[str], str | None], max_devices: int, memory: Callable[[str], set[float]]
) -> None:
    """Refuses ``text`` when digits glued straight after a chip name could be a count (``h2008``: ``8xh200``; ``h2``
    then ``008`` or ``h20`` then ``08`` is none), naming each ``x`` spelling; returns when none could."""
    glued = _glued_digits(text.strip().lower(), resolve, max_devices, memory)
    if glued:
        raise _refusal(spec, glued)


def _glued_digits(
    key: str, resolve: Callable[[str], str | None], max_devices: int, memory: Callable[[str], set[float]]
) -> list[GluedCount]:
    """Every reading of ``key`` as a known chip name then a count of digits (a ``-``, ``_`` or space between them
    allowed), the longest chip name first, that could be a count (``_could_be_a_count``)."""
    splits = [(key[:i].rstrip("-_ "), key[i:]) for i in range(len(key) - 1, 0, -1) if key[i:].isdigit()]
    return [
        GluedCount(chip, int(digits))
        for chip, digits in splits
        if (found := resolve(chip))
        and 1 <= int(digits) <= max_devices
        and _could_be_a_count(chip, found, digits, memory)
    ]


def _could_be_a_count(chip: str, target_id: str, digits: str, memory: Callable[[str], set[float]]) -> bool:
    """Whether ``digits`` glued after ``chip`` (target ``target_id``) may be a device count worth offering as
    ``{count}x{chip}`` (trial 304 #1, #6; review 305 #3, #4): a count of one node or of whole nodes (``b200-8``,
    ``h100-16``), never with a leading zero, nor a memory size of that chip's rows (``a100-40``, ``a10080``,
    ``h20-96``), nor after an alias that leaves out the chip's own number (``gaudi1`` is Gaudi 1, where ``gaudi`` is
    Gaudi 3), nor a TPU v4 or v5p slice (``tpu-v5p-8`` counts 8 TensorCores, 4 chips; v5e and v6e slices count
    chips). ``memory``: the GB of the rows of a target's chip (``core.targets.chip_memory``: a100 -> {40, 80})."""
    from mha_cli.core.links import node_devices

    count, node = int(digits), node_devices(target_id)
    sizes = memory(target_id)
    own_number = re.search(r"[0-9]+$", target_id)
    hides_its_number = own_number is not None and own_number.group() not in chip
    return (
        not digits.startswith("0") and (count <= node or count % node == 0) and float(count) not in sizes
        and not hides_its_number and target_id not in SLICES_OF_CORES
    )  # fmt: skip


SLICES_OF_CORES = frozenset({"tpu-v4", "tpu-v5p"})
"""TPUs whose slice names count TensorCores, two a chip (Google Cloud's TPU v4 and v5p docs: a v5p-8 is 4 chips)."""


def _refusal(spec: str, readings: list[GluedCount]) -> BadInputError:
    spellings = list(dict.fromkeys(f"{r.count}x{r.chip}" for r in readings))
    return BadInputError(
        f"unknown target {shown(spec)}: digits glued to a chip name are not read as a count (they may be part of the"
        f" model number or a memory size in GB); a count goes in front with an x: did you mean"
        f" {' or '.join(spellings)}?"
    )
