"""``mha verify``: build a config's whole decoder in torch, measure its weights, cache and latency.

``plan`` decides what to build, predicts its bytes from the core ring and checks that it fits;
``rank`` builds and measures one tensor-parallel rank's stack (``measure_rank``, the seam for a
multi-process runner); ``measure`` holds the timers, byte counters and the CUDA allocator check;
``numerics`` compares cached decode with the full forward; ``scopes`` extrapolates to every layer
(``per_rank``) and every rank (``whole_model``); ``report`` is the result model; ``run`` puts them
together. Imported only by ``mha verify`` (it imports torch).
"""

from mha_cli.verify.rank import measure_rank
from mha_cli.verify.report import NumericsResult, RankResult, TimingStats, VerifyReport
from mha_cli.verify.run import STAGES, build_report, run_verify

__all__ = [
    "STAGES",
    "NumericsResult",
    "RankResult",
    "TimingStats",
    "VerifyReport",
    "build_report",
    "measure_rank",
    "run_verify",
]
