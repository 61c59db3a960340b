"""The RoPE base a design of each context needs by Men et al.'s bound, for rule MHA042's table.

    python benchmarks/rope_base_bound.py            # prints the table, as core.recommend.rope_base holds it
    python benchmarks/rope_base_bound.py --check    # exit 1 where the shipped table differs from a fresh count

Men et al. 2024 ("Base of RoPE Bounds Context Length", arXiv 2405.14591) ask that attention still prefer a key
similar to the query over a random one at every distance the model is trained on, which holds while

    B(m) = sum over i < d/2 of cos(m * base ** (-2 i / d))  >=  0    for every distance m up to the context,

d being the rotated dimensions of a head. For each context 2**10 .. 2**24 and each head_dim the rules give (32, 64
and 128, every dimension rotated; MLA designs keep the floor), this finds the first base among the
round values 1, 2 and 5 x 10**k, from Llama 3's 500,000 up, that keeps B(m) >= 0 at every integer m <= context. Each
candidate is checked itself (the smallest base that passes is not where every larger one passes: B is no monotone
function of the base). numpy (torch's dependency) counts it: about a minute in all.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mha_cli.core.recommend.rope_base import (
    BASE_FLOOR,
    BASES_BY_ROTARY_DIMS,
    CONTEXTS,
    ROUND_BASES,
)

CHUNK = 1 << 15
"""Distances checked at once (a 32,768 x d/2 block of cosines)."""


def decays_in_order(base: float, context: int, rotary_dims: int) -> bool:
    """Whether B(m) >= 0 at every integer distance m from 0 to ``context`` (the bound's condition)."""
    theta = base ** (-2.0 * np.arange(rotary_dims // 2) / rotary_dims)  # (d/2,)
    for start in range(0, context + 1, CHUNK):
        distances = np.arange(start, min(context + 1, start + CHUNK), dtype=np.float64)[:, None]  # (chunk, 1)
        if (np.cos(distances * theta).sum(axis=1) < 0).any():  # (chunk,): B at each distance
            return False
    return True


def first_round_base(context: int, rotary_dims: int) -> float | None:
    """The first of ``ROUND_BASES`` from ``BASE_FLOOR`` up that passes at ``context``; None: none does."""
    return next(
        (base for base in ROUND_BASES if base >= BASE_FLOOR and decays_in_order(base, context, rotary_dims)), None
    )


def fresh_table() -> dict[int, tuple[float, ...]]:
    """{rotary dims: the base for each of ``CONTEXTS``}, counted now."""
    table = {}
    for dims in BASES_BY_ROTARY_DIMS:
        bases = []
        for context in CONTEXTS:
            base = first_round_base(context, dims)
            if base is None:
                raise SystemExit(f"no round base up to {ROUND_BASES[-1]:g} passes at {context} tokens, d {dims}")
            bases.append(base)
            print(f"  d {dims:>3}, {context:>10,} tokens: {base:g}", file=sys.stderr, flush=True)
        table[dims] = tuple(bases)
    return table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 where the shipped table differs")
    args = parser.parse_args()
    table = fresh_table()
    for dims, bases in table.items():
        print(f"    {dims}: ({', '.join(f'{base:.0e}'.replace('e+', 'e') for base in bases)}),")
    if args.check and table != BASES_BY_ROTARY_DIMS:
        print("the shipped table differs from the count above", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
