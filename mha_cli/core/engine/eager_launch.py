"""A measured host time per eagerly launched operator of a prompt step, per engine generation and GPU vendor.

``core.engine.prefill_graphs`` prices an SGLang prompt step run outside CUDA graphs as max(its device work, the
operators its model code launches one by one (``core.engine.sglang_eager_ops``) x the host's time per operator).
That time is ``prefill_dispatch_overhead_s``, fitted on a generation's one-user fit rows' TTFT
(``benchmarks/fit_priors.py --set 2025 --prefill``), unless the generation carries a measured value for the GPU's
vendor in ``MEASURED_LAUNCHES``: then every profile of that vendor prices with it and the fit holds it fixed
(``fit_priors.fit_prefill_launch``), so TTFT's other parts cannot pull it. ``prefill_launch_s`` chooses.

A value is a public measurement of one SGLang forward run eagerly, divided by the operators
``core.engine.sglang_eager_ops`` counts for it: the step's own time where the host bounds it (the eager time is
well above the same forward in a CUDA graph), which is what the max() above inverts. sglang-0.5 on NVIDIA carries
``SGLANG_EXTEND_DEEPSEEK`` since the lead's refit of 2026-12-04 (its constants refitted with it held,
``outputs/serving/priors_2025.md``, sglfloor and the refit after it); AMD has no measurement and fits its own.
Pure Python.
"""

from typing import NamedTuple

from mha_cli.core.schemas import GenerationId


class EagerLaunch(NamedTuple):
    """One measured host time per eagerly launched operator and where it comes from."""

    seconds: float
    """The host's time per operator of an eager forward (seconds)."""
    source: str
    """The measurement cited, its URL and how the value follows from it, in a line."""


DEEPSEEK_V3_TP8_FP8_OPS = 1935
"""``sglang_eager_ops.forward_ops`` for DeepSeek-V3 at tp 8 with fp8 block weights (3 dense layers of 24, 58 MoE
layers of 32, 7 outside): the forward ``SGLANG_EXTEND_DEEPSEEK`` divides."""

SGLANG_EXTEND_DEEPSEEK = EagerLaunch(
    82.64e-3 / DEEPSEEK_V3_TP8_FP8_OPS,
    "measured: one SGLang prefill (EXTEND) batch of 1 new token, DeepSeek-V3, logged 'forward cost' 82.64 ms run"
    " eagerly against 23.10 ms replayed from a prefill CUDA graph (the PR's own log lines, 2025-10, SGLang main"
    " between 0.5.3 and 0.5.4; GPU and tp not named, 'TP0' logged): host-bound, so 82.64 ms / 1,935 operators"
    " = 42.7 us an operator; https://github.com/sgl-project/sglang/pull/12160",
)
"""NVIDIA (CUDA graphs). The other SGLang measurement read gives less: Llama-3-8B's decode step at batch 1, 8.23 ms
eager against 7.35 ms graphed (flashinfer; 9.28 against 7.06 ms triton), 327 operators: 25.2 (28.4) us an operator
(https://github.com/sgl-project/sglang/pull/1401, SGLang 0.3.1). No AMD measurement was found."""

MEASURED_LAUNCHES: dict[tuple[GenerationId, str], EagerLaunch] = {("sglang-0.5", "nvidia"): SGLANG_EXTEND_DEEPSEEK}
"""(generation, vendor as ``Target.vendor`` lower-cased) -> its measured launch time; a pair absent here fits its own
on TTFT."""


def measured_launch(generation: str | None, vendor: str | None) -> EagerLaunch | None:
    """The measured launch time ``generation`` carries on ``vendor``'s GPUs; None where it has none (fit it)."""
    if generation is None or vendor is None:
        return None
    return MEASURED_LAUNCHES.get((generation, vendor.lower()))  # type: ignore[arg-type]
