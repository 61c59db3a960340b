"""One replica's steps on a device profile: the served case (``ServingCase``), its step times (``Stepper``) and a
prompt's chunked prefill. ``core.cost.serving`` builds TTFT, ITL and throughput on them; ``mha kv`` and ``mha
recommend`` time one decode step and one prefill with them alone (``core.cost.latency``), so they live apart from
serving's result models, which those commands never build (each pydantic class costs its creation at import).
Pure Python.
"""

import copy
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal, NamedTuple

from mha_cli.core.cost.profile import CollectiveCost, DeviceProfile
from mha_cli.core.cost.step import StepTime, op_seconds, op_totals, step_time
from mha_cli.core.cost.work import (
    ACTIVATION_BYTES,
    AttentionLayout,
    LayerWeights,
    Op,
    StepShape,
    absorbed_attention,
    attention_layout,
    forward_ops,
    layer_weights,
    prefill_shape,
    sequence_ops,
)
from mha_cli.core.pipeline import DEFAULT_SPLIT, stage_layouts, stage_model
from mha_cli.core.schemas import EngineName, MlaCacheMode, ModelSpec, SpeculativeSpec
from mha_cli.core.tensor_parallel import ExpertLayout

if TYPE_CHECKING:
    from mha_cli.core.cost.nodes import CollectiveSpans, NodePlacement
    from mha_cli.core.engine.mxfp4_moe import Mxfp4Kernel
    from mha_cli.core.weight_scheme import WeightScheme

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
    weight_scheme: "WeightScheme | None" = None
    """The checkpoint's scheme when the weights are priced as it stores them (``core.weight_scheme``): each linear
    layer in its rule's layout; None: every one in ``weight_dtype``."""
    kv_dtype: str = "bf16"
    mla_cache: MlaCacheMode = "absorbed"
    batching: Batching = "continuous"
    experts: ExpertLayout | None = None
    """MoE: how the routed experts spread (``core.memory.expert_layout``); None: sharded over each replica's tp."""
    separate_servers: bool = False
    """MoE replicas asked as separate servers, each with every expert (``DeploymentSpec.separate_servers``)."""
    shared_prefix: int = 0
    """Leading prompt tokens every request shares, when the engine caches prefixes (0: none, or caching off)."""
    cached_prefix: int = 0
    """Of each prompt, the tokens the prefix cache supplies once warm: the shared prefix's whole blocks, short of the
    whole prompt (``core.serve.schedulers``). The closed form computes the rest."""
    speculative: SpeculativeSpec | None = None
    """Speculative decoding (``core.cost.speculative``): each decode step drafts k tokens and verifies k + 1."""
    nodes: "NodePlacement | None" = None
    """Several nodes (``core.cost.nodes``): how many devices each holds and the link between them; None: one node."""
    host_kv_cache: bool = False
    """A host tier behind the KV cache (``--kv-offload-gib``; SGLang's hierarchical cache)."""
    pp_split: EngineName = DEFAULT_SPLIT
    """Whose split of the layers into ``pp`` stages (``core.pipeline.stage_sizes``): the serving engine's."""
    drafts_for: str | None = None
    """A drafter's own case (``core.cost.speculative.draft_stepper``): the speculative method it drafts for."""
    expert_kernel: "Mxfp4Kernel | None" = None
    """vLLM's MXFP4 MoE kernel that the engine, its release and the GPU pick for mxfp4 routed experts (gpt-oss; the
    memory plan's ``MemoryPlan.expert_kernel``): each step reads and computes the experts at its padded shapes
    (``core.cost.work.kernel_expert``); None: the checkpoint's shapes (SGLang, TensorRT-LLM, other formats)."""
    whole_prompts: bool = False
    """The engine runs each prompt whole in one step beside the running decodes, never chunked (TensorRT-LLM,
    context chunking off by default): the closed form caps running at ``core.cost.serving.whole_prompt_running``."""
    recv_interval: int = 1
    """SGLang's ``--scheduler-recv-interval``: while requests decode, a new one waits for every N-th decode step to be
    taken into the queue (``core.serve.recv_interval``); 1: the next step (every other engine)."""


