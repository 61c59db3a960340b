"""Did-you-mean: the known names closest to a mistyped one (difflib), for every "unknown X" error."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

SUGGESTIONS = 4
CUTOFF = 0.6
"""difflib's similarity ratio a known name must reach to be suggested (``h10`` -> ``h100``; ``zzz`` -> nothing)."""


def close_names(word: str, known: Iterable[str], n: int = SUGGESTIONS) -> list[str]:
    """The known names most like ``word`` (case-insensitive), best first; empty when none is close."""
    by_key = {name.lower(): name for name in known}
    return [by_key[key] for key in difflib.get_close_matches(str(word).strip().lower(), by_key, n=n, cutoff=CUTOFF)]


def did_you_mean(word: str, known: Iterable[str], otherwise: str) -> str:
    """``"did you mean a, b?"``, or ``otherwise`` (e.g. ``"none is close: run `mha presets`"``) when nothing is close."""
    close = close_names(word, known)
    return f"did you mean {', '.join(close)}?" if close else otherwise
