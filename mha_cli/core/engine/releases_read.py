"""The newest release of each engine whose source mha read, and the one line a later release typed
(``--engine vllm@0.99``) gets: its launch flags are priced as those of the newest release whose argument parsers were
read, its memory and step rules as those of the newest release whose memory code was read. Pure Python."""

from __future__ import annotations

from typing import NamedTuple

from mha_cli.core.engine.prefill_graphs import LATEST_READ as SGLANG_READ
from mha_cli.core.engine.release_numbers import ENGINE_NAMES as ENGINE_NAMES
from mha_cli.core.engine.release_numbers import LATEST as PAST_EVERY
from mha_cli.core.engine.release_numbers import release_key
from mha_cli.core.schemas import EngineName

VLLM_MEMORY_RULES_READ: tuple[int, int] = (0, 33)
"""The newest vLLM release whose memory code (model runners, dummy sampler, CUDA-graph estimate, sampler tables) mha
read; a later one is priced with its rules. 0.33.0 (the ``vllm==0.33.0`` wheel) changes one rule of 0.32's: Model
Runner V2's ``_dummy_sampler_run`` samples a second time with warmup parameters (``core.engine.sampler``, priced).
0.34.0 drops the V1 runner (``v1/worker/gpu_model_runner.py``), which 0.32-0.33 keep for nothing priced here, and
reworks the CUDA-graph capture tiers of dynamic speculation (not read)."""


class NewestRead(NamedTuple):
    """The newest release of an engine read: its flags (``release``, where: ``source``) and its rules."""

    release: str
    source: str
    rules: str
    """The newest release whose memory and step rules were read (a later one is priced with them)."""


NEWEST_READ: dict[EngineName, NewestRead] = {
    "vllm": NewestRead(
        "0.34.0", "its argument parsers, every minor release to 0.34.0 (outputs/engine_flags/presence.json)",
        ".".join(map(str, VLLM_MEMORY_RULES_READ)),
    ),
    "sglang": NewestRead(
        SGLANG_READ, f"its server arguments, every 0.4.x and 0.5.x release to {SGLANG_READ} (presence.json)",
        SGLANG_READ,
    ),
    "trtllm": NewestRead(
        "1.2", "tensorrt_llm/_torch/pyexecutor/_util.py of the 1.1-1.2 line (core.engine.trtllm_profile)", "1.2"
    ),
}  # fmt: skip
"""Per engine, the newest release read: the flags table stops at ``release``, the memory and step rules at
``rules`` (vLLM: ``VLLM_MEMORY_RULES_READ``; SGLang: one release for both, ``prefill_graphs.LATEST_READ``,
whose prefill graphs and step defaults were read in the same wheels)."""


def past_newest_read(engine: EngineName, typed: str | None) -> NewestRead | None:
    """The newest release read when ``typed`` (``--engine vllm@0.99``'s ``0.99``) is a later one; else None."""
    if typed is None:
        return None
    newest = NEWEST_READ[engine]
    key, read = release_key(typed), release_key(newest.release)
    if key[2] == PAST_EVERY:  # a minor alone (0.34): newer only when the minor is
        key = (key[0], key[1], -1, 0) if key[:2] == read[:2] else key
    return newest if key > read else None


def past_newest_read_note(engine: EngineName, typed: str, newest: NewestRead) -> str:
    """The one line saying which releases' flags and rules priced a release past the newest read."""
    rules = "its rules too" if newest.rules == newest.release else f"its memory and step rules those of {newest.rules}"
    return (
        f"{ENGINE_NAMES[engine]} {typed} is newer than the newest release read: its launch flags are priced as"
        f" {newest.release}'s ({newest.source}), {rules}"
    )