class Stepper:
    """Times the steps of one replica on one profile: under pipeline parallelism, every stage's layers in turn,
    the embedding, LM head and sampler once, one engine step overhead, and a send at each stage boundary.

    A step's operations do not depend on the profile: they are counted once per step shapes and kept, shared with
    ``on``'s stepper of the same case on another profile, and stages of equal layers (a dense model's middle
    stages) share one count."""

    def __init__(self, case: ServingCase, profile: DeviceProfile) -> None:
        self.case, self.profile = case, profile
        # core.pipeline's layout as the engine splits it: each stage its own layers (an MoE model's dense layers on the
        # first); uneven stages differ, and the simulated loop's slowest stage paces it (core.serve.pipelined)
        self.stages = [case.model] if case.pp == 1 else [
            stage_model(case.model, layout) for layout in stage_layouts(case.model, case.pp, case.pp_split)
        ]  # fmt: skip
        self._same = [next(j for j in range(i + 1) if self.stages[j] == stage) for i, stage in enumerate(self.stages)]
        """Each stage's first equal stage, whose operations it shares."""
        self._layouts: list[AttentionLayout | None] = [None] * len(self.stages)  # each stage's, once priced
        self._weights: list[LayerWeights | None] = [None] * len(self.stages)
        self._ops: dict[tuple[StepShape, ...], list[Op]] = {}
        """The operations of every step counted so far, by its shapes."""
        self._totals: dict[tuple[StepShape, ...], tuple[float, float, float]] = {}
        """Their bytes, FLOPs and kernels (``core.cost.step.op_totals``), by the step's shapes."""
        self.draft: Stepper | None = None
        """The drafter's steps on the same profile (``core.cost.speculative.draft_stepper``), once made."""
        self.spans: CollectiveSpans | None = None
        """Which collectives and pipeline sends leave a node (``core.cost.nodes``); None on one node."""
        if case.nodes is not None:
            from mha_cli.core.cost.nodes import collective_spans

            expert_ranks = None if case.experts is None else case.experts.ranks
            self.spans = collective_spans(case.nodes, case.tp, case.pp, case.replicas, expert_ranks)
        self.scale_out = _scale_out(case, profile)
        """The link between nodes on ``profile``, as a collective's cost (None on one node)."""
        self._priced: dict[Op, tuple[float, bool]] = {}
        """``op_seconds`` of each operation priced so far on ``profile`` and ``scale_out`` (``step_time``'s ``priced``)."""
        self._eager_ops: int | None = None
        """``eager_ops``, once counted."""
        self._on: dict[int, Stepper] = {id(profile): self}
        """The steppers of this case on each profile asked of ``on`` so far, by the profile's ``id`` (each stepper
        keeps its profile alive, so no id is reused while it is here; shared by them all)."""

    def on(self, profile: DeviceProfile) -> "Stepper":
        """The same case on ``profile``, sharing the stages, layouts and operations counted so far (and after); the
        same stepper each time it is asked for the same profile object, so its priced operations are kept."""
        made = self._on.get(id(profile))  # a dict, not a list to scan: a fit asks for thousands of profiles
        if made is not None:
            if made.draft is None and self.draft is not None:
                made.draft = self.draft.on(profile)
            return made
        other = copy.copy(self)  # shallow: the stages, the layouts and the operations are the same objects
        other.profile = profile
        other.scale_out = _scale_out(self.case, profile)
        other._priced = {}  # prices on another profile
        other.draft = None if self.draft is None else self.draft.on(profile)
        self._on[id(profile)] = other
        return other

    def ops(self, *shapes: StepShape) -> list[Op]:
        """Every operation of one step of ``shapes`` on one rank of each stage, those outside the layers once."""
        ops = self._ops.get(shapes)
        if ops is not None:
            return ops
        case, ops, counted = self.case, [], {}
        for index, same in enumerate(self._same):
            stage_ops = counted.get(same)
            if stage_ops is None:
                stage_ops = counted[same] = forward_ops(
                    self.stages[same], *shapes, tp=case.tp, weight_dtype=case.weight_dtype, kv_dtype=case.kv_dtype,
                    mla_cache=case.mla_cache, experts=case.experts, attention=self._layouts[same],
                    weights=self.layer_weights(same),
                )  # fmt: skip
                if self._layouts[same] is None:  # kept once forward_ops (whose checks come first) has priced it
                    self._layouts[same] = self.layout(same)
                stage_ops = counted[same] = self.placed(stage_ops)
            ops += [op for op in stage_ops if index == 0 or not op.outside_layers]  # embedding, head, sampler once
        self._ops[shapes] = ops
        return ops

    def step(self, *shapes: StepShape) -> StepTime:
        case = self.case
        host = self.profile.sequence_overhead_s * sum(shape.sequences for shape in shapes)
        send = None if case.pp == 1 else self.send_seconds(sum(shape.tokens for shape in shapes))
        ops = self.ops(*shapes)
        totals = self._totals.get(shapes)
        if totals is None:
            totals = self._totals[shapes] = op_totals(ops)
        prompt = sum(shape.tokens for shape in shapes if is_prompt_chunk(shape))
        launch = self.eager_ops() * self.prompt_launch_s(prompt) if prompt else 0.0  # each operator from the host
        return step_time(
            ops, self.profile, tp=case.tp, host_s=host, send_s=send, scale_out=self.scale_out,
            priced=self._priced, totals=totals, launch_s=launch,
        )  # fmt: skip

    def prompt_launch_s(self, prompt_tokens: int) -> float:
        """The host's seconds per operator of a step holding ``prompt_tokens`` prompt tokens (0: the step runs in
        CUDA graphs): the profile's ``prefill_dispatch_overhead_s`` unless its SGLang release graphs the prompt
        (``core.engine.prefill_graphs``: no ``graphs_off`` reason, at most ``graph_tokens``)."""
        rate = self.profile.prefill_dispatch_overhead_s
        if not rate or self.profile.prefill_graphs is None:
            return rate
        from mha_cli.core.engine.prefill_graphs import graph_tokens

        limit = graph_tokens(self.case, self.profile.prefill_graphs)
        return rate if self.graphs_off() is not None or prompt_tokens > limit else 0.0

    def graphs_off(self) -> str | None:
        """Why the profile's SGLang release runs every prompt step of this case eagerly (``core.engine.prefill_graphs
        .graphs_off``); None: graphed up to its token limit, or no such release."""
        if self.profile.prefill_graphs is None:
            return None
        from mha_cli.core.engine.prefill_graphs import graphs_off
        from mha_cli.core.targets import load_targets

        target = load_targets().get(self.profile.target_id or "")
        return graphs_off(self.case, self.profile.prefill_graphs, target.compute_capability if target else None)

    def eager_ops(self) -> int:
        """Operators one prefill forward of every stage launches from the host when it runs eagerly, as SGLang's
        model code does (``core.engine.sglang_eager_ops``): the embedding, head and sampler once."""
        if self._eager_ops is None:
            from mha_cli.core.engine.sglang_eager_ops import forward_ops as eager_forward_ops

            case = self.case
            self._eager_ops = sum(
                eager_forward_ops(stage, case.tp, case.weight_dtype, outside=index == 0)
                for index, stage in enumerate(self.stages)
            )
        return self._eager_ops

    def placed(self, ops: list[Op]) -> list[Op]:
        """``ops`` with the collectives that leave a node marked (``core.cost.nodes.placed``); as they are on one."""
        if self.spans is None:
            return ops
        from mha_cli.core.cost.nodes import placed

        return placed(ops, self.spans, self.case.tp)

    def layer_weights(self, index: int) -> LayerWeights:
        """Stage ``index``'s linear layers on one rank (``core.cost.work.layer_weights``), worked out once."""
        index = self._same[index]
        weights = self._weights[index]
        if weights is None:
            case = self.case
            weights = self._weights[index] = layer_weights(
                self.stages[index], case.tp, case.weight_dtype, case.experts, case.weight_scheme, case.expert_kernel
            )
        return weights

    def layout(self, index: int) -> AttentionLayout:
        """Stage ``index``'s attention and fixed-state layers on one rank (``core.cost.work.attention_layout``)."""
        index = self._same[index]
        layout = self._layouts[index]
        if layout is None:
            case = self.case
            layout = self._layouts[index] = attention_layout(self.stages[index], case.tp, case.kv_dtype, case.mla_cache)
        return layout

    def context_seconds(self, shape: StepShape) -> float:
        """The part of a step's time that ``shape``'s context sets: its attention (cache read, query-key pairs) on
        every stage. A step of the same shapes at another context differs from ``step`` by this part's difference
        alone (the other operations, kernel counts and fixed costs do not see the context)."""
        case, total = self.case, 0.0
        absorbed = absorbed_attention(case.model, shape, case.mla_cache)
        for index in range(len(self.stages)):
            for op in sequence_ops(self.layout(index), shape, absorbed):
                found = self._priced.get(op)
                if found is None:
                    found = self._priced[op] = op_seconds(op, self.profile, case.tp, self.scale_out)
                total += op.count * found[0]
        return total

    def send_seconds(self, tokens: int) -> float:
        """The sends between pipeline stages of a step of ``tokens`` rows: one latency and the activations once at
        each of the pp - 1 boundaries (0 without pipeline parallelism or a link), on the scale-out link at the boundaries
        between nodes."""
        collective = self.profile.collective
        if self.case.pp == 1 or collective is None:
            return 0.0
        sent = tokens * self.case.model.d_model * ACTIVATION_BYTES
        crossing = 0 if self.spans is None or self.scale_out is None else self.spans.crossing
        seconds = (self.case.pp - 1 - crossing) * (collective.latency_s + sent / collective.bandwidth_bytes_per_s)
        if crossing:  # the boundaries between nodes: over the scale-out link
            assert self.scale_out is not None
            seconds += crossing * (self.scale_out.latency_s + sent / self.scale_out.bandwidth_bytes_per_s)
        return seconds


