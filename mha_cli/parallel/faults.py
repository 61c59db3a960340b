"""A fault a test can inject into one rank, to check that the run ends cleanly when a rank fails or hangs.

``MHA_TP_FAULT=RANK:KIND`` (e.g. ``1:hang``) makes rank RANK, once it has joined the process group,
``raise`` an error, ``exit`` at once without a word (as if killed by the OOM killer), or ``hang``
(sleep for ever); ``corrupt`` lets it run but flips the sign of its first o_proj in the tp check
(a wrong split the check must catch). Unset, nothing happens.
"""

from __future__ import annotations

import os
import time

FAULT_ENV = "MHA_TP_FAULT"
FAULT_KINDS = ("raise", "exit", "hang", "corrupt")


class InjectedFault(RuntimeError):
    """The error a ``raise`` fault raises."""


def requested_fault(rank: int, environ: dict[str, str] | None = None) -> str | None:
    """The fault ``MHA_TP_FAULT`` asks of ``rank`` (a ``FAULT_KINDS`` name), or ``None``."""
    spec = (os.environ if environ is None else environ).get(FAULT_ENV, "")
    if not spec:
        return None
    target, _, kind = spec.partition(":")
    if kind not in FAULT_KINDS or not target.isdigit():
        raise ValueError(f"{FAULT_ENV}={spec!r}: expected RANK:KIND with KIND one of {', '.join(FAULT_KINDS)}")
    return kind if int(target) == rank else None


def inject_fault(rank: int, environ: dict[str, str] | None = None) -> None:
    """Act out the fault ``MHA_TP_FAULT`` asks of ``rank``, if it is one that stops the rank."""
    kind = requested_fault(rank, environ)
    if kind is None or kind == "corrupt":
        return
    if kind == "raise":
        raise InjectedFault(f"injected fault on rank {rank} ({FAULT_ENV}={rank}:{kind})")
    if kind == "exit":
        os._exit(9)
    while True:  # hang
        time.sleep(3600)
