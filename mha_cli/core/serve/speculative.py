"""The serving loop under speculative decoding: a request advances T tokens a step on average.

The simulator steps the engine as it is: each step's decodes verify k + 1 tokens each and the drafter runs for
them (``core.serve.step_cost``). What a decoding request gains from a step is one *chunk* of T tokens on average
(the acceptance length): the workload's outputs are counted in chunks, 1 + ceil((output - 1) / T) steps of
decode after the prompt's first token (``step_lengths``), and the run's figures are turned back into tokens
(``per_token``):

- ITL: the gap between chunks, as ``vllm bench serve`` measures it (its streaming clients append one gap per
  received chunk, ``benchmarks/lib/endpoint_request_func.py``; a step's accepted tokens arrive as one chunk), so
  the simulated ITL is the step time, about T x the TPOT;
- TPOT: (e2e - TTFT) / (output tokens - 1) with the real output tokens (``vllm bench serve``'s formula);
- output tokens/s: the real output tokens over the run's duration.

What this leaves out: a request's cache and context grow by one token a step in the loop (not T), so the pool
holds a request's output tokens at 1 / T of their blocks and its attention reads a shorter context; with
prompts longer than the outputs both are a small share. Pure Python.
"""

from mha_cli.core.serve.simulate import RequestTimes, Simulation
from mha_cli.core.serve.stats import summarise
from mha_cli.core.serve.workload import Workload


def chunk_count(output: int, acceptance_length: float) -> int:
    """Steps of decode that emit ``output`` tokens: the first token from the prompt's step, then T a step."""
    return 1 + -(-(output - 1) // acceptance_length) if output > 1 else output


def step_lengths(workload: Workload, acceptance_length: float) -> Workload:
    """``workload`` with each output counted in chunks (``chunk_count``)."""
    lengths = [(prompt, int(chunk_count(output, acceptance_length))) for prompt, output in workload.lengths]
    return workload._replace(lengths=lengths)


def per_token(
    run: Simulation, times: RequestTimes, outputs: list[int], prompts: list[int]
) -> tuple[Simulation, RequestTimes]:
    """``run`` (simulated in chunks) with TPOT and throughput over the real ``outputs`` (see the module docstring)."""
    tpot = [
        (e2e - ttft) / (output - 1) if output > 1 else 0.0
        for e2e, ttft, output in zip(times.e2e, times.ttft, outputs, strict=True)
    ]
    produced = sum(outputs)
    update = {
        "tpot_ms": summarise([t for t, o in zip(tpot, outputs, strict=True) if o > 1]),
        "output_tokens_per_s": produced / run.duration_s,
        "total_tokens_per_s": (produced + sum(prompts)) / run.duration_s,
    }
    return run.model_copy(update=update), times._replace(tpot=tpot)
