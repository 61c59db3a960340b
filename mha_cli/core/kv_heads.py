"""How many KV heads a shape is sized with before the trade-off step prices every candidate (rule MHA020)."""

from __future__ import annotations

from mha_cli.core.rules import catalog as C
from mha_cli.core.schemas import Variant


def small_kv_heads(n_heads: int) -> int | None:
    """MHA012: the KV heads (a divisor of n_heads between 1 and it: GQA, as public small models use) whose group is
    nearest ``SMALL_MODEL_GROUP`` query heads, fewer KV heads on a tie; None when n_heads has no such divisor (a
    prime: the other rules decide)."""
    choices = [k for k in range(2, n_heads) if n_heads % k == 0]
    if not choices:
        return None
    return min(choices, key=lambda k: (abs(n_heads // k - C.SMALL_MODEL_GROUP), k))


def provisional_attention(n_heads: int, variant: Variant | None, small: bool = False) -> tuple[Variant, int]:
    """The attention the shape is sized with before the trade-off step prices every candidate: an explicit
    --variant, else for a small budget (MHA012) GQA with ``small_kv_heads``, else MHA up to ``FEW_HEADS`` heads,
    else GQA with the balanced KV-head count (MHA020)."""
    if small and variant is None and (kv := small_kv_heads(n_heads)) is not None:
        return "GQA", kv
    if variant == "MHA" or (variant is None and n_heads <= C.FEW_HEADS):
        return "MHA", n_heads
    if variant in ("MQA", "MLA"):
        return variant, 1 if variant == "MQA" else n_heads
    kv = balanced_kv_heads(n_heads)
    return ("GQA", kv) if kv is not None else ("MQA", 1)


def tp_friendly(n_kv_heads: int) -> bool:
    """Whether tensor parallelism of 2, 4 and 8 splits these KV heads (they divide 8, or 8 divides them)."""
    return C.BALANCED_KV_HEADS % n_kv_heads == 0 or n_kv_heads % C.BALANCED_KV_HEADS == 0


def balanced_kv_heads(n_heads: int, tp: int | None = None) -> int | None:
    """MHA020: the fewest KV heads from ``max(8, n_heads / 8)`` up (group at most 8, or 8 KV heads) that divide
    n_heads, else the most below it; from 16 heads on only counts tp 2/4/8 split (``tp_friendly``). With ``tp``
    asked that does not split that count (tp 5 or 7: neither divides the other), the most it splits at or below it,
    else the fewest above (trial 311 #1: at --tp 5 the cache cap stood at GQA-4, which tp 5 cannot run, so every GQA
    was over it and MLA was picked; review 312 #5: not the nearest above where one below stays within the cap).
    None when n_heads has no divisor between 1 and itself."""
    choices = [k for k in range(2, n_heads) if n_heads % k == 0]
    friendly = [k for k in choices if tp_friendly(k)]
    if n_heads >= 16 and any(n_heads // k <= C.MAX_QUALITY_GROUP for k in friendly):
        choices = friendly
    if not choices:
        return None
    target = max(C.BALANCED_KV_HEADS, -(-n_heads // C.MAX_QUALITY_GROUP))
    above = [k for k in choices if k >= target]
    balanced = min(above) if above else max(choices)
    if tp is None or tp <= 1 or balanced % tp == 0 or tp % balanced == 0:
        return balanced
    split = [k for k in range(2, n_heads) if n_heads % k == 0 and (k % tp == 0 or tp % k == 0)]
    below = [k for k in split if k <= balanced]
    return max(below) if below else min(split, default=balanced)
