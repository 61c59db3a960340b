"""The requests a benchmark client sends, and when: the clients of ``vllm bench serve`` (and genai-perf, GuideLLM),
as the simulator replays them.

- **Lengths**: fixed, drawn in a range as ``vllm bench serve --dataset-name random --random-range-ratio r`` draws
  them (each length uniform over the integers [floor(n (1 - r)), ceil(n (1 + r))], input and output apart), or
  (input, output) pairs read from a file.
- **Arrivals**: a closed loop (``--max-concurrency N --request-rate inf``: every request is ready at t = 0 and N
  are in flight, the next sent when one ends), or an open loop at a rate (``--request-rate R``): gaps drawn from a
  gamma distribution of shape ``burstiness`` and mean 1 / R (burstiness 1 is Poisson; below 1 burstier), optionally
  capped at ``max_concurrency`` in flight as the client's semaphore caps it. A request's latency counts from when
  the client sends it (after the semaphore), as ``vllm bench serve`` measures it.

Source: vLLM ``vllm/benchmarks/serve.py`` (``get_request``, ``limited_request_func``) and
``vllm/benchmarks/datasets.py`` (``RandomDataset``). Pure Python; draws are seeded.
"""

import math
import random
from pathlib import Path
from typing import NamedTuple

from mha_cli.core.errors import BadInputError, shown_path
from mha_cli.core.record import Record

MAX_REQUESTS = 1_000_000
"""Requests a simulation takes at most."""


class LengthsReplayed(Record):
    """A ``--lengths-file`` the simulated loop replays, summed up (plan's JSON ``lengths_file``; its text header)."""

    path: str
    """The file as typed."""
    pairs: int
    """(input, output) pairs it holds."""
    mean_isl: float
    """Their mean prompt tokens (the closed form prices ``--isl``, not this)."""
    mean_osl: float
    """Their mean output tokens (the closed form prices ``--osl``)."""


def lengths_replayed(path: Path, lengths: list[tuple[int, int]]) -> LengthsReplayed:
    """``path``'s pairs ``lengths`` (``read_lengths``), summed up."""
    return LengthsReplayed(
        path=str(path), pairs=len(lengths), mean_isl=sum(prompt for prompt, _ in lengths) / len(lengths),
        mean_osl=sum(output for _, output in lengths) / len(lengths),
    )  # fmt: skip


class Workload(NamedTuple):
    """What the client sends: one (input, output) length pair per request, and its arrival law."""

    lengths: list[tuple[int, int]]
    """(prompt tokens, output tokens) of each request, in the order sent."""
    rate: float | None = None
    """Requests per second (open loop); None: all ready at once (closed loop)."""
    burstiness: float = 1.0
    """The gamma shape of the gaps between arrivals (1: Poisson)."""
    max_concurrency: int | None = None
    """Requests in flight at most (the client's semaphore); None: no cap (an open loop's default)."""
    seed: int = 0
    send_times: list[float] | None = None
    """Replayed arrivals (a measured run's), in seconds from the start, instead of draws at ``rate``."""
    prefix_len: int = 0
    """Leading prompt tokens every request shares (a system prompt; ``vllm bench serve --random-prefix-len``),
    part of each prompt's length."""
    prefix_groups: int = 1
    """How many different prefixes of ``prefix_len`` tokens the requests carry: request i carries prefix i mod K
    (``core.serve.offload``)."""
    warm_prefix: bool = False
    """The engine's cache holds the prefix before the first request (a benchmark's warm-up requests computed it)."""

    def arrivals(self) -> list[float]:
        """When each request is ready to send, in seconds from the start (before the concurrency cap)."""
        if self.send_times is not None:
            return list(self.send_times)
        if self.rate is None:
            return [0.0] * len(self.lengths)
        draw = random.Random(self.seed + 1)
        shape, scale = self.burstiness, 1.0 / (self.rate * self.burstiness)
        times, now = [], 0.0
        for _ in self.lengths:
            times.append(now)
            now += draw.gammavariate(shape, scale)
        return times


