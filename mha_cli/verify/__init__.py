"""``mha verify``: build a config's attention layers in torch, measure the cache and the latency.

``plan`` decides what to build and whether it fits; ``measure`` holds the timers and byte counters;
``numerics`` compares cached decode with the full forward; ``report`` is the result model; ``run``
puts them together. Imported only by ``mha verify`` (it imports torch).
"""

from mha_cli.verify.report import NumericsResult, TimingStats, VerifyReport
from mha_cli.verify.run import STAGES, run_verify

__all__ = ["STAGES", "NumericsResult", "TimingStats", "VerifyReport", "run_verify"]