def is_prompt_chunk(shape: StepShape) -> bool:
    """Whether ``shape`` computes prompt tokens (a prefill chunk): several new tokens a sequence, not a speculative
    verification (which engines run as a decode, under their CUDA graphs)."""
    return shape.new_tokens > 1 and not shape.verify


def _scale_out(case: ServingCase, profile: DeviceProfile) -> CollectiveCost | None:
    """``case``'s link between nodes on ``profile`` (``core.cost.nodes.scale_out_cost``); None on one node."""
    if case.nodes is None:
        return None
    from mha_cli.core.cost.nodes import scale_out_cost
    from mha_cli.core.cost.priors import fitted_constants

    return scale_out_cost(profile, case.nodes.link, fitted_constants()["constants"]["link_efficiency"])


EXACT_CHUNKS = 256
"""A prompt of up to this many chunks is priced step by step; a longer one in closed form (``chunked_prefill``)."""
SUM_TOLERANCE = 1e-9
"""``sum_piecewise_linear``: how far (relative) a run of steps may bend from a straight line and still be summed as one."""
SUM_DIRECT = 16
"""``sum_piecewise_linear``: runs this short are summed term by term."""


def chunked_prefill(
    stepper: Stepper, tokens: int, chunk_tokens: int, riding: list[StepShape], *, start: int = 0
) -> tuple[float, int]:
    """(seconds, steps) of one prompt of ``tokens`` in chunks of the engine's token budget, each step also running
    the ``riding`` decodes (which take their share of the budget); ``start``: tokens already cached before the first
    chunk (a prefix-cache hit), which every chunk's attention reads.

    Up to ``EXACT_CHUNKS`` chunks, each step is priced in turn. Beyond, the work does not grow with the prompt: the
    full chunks differ only by the context their attention reads (``Stepper.context_seconds``), a piecewise-linear
    function of the chunk's index (linear in the context but where a window fills, a rate curve bends or the bound
    turns from memory to compute), which ``sum_piecewise_linear`` sums run by run in closed form; the first full
    chunk and the last, partial one are priced whole."""
    chunk = max(1, chunk_tokens - sum(shape.tokens for shape in riding))
    full, rest = divmod(tokens, chunk)
    if full + (rest > 0) <= EXACT_CHUNKS:
        seconds, done, steps = 0.0, 0, 0
        while done < tokens:
            size = min(chunk, tokens - done)
            seconds += stepper.step(prefill_shape(size, context=start + done), *riding).seconds
            done, steps = done + size, steps + 1
        return seconds, steps
    first = prefill_shape(chunk, context=start)
    fixed = stepper.step(first, *riding).seconds - stepper.context_seconds(first)  # every full chunk's other part
    seconds = full * fixed + sum_piecewise_linear(
        lambda index: stepper.context_seconds(prefill_shape(chunk, context=start + index * chunk)), full
    )
    if rest:
        seconds += stepper.step(prefill_shape(rest, context=start + full * chunk), *riding).seconds
    return seconds, full + (rest > 0)