def draw_bounds(n: int, range_ratio: float) -> tuple[int, int]:
    """The lengths vLLM's random dataset draws around ``n``: [floor(n (1 - r)), ceil(n (1 + r))], at least 1."""
    return max(1, math.floor(n * (1 - range_ratio))), max(1, math.ceil(n * (1 + range_ratio)))


def drawn_lengths(
    input_len: int, output_len: int, count: int, *, range_ratio: float = 0.0, seed: int = 0
) -> list[tuple[int, int]]:
    """``count`` (input, output) pairs as vLLM's random dataset draws them: each uniform over the integers
    [floor(n (1 - r)), ceil(n (1 + r))] (at least 1), or exactly n when ``range_ratio`` is 0."""
    if not 0 <= range_ratio < 1:
        raise BadInputError(f"--random-range-ratio {range_ratio:g}: give a value in [0, 1)")
    if not 1 <= count <= MAX_REQUESTS:
        raise BadInputError(f"--num-prompts {count}: give 1 to {MAX_REQUESTS:,}")
    if range_ratio == 0:
        return [(input_len, output_len)] * count
    draw = random.Random(seed)
    (in_low, in_high), (out_low, out_high) = draw_bounds(input_len, range_ratio), draw_bounds(output_len, range_ratio)
    return [(draw.randint(in_low, in_high), draw.randint(out_low, out_high)) for _ in range(count)]


MAX_LENGTHS_FILE_BYTES = 64 << 20


def read_lengths(path: Path) -> list[tuple[int, int]]:
    """(input, output) pairs from a file: one pair a line, ``INPUT OUTPUT`` or ``INPUT,OUTPUT`` (``#`` comments),
    or a JSON list of pairs or of objects with ``input_len``/``output_len`` (or ``prompt_len``)."""
    from mha_cli.core.config_io import read_text_bounded

    where = shown_path(path)
    text = read_text_bounded(path, where, limit=MAX_LENGTHS_FILE_BYTES, what="a lengths file")
    pairs: list[tuple[int, int]] = []
    stripped = text.lstrip()
    if stripped.startswith("["):
        from pydantic_core import from_json

        try:
            rows = from_json(stripped)
        except ValueError as error:
            raise BadInputError(f"{where}: not valid JSON ({error})") from None
        for index, row in enumerate(rows):
            if isinstance(row, dict):
                row = [row.get("input_len", row.get("prompt_len")), row.get("output_len")]
            pairs.append(_pair(row if isinstance(row, list) else None, f"{where} entry {index}"))
    else:
        for number, line in enumerate(text.splitlines(), start=1):
            line = line.split("#", 1)[0].replace(",", " ").strip()
            if line:
                pairs.append(_pair([_whole_number(word) for word in line.split()], f"{where} line {number}"))
    if not pairs:
        raise BadInputError(f"{where} holds no (input, output) pair: one 'INPUT OUTPUT' a line")
    if len(pairs) > MAX_REQUESTS:
        raise BadInputError(f"{where} holds {len(pairs):,} pairs: give at most {MAX_REQUESTS:,}")
    return pairs


def _whole_number(word: str) -> int | str:
    """A line's word as a token count, or the word itself where it is not a whole number (``_pair`` refuses it)."""
    try:
        return int(word)
    except ValueError:
        return word


def _pair(values: list[object] | None, where: str) -> tuple[int, int]:
    """Two token counts, each a whole number (a JSON integer, never a boolean, float or string) of at least 1."""
    if values is None or len(values) != 2 or not all(type(value) is int for value in values):
        raise BadInputError(f"{where}: give two token counts (input, output), whole numbers")
    first, second = values
    if first < 1 or second < 1:
        raise BadInputError(f"{where}: token counts must be at least 1, got ({first}, {second})")
    return first, second
