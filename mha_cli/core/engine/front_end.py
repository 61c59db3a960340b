"""The front end: what a served request spends outside the engine's steps, per engine generation, in its TTFT.

Between a benchmark client's send and the engine's queue a request crosses the API server (HTTP, the chat template,
tokenising) and a process hop (vLLM V1's front end to its engine core over ZMQ; SGLang's tokenizer manager to its
scheduler); its first token comes back through detokenising and streaming (SGLang's detokenizer process). None of
it is in a step's time. The simulator (``core.serve.simulate``) already queues an arrival behind the step in
progress, and the closed form (``core.cost.serving``) adds half a decode step for it; this term is the rest: one
fixed time a request, added to every TTFT (``DeviceProfile.request_overhead_s`` of a generation's prior).

Each value is cited from a public measurement of a lone request's TTFT beyond its step time (its URL): SGLang's on
a mock device (the front end alone), vLLM V1's above its prefill kernels (front end and the CPU dispatch of the
prefill, which that source puts at about 1.4 ms a layer); a generation without one takes the nearest earlier
generation's of its engine, as its step constants are (vLLM 0.21 and later: V1's, no measurement of them being
found; without it ``vllm@0.20`` and ``vllm@0.21`` differed by 45 ms in every TTFT: trial 399 #2), else none (0).
None is fitted: ``benchmarks/fit_priors.py --set 2025 --front-end`` prints what a fit on a generation's one-user fit
rows would give, a diagnostic only, since such a fit absorbs whatever the step model misprices in those rows'
prefill (``outputs/serving/priors_2025.md``). Pure Python.
"""

from typing import NamedTuple

from mha_cli.core.schemas import GenerationId


class FrontEnd(NamedTuple):
    """One generation's front-end time and where it comes from."""

    seconds: float
    """Added to every request's TTFT (seconds)."""
    source: str
    """Where the value comes from, in a line: the measurement cited and its URL."""


NO_MEASUREMENT = "no published measurement of this generation's front end cited: none priced"
CARRIED_BY_DEFAULTS = "the default constants price these steps, fitted with TTFT in their loss: they carry it"
"""Why no front end is added where the default constants price a generation's steps (review 403 #2: vLLM V1's 45
ms on a Gaudi 3 priced by them was counted twice)."""

FRONT_ENDS: dict[GenerationId, FrontEnd] = {
    "vllm-v1": FrontEnd(
        0.045,
        "cited: a lone request's TTFT above its prefill kernels' time, vLLM 0.18.0 on H200 SXM, 9,000-token prompts:"
        " +41, +45, +52 ms for Qwen3-0.6B, -8B, -14B (28, 32, 40 layers; the middle one taken). The source reads it"
        " as vLLM's CPU-side dispatch of a prefill, about 1.4 ms a layer, priced here as one fixed time (the"
        " profile does not know the model's depth);"
        " https://github.com/ai-dynamo/aiconfigurator/pull/1166",
    ),
    "sglang-0.5": FrontEnd(
        0.0069,
        "cited: a lone request's median TTFT 9.54 ms over a 2.632 ms forward, SGLang with a CPU mock device"
        " (tt-sglang-plugin, TSU=380: each forward busy-waits 1/380 s), vllm bench serve, 128-token prompts,"
        " 4 prompts at concurrency 1: 9.54 - 2.632 = 6.9 ms;"
        " https://github.com/tenstorrent/tt-inference-server/issues/3560",
    ),
}  # fmt: skip
"""The generations with a value; every other one has none (``front_end``)."""


def front_end(generation: str | None) -> FrontEnd:
    """The front-end time of ``generation`` (an id of ``core.engine.generations``): its own measurement, else the
    nearest earlier generation's of the same engine, carried as its step constants are
    (``core.cost.priors.fitted_generation_for``: vLLM 0.21's is V1's, trial 399 #2); None or a generation with no
    evidence before it: 0 seconds, and why."""
    if generation is None:
        return FrontEnd(0.0, f"no engine generation: {CARRIED_BY_DEFAULTS}")
    own = FRONT_ENDS.get(generation)  # type: ignore[call-overload]
    if own is not None:
        return own
    from mha_cli.core.engine.generations import earlier_generations

    for earlier in earlier_generations(generation):
        if earlier in FRONT_ENDS:
            measured = FRONT_ENDS[earlier]  # type: ignore[index]
            return FrontEnd(
                measured.seconds,
                f"{earlier}'s, carried: no published measurement of {generation}'s front end found; {measured.source}",
            )
    return FrontEnd(0.0, NO_MEASUREMENT)
