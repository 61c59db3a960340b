"""One replica's steps on a device profile: the served case (``ServingCase``), its step times (``Stepper``) and a
prompt's chunked prefill. ``core.cost.serving`` builds TTFT, ITL and throughput on them; ``mha kv`` and ``mha
recommend`` time one decode step and one prefill with them alone (``core.cost.latency``), so they live apart from
serving's result models, which those commands never build (each pydantic class costs its creation at import).
Pure Python.
"""

from typing import Literal, NamedTuple

from mha_cli.core.cost.profile import DeviceProfile
from mha_cli.core.cost.step import StepTime, step_time
from mha_cli.core.cost.work import ACTIVATION_BYTES, StepShape, forward_ops, prefill_shape
from mha_cli.core.pipeline import stage_layout, stage_model
from mha_cli.core.schemas import MlaCacheMode, ModelSpec
from mha_cli.core.tensor_parallel import ExpertLayout

Batching = Literal["continuous", "static"]


# A NamedTuple rather than a frozen dataclass, for start-up time (see ``core.record``).
class ServingCase(NamedTuple):
    """What is served and how: the model's formats, the deployment's shape, the load."""

    model: ModelSpec
    isl: int
    osl: int
    concurrency: int
    tp: int = 1
    pp: int = 1
    replicas: int = 1
    admitted_per_replica: int | None = None
    """What the engine's KV pool and max_num_seqs admit at once (None: every user)."""
    chunk_tokens: int = 8192
    """The engine's max_num_batched_tokens: the largest prefill chunk."""
    weight_dtype: str = "bf16"
    kv_dtype: str = "bf16"
    mla_cache: MlaCacheMode = "absorbed"
    batching: Batching = "continuous"
    experts: ExpertLayout | None = None
    """MoE: how the routed experts spread (``core.memory.expert_layout``); None: sharded over each replica's tp."""


class Stepper:
    """Times the steps of one replica on one profile: under pipeline parallelism, every stage's layers in turn,
    the embedding, LM head and sampler once, one engine step overhead, and a send at each stage boundary."""

    def __init__(self, case: ServingCase, profile: DeviceProfile) -> None:
        self.case, self.profile = case, profile
        # core.pipeline's layout: each stage its own layers (an MoE model's dense layers on the first)
        self.stages = [case.model] if case.pp == 1 else [
            stage_model(case.model, stage_layout(case.model, case.pp, s)) for s in range(case.pp)
        ]  # fmt: skip

    def step(self, *shapes: StepShape) -> StepTime:
        case = self.case
        ops = []
        for index, stage in enumerate(self.stages):
            stage_ops = forward_ops(
                stage, *shapes, tp=case.tp, weight_dtype=case.weight_dtype, kv_dtype=case.kv_dtype,
                mla_cache=case.mla_cache, experts=case.experts,
            )  # fmt: skip
            ops += [op for op in stage_ops if index == 0 or not op.outside_layers]  # embedding, head, sampler once
        time = step_time(ops, self.profile, tp=case.tp)
        host = self.profile.sequence_overhead_s * sum(shape.sequences for shape in shapes)
        if host:
            time = time.model_copy(update={"seconds": time.seconds + host, "overhead_s": time.overhead_s + host})
        if case.pp == 1:
            return time
        send = self.send_seconds(sum(shape.tokens for shape in shapes))
        return time.model_copy(update={"seconds": time.seconds + send, "collective_s": time.collective_s + send})

    def send_seconds(self, tokens: int) -> float:
        """The sends between pipeline stages of a step of ``tokens`` rows: one latency and the activations once at
        each of the pp - 1 boundaries (0 without pipeline parallelism or a link)."""
        collective = self.profile.collective
        if self.case.pp == 1 or collective is None:
            return 0.0
        return (self.case.pp - 1) * (
            collective.latency_s
            + tokens * self.case.model.d_model * ACTIVATION_BYTES / collective.bandwidth_bytes_per_s
        )


def chunked_prefill(stepper: Stepper, tokens: int, chunk_tokens: int, riding: list[StepShape]) -> tuple[float, int]:
    """(seconds, steps) of one prompt of ``tokens`` in chunks of the engine's token budget, each step also running
    the ``riding`` decodes (which take their share of the budget)."""
    chunk = max(1, chunk_tokens - sum(shape.tokens for shape in riding))
    seconds, done, steps = 0.0, 0, 0
    while done < tokens:
        size = min(chunk, tokens - done)
        seconds += stepper.step(prefill_shape(size, context=done), *riding).seconds
        done, steps = done + size, steps + 1
    return seconds, steps