def sum_piecewise_linear(value: Callable[[int], float], count: int) -> float:
    """``value(0) + ... + value(count - 1)`` for a function that is linear in its argument but at a few bends
    (a step's time against its chunk's index), in a number of calls that does not grow with ``count``.

    A run of indices whose values at its quarter points lie on the line between its ends (within
    ``SUM_TOLERANCE`` of the largest end) is summed as an arithmetic series; any other run is halved, and runs of
    ``SUM_DIRECT`` or fewer are summed term by term. A bend is therefore never summed across, and a smooth curve
    (a bandwidth curve's log-linear stretch) only in runs along which it bends by less than the tolerance."""
    memo: dict[int, float] = {}

    def at(index: int) -> float:
        if index not in memo:
            memo[index] = value(index)
        return memo[index]

    total, runs = 0.0, [(0, count)]  # half-open runs [start, stop)
    while runs:
        start, stop = runs.pop()
        if stop - start <= SUM_DIRECT:
            total += sum(at(index) for index in range(start, stop))
            continue
        last = stop - 1
        low, high = at(start), at(last)
        slope = (high - low) / (last - start)
        allowed = SUM_TOLERANCE * max(abs(low), abs(high))
        quarters = (start + (last - start) // 4, (start + last) // 2, last - (last - start) // 4)
        if all(abs(at(index) - (low + slope * (index - start))) <= allowed for index in quarters):
            total += (stop - start) * (low + high) / 2
        else:
            middle = (start + stop) // 2
            runs += [(start, middle), (middle, stop)]
    return total
