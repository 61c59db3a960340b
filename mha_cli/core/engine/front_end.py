"""The front end: what a served request spends outside the engine's steps, per engine generation, in its TTFT.

Between a benchmark client's send and the engine's queue a request crosses the API server (HTTP, the chat template,
tokenising) and a process hop (vLLM V1's front end to its engine core over ZMQ; SGLang's tokenizer manager to its
scheduler); its first token comes back through detokenising and streaming (SGLang's detokenizer process). None of
it is in a step's time. The simulator (``core.serve.simulate``) already queues an arrival behind the step in
progress, and the closed form (``core.cost.serving``) adds half a decode step for it; this term is the rest: one
fixed time a request, added to every TTFT (``DeviceProfile.request_overhead_s`` of a generation's prior).

Each value is cited from a public measurement (its URL) or fitted by ``benchmarks/fit_priors.py --set 2025
--front-end`` on the lone-request rows (one user) of the generation's `fit` sources only, the step constants held
at their shipped values; a generation with neither has none (0). Pure Python.
"""

from typing import NamedTuple

from mha_cli.core.schemas import GenerationId


class FrontEnd(NamedTuple):
    """One generation's front-end time and where it comes from."""

    seconds: float
    """Added to every request's TTFT (seconds)."""
    source: str
    """Cited (URL) or fitted (on which rows), in a line."""


NO_MEASUREMENT = "no published lone-request TTFT of this generation fitted or cited: none priced"

FRONT_ENDS: dict[GenerationId, FrontEnd] = {
    "vllm-v1": FrontEnd(
        0.045,
        "cited: a lone request's TTFT above its prefill kernels' time, vLLM 0.18.0 on H200 SXM, 9,000-token prompts:"
        " +41, +45, +52 ms for Qwen3-0.6B, -8B, -14B (the middle one taken);"
        " https://github.com/ai-dynamo/aiconfigurator/pull/1166",
    ),
    "sglang-0.5": FrontEnd(
        0.112,
        "fitted on the 12 one-user rows of sglang-0.5's fit sources in tests/fixtures/serving_benchmarks_2025.yaml"
        " (mean |log(predicted / measured)| of mean TTFT, step constants as shipped); the held-out sources unused",
    ),
}  # fmt: skip
"""The generations with a value; every other one has none (``front_end``)."""


def front_end(generation: str | None) -> FrontEnd:
    """The front-end time of ``generation`` (an id of ``core.engine.generations``); None or a generation without
    evidence: 0 seconds, and why."""
    if generation is None:
        return FrontEnd(0.0, "no engine generation: the default constants, fitted with TTFT in their loss, carry it")
    return FRONT_ENDS.get(generation, FrontEnd(0.0, NO_MEASUREMENT))  # type: ignore[call-overload]
