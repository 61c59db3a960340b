"""Rule MHA042: the RoPE base a design of a given context is given, from Men et al.'s bound (pure Python).

The rule applies to designs whose heads rotate every dimension (MHA, GQA, MQA: head_dim 32, 64 or 128). An MLA design
keeps the floor: the bound sums over every rotated dimension of the query-key product, where MLA's similarity runs
through its unrotated qk_nope_head_dim dimensions and only the decoupled key rotates.
"""

from __future__ import annotations

from typing import NamedTuple

from mha_cli.core.rules.catalog import ROPE_THETA

BASE_FLOOR = ROPE_THETA
"""Llama 3's 500,000 (Llama 2's was 10,000): every design's base is at least this."""
ROUND_BASES: tuple[float, ...] = tuple(float(k * 10**e) for e in range(5, 15) for k in (1, 2, 5))
"""The bases the rule chooses among: 1, 2 and 5 x 10**k."""
CONTEXTS: tuple[int, ...] = tuple(1 << p for p in range(10, 25))
"""The contexts the table holds: 1,024 to 16,777,216 tokens, powers of two."""
BASES_BY_ROTARY_DIMS: dict[int, tuple[float, ...]] = {
    32: (5e05, 5e05, 2e06, 1e07, 5e07, 2e08, 1e09, 5e09, 2e10, 1e11, 5e11, 2e12, 1e13, 5e13, 5e14),
    64: (5e05, 5e05, 5e05, 5e05, 2e06, 1e07, 1e08, 5e08, 5e08, 5e09, 5e09, 5e10, 1e12, 2e12, 1e13),
    128: (5e05, 5e05, 5e05, 5e05, 5e05, 2e06, 5e06, 1e07, 5e07, 2e08, 1e09, 2e09, 1e10, 2e10, 1e11),
}  # fmt: skip
"""{rotated dimensions of a head: the base for each of ``CONTEXTS``}: the first of ``ROUND_BASES`` from
``BASE_FLOOR`` up whose B(m) = sum_i cos(m base^(-2i/d)) stays >= 0 at every distance m up to the context (Men et al.
2024's condition for attention to prefer similar tokens at every trained distance), counted by
``benchmarks/rope_base_bound.py`` (which checks it), and in part by ``tests/test_rope_base.py``."""


class RopeBase(NamedTuple):
    """The base chosen and the context of the table's row it was read at."""

    theta: float
    row_tokens: int
    beyond_table: bool
    """The context is past the table's last row (16M tokens): the base is that row's, a lower bound."""


def rope_base(seq_len: int, rotary_dims: int) -> RopeBase:
    """MHA042's base for a design of ``seq_len`` tokens whose heads rotate all their ``rotary_dims`` dimensions (32,
    64 or 128, the widths MHA010 gives; another width takes the row below it, whose base is the larger): the table's
    row of the smallest context at or above ``seq_len`` (the last past it)."""
    # narrower heads need larger bases: a width between rows takes the row below it, one below every row the first
    rows = [dims for dims in BASES_BY_ROTARY_DIMS if dims <= rotary_dims]
    bases = BASES_BY_ROTARY_DIMS[max(rows, default=min(BASES_BY_ROTARY_DIMS))]
    at = next((i for i, context in enumerate(CONTEXTS) if context >= seq_len), len(CONTEXTS) - 1)
    return RopeBase(bases[at], CONTEXTS[at], seq_len > CONTEXTS[-1])
