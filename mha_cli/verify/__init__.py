"""``mha verify``: build a config's whole decoder in torch, measure its weights, cache and latency.

``plan`` decides what to build, predicts its bytes from the core ring and checks that it fits;
``rank`` builds and measures one tensor-parallel rank's stack (``measure_rank``, the seam for a
multi-process runner); ``measure`` holds the timers, byte counters and the CUDA allocator check;
``numerics`` compares cached decode with the full forward; ``scopes`` extrapolates to every layer
(``per_rank``) and every rank (``whole_model``); ``report`` is the result model; ``run`` puts them
together. Imported only by ``mha verify`` (``rank``, ``measure``, ``numerics``, ``run`` import torch;
``plan``, ``report`` and ``scopes`` do not, so ``mha verify`` checks its options before paying for torch).
The names below are loaded on first use, so importing ``mha_cli.verify.plan`` does not import torch.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {
    "measure_rank": "mha_cli.verify.rank",
    "NumericsResult": "mha_cli.verify.report",
    "RankResult": "mha_cli.verify.report",
    "TimingStats": "mha_cli.verify.report",
    "VerifyReport": "mha_cli.verify.report",
    "STAGES": "mha_cli.verify.plan",
    "build_report": "mha_cli.verify.run",
    "run_verify": "mha_cli.verify.run",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    """``from mha_cli.verify import run_verify``: the attribute from its module, imported now."""
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
