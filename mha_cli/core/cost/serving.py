"""Serving latency and throughput of one deployment: TTFT, ITL, end-to-end, tokens per second.

The deployment: ``replicas`` copies of the model, each on ``tp`` x ``pp`` devices; ``concurrency`` users, each
sending a request of ``isl`` prompt tokens for ``osl`` output tokens as soon as the last one finished (a closed
loop, as benchmark clients run it), spread evenly over the replicas.

Continuous batching (vLLM, SGLang, TRT-LLM's in-flight batching), per replica:

- ``running`` = min(users, admitted): the engine runs at most what its KV pool and ``max_num_seqs`` admit
  (``core.engine``); the rest queue.
- A decode step runs one token for each running sequence at the mean context isl + osl / 2. Under pipeline
  parallelism the running sequences form ``pp`` micro-batches; a token crosses every stage in turn and each
  stage boundary costs a send. Two approximations (the simulated loop, ``core.serve.pipelined``, has neither): the
  micro-batches are even (vLLM's scheduler fills a batch up to its budget, so a burst of short prompts can leave
  the others empty: vllm-project/vllm#39165), and a micro-batch's next token waits one pass through every stage,
  not pp passes of the slowest stage (the last, which adds the LM head, when pp - 1 heads outlast the step
  overhead).
- A step runs the running sequences' decodes first, then prompt tokens up to ``max_num_batched_tokens``. Over one
  request's ``osl`` steps the other running requests' prompts ((running - 1) x isl tokens, whole prompts side by
  side, each its own sequence: ``others_prompts``) fill m of those steps:
  ITL = ((osl - m) x decode + m x full step) / osl. Under pipeline parallelism every micro-batch in flight is its
  own step with its own budget, so the prompts share pp x osl steps (``micro_batch_steps``). Running is also capped
  at what that budget keeps up with (``sustainable``): past it, users wait for a slot. An engine that runs a prompt
  whole in one step beside the running decodes (TensorRT-LLM without context chunking, ``whole_prompts``) starts
  one only where at most (budget - prompt) / (1 + draft tokens) decodes run, so running is capped at that + 1 in
  each of the pp micro-batches (``whole_prompt_running``), as its micro-batch scheduler does in the simulated loop
  (``core.serve.schedulers``). A prompt over the budget is priced chunked here, as a release with context chunking
  on runs it, and said in a note; the simulated loop refuses it (chunking is off by default).
- TTFT = the request's own chunk steps + its wait behind other prompts (the share of the steps' prompt budget
  the others' prompts use, (running - 1) x isl / (osl x (budget - running)), as an M/D/1 queue) + half a decode step
  (it arrives mid-step; N / 2 of them under SGLang's ``--scheduler-recv-interval N``) + the front end (the request's
  path outside the steps: API server, process hops, the first token's way back; the profile's
  ``request_overhead_s``, an engine generation's ``core.engine.front_end``) + its wait for a slot ((users -
  running) / running request lifetimes); e2e = TTFT + (osl - 1) x ITL.
- Throughput: the requests in flight over all replicas (at most concurrency) x osl tokens per request lifetime;
  tokens/s per user = 1 / ITL. Latency is the busiest replica's (ceil(users / replicas) of them).

Static batching (``batching="static"``, offline benchmarks of fixed batches): one prefill of the whole batch, then
decode steps of the whole batch. Every figure also comes out on the profile's ceiling (the roofline: peak rates,
no fixed costs) as ``bounds``, which no prediction goes below. Pure Python.
"""

import math

from pydantic import Field, computed_field

from mha_cli.core.cost.priors import CARRIED, THROUGHPUT_ONLY
from mha_cli.core.cost.profile import (
    FITTED_SOURCE,
    NONE_HELD_OUT,
    OWN_GPU_BAND,
    UNMEASURED_GPU,
    DeviceProfile,
    band_words,
    latency_within,
    measured_within,
)
from mha_cli.core.cost.speculative import decode_shapes, decode_step, draft_prefill_seconds, tokens_per_step
from mha_cli.core.cost.step import StepTime
from mha_cli.core.cost.stepper import Batching, ServingCase, Stepper, chunked_prefill
from mha_cli.core.cost.work import StepShape, prefill_shape
from mha_cli.core.engine.front_end import CARRIED_BY_DEFAULTS
from mha_cli.core.errors import BadInputError
from mha_cli.core.record import Record
from mha_cli.core.schemas import MoeA2aBackend

MAX_PREFILL_SHARE = 0.9
"""The share of steps busy with prefills the TTFT queue is priced at, at most (at 1 a queue never drains)."""


def layout_words(
    tp: int, pp: int, replicas: int, *, dp_attention: bool, expert_parallel: bool = False, shared_experts: bool = False,
    separate_servers: bool = False,
) -> str:  # fmt: skip
    """A layout in words: ``tp 4 x pp 1 x 2 replica(s) with expert parallelism``; DP attention is one server whose
    replicas are its attention ranks (SGLang ``--tp-size 8 --attn-dp-size 8``, vLLM ``--data-parallel-size 8``):
    ``one server of 8 GPUs, 8 DP-attention ranks of tp 1 x pp 1, the experts whole over all 8 ranks``. Replicas that share an MoE model's experts
    (``shared_experts``) are such ranks too, not servers each holding every expert (vLLM ``--data-parallel-size 8``
    without ``--enable-expert-parallel``: "expert layers form a tensor parallel group of size DP x TP",
    docs/serving/data_parallel_deployment.md): ``..., the experts split by width over all 8 ranks``. MoE replicas
    asked as ``separate_servers`` (``plan --separate-servers``) say so: ``tp 1 x pp 1 x 8 separate servers, each with
    every expert``."""
    if dp_attention or (shared_experts and replicas > 1):
        words = f"one server of {tp * pp * replicas} GPUs, {replicas} DP-attention ranks of tp {tp} x pp {pp}"
        # DP attention's experts are whole over every rank too: said, or its line read as the split one's twin in
        # the search's header (trial 339 #7)
        how = "whole" if expert_parallel or dp_attention else "split by width"
        # under pp each stage's experts over its own GPUs (trial 326 #6: "over all 2 ranks" read as 2 GPUs)
        where = f"all {tp * replicas} ranks" if pp == 1 else f"the {tp * replicas} GPUs of each of the {pp} stages"
        return f"{words}, the experts {how} over {where}"
    ep = " with expert parallelism" if expert_parallel else ""
    if separate_servers and replicas > 1:
        return f"tp {tp} x pp {pp} x {replicas} separate servers{ep}, each with every expert (--separate-servers)"
    return f"tp {tp} x pp {pp} x {replicas} replica(s){ep}"


def share_word(dp_attention: bool) -> str:
    """What one of a layout's replicas is called: a DP-attention rank, or a replica."""
    return "attention rank" if dp_attention else "replica"


class Deployment(Record):
    tp: int
    pp: int
    replicas: int
    gpus: int
    expert_ranks: int | None = None
    """MoE: the ranks one layer's routed experts spread over (tp, or tp x replicas when the replicas share them)."""
    expert_parallel: bool = False
    """MoE: whole experts per rank (vLLM --enable-expert-parallel) rather than each expert's width split."""
    dp_attention: bool = False
    """MoE: DP attention with expert parallelism (``core.dp_attention``), the engines' DeepSeek recipe: the replicas
    are data-parallel attention ranks, each caching its own requests, the experts whole over all GPUs and reached by
    all-to-all. Replicas sharing width-split experts (``expert_ranks`` > tp without it) also run attention apart
    (SGLang launches them with ``--enable-dp-attention``), their MoE tensor-parallel over all ranks by all-gather: the
    JSON says so in ``shares_experts``."""
    moe_a2a_backend: MoeA2aBackend | None = None
    """DP attention: how the ranks' tokens reach the experts (``none``: gathered to all and reduce-scattered back;
    ``deepep``: DeepEP's all-to-all); None without DP attention."""
    separate_servers: bool = Field(default=False, exclude_if=lambda value: not value)
    """MoE: replicas asked as separate servers, each with every expert (``DeploymentSpec.separate_servers``), where
    the engine would have its replicas share them."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def shares_experts(self) -> bool:
        """MoE replicas that share the routed experts (``expert_ranks`` > tp): one server's data-parallel attention
        ranks (SGLang's ``--attn-dp-size``, vLLM's ``--data-parallel-size`` with ``--enable-expert-parallel``), with
        or without ``dp_attention``'s all-to-all recipe (trial 318: the JSON said neither)."""
        return self.replicas > 1 and self.expert_ranks is not None and self.expert_ranks > self.tp

    @property
    def share(self) -> str:
        """What one of its replicas is called (``share_word``): an attention rank where the replicas are one
        server's ranks (DP attention, or replicas sharing the experts), else a replica."""
        return share_word(self.dp_attention or self.shares_experts)

    def describe(self) -> str:
        """``tp 4 x pp 1 x 2 replica(s) with expert parallelism``, ``one server of 8 GPUs, 8 DP-attention ranks of tp
        1 x pp 1 (DeepEP)`` (``layout_words``)."""
        words = layout_words(
            self.tp, self.pp, self.replicas, dp_attention=self.dp_attention, expert_parallel=self.expert_parallel,
            shared_experts=self.shares_experts, separate_servers=self.separate_servers,
        )  # fmt: skip
        return words + (" (DeepEP)" if self.dp_attention and self.moe_a2a_backend == "deepep" else "")


class ServingBounds(Record):
    """The same figures on the profile's ceiling: peak rates, no fixed costs (the roofline)."""

    ttft_ms: float
    itl_ms: float
    e2e_ms: float
    output_tokens_per_s: float


class ProfileRef(Record):
    name: str
    kind: str
    source: str


class Uncertainty(Record):
    """The band a prediction is expected in (``band_around``): a prior's r = 0.44 puts the measured latency within
    prediction x 0.56 .. prediction / 0.56; the upper end None where r reaches 1 (no bound)."""

    relative: float
    ttft_ms: tuple[float, float | None]
    itl_ms: tuple[float, float | None]
    ttft_relative: float | None = None
    """The TTFT's own held-out error where the prior has one (``DeviceProfile.ttft_relative_error``): its band is
    drawn from it; None: from ``relative``."""
    how: str


class ServingPrediction(Record):
    """One deployment's predicted latency and throughput (docs/commands/plan.md lists the keys scripts rely on)."""

    deployment: Deployment
    batching: Batching
    isl: int
    osl: int
    concurrency: int
    running_per_replica: int
    """Requests one replica runs at once: min(its users, what the engine admits)."""
    queued_per_replica: int
    ttft_ms: float
    itl_ms: float
    """Time per output token after the first (TPOT), stalls for other requests' prefills included."""
    e2e_ms: float
    output_tokens_per_s: float
    """All replicas together."""
    output_tokens_per_s_per_gpu: float
    tokens_per_s_per_user: float
    """1 / ITL: the speed one user sees tokens arrive at."""
    decode_step: StepTime
    """One decode step of one replica (all stages), at the running batch and the mean context."""
    prefill_chunk_steps: int
    prefill_ms: float
    """The request's own prefill steps (with the running decodes they carry)."""
    front_end_ms: float = 0.0
    """The request's path outside the engine's steps (API server, process hops, the first token's way back), in
    ``ttft_ms`` (the profile's ``request_overhead_s``; 0 for a static batch, which no server runs)."""
    bounds: ServingBounds | None
    """The same figures on the profile's ceiling; None only in a search run to judge a way out (never shown)."""
    profile: ProfileRef
    uncertainty: Uncertainty
    notes: list[str]


def _latencies(case: ServingCase, stepper: Stepper, running: int) -> tuple[float, float, float, int, StepTime]:
    """(TTFT without queueing, ITL, own prefill, chunk steps, decode step) in seconds on ``stepper``'s profile."""
    context = case.isl + case.osl // 2
    micro = -(-running // case.pp)
    # a decode step: one token per sequence, or with speculative decoding k drafts and k + 1 verified for T tokens
    decode = decode_step(stepper, micro, context)
    per_step = tokens_per_step(stepper)
    if case.batching == "static":
        prefill = stepper.step(prefill_shape(case.isl, sequences=running)).seconds
        return prefill, decode.seconds / per_step, prefill, 1, decode
    riding = decode_shapes(stepper, micro - 1, context)
    computed = case.isl - case.cached_prefix  # a prefix-cache hit is read, not computed
    prefill, chunks = chunked_prefill(stepper, computed, case.chunk_tokens, riding, start=case.cached_prefix)
    prefill += draft_prefill_seconds(stepper, computed, case.chunk_tokens, case.cached_prefix)  # 0 without a drafter
    # over one request's osl / T steps the others' prompts ((running - 1) x isl tokens) share the steps' budget:
    # the steps of all pp micro-batches in flight, each scheduled with its own budget (``micro_batch_steps``)
    steps = case.osl / per_step
    room = max(1, case.chunk_tokens - sum(shape.tokens for shape in decode_shapes(stepper, micro, context)))
    others = (running - 1) * computed
    stalls = min(steps, -(-others // room) / micro_batch_steps(case.pp))
    itl = decode.seconds / per_step
    if stalls:
        stall = decode_step(stepper, micro, context, *others_prompts(min(room, others), computed, case.cached_prefix))
        stall = stall.seconds
        itl = ((steps - stalls) * decode.seconds + stalls * stall) / case.osl
    # a new prompt waits for the prompts ahead of it: the share of the steps' prompt budget in use, as an M/D/1 queue
    busy = min(MAX_PREFILL_SHARE, others / (room * steps * micro_batch_steps(case.pp)))
    wait = busy / (2 * (1 - busy)) * prefill
    front_end = stepper.profile.request_overhead_s
    return prefill + wait + decode.seconds * arrival_steps(case, running) + front_end, itl, prefill, chunks, decode


def arrival_steps(case: ServingCase, running: int) -> float:
    """Decode steps (each one token through every stage) a new request waits before the engine takes it: half of one
    (it arrives mid-step), or, with SGLang's ``--scheduler-recv-interval N`` among other decoding requests, half of N
    turns of its loop (its scheduler receives on every N-th, ``core.serve.recv_interval``), pp turns a step under
    pipeline stages (``micro_batch_steps``), never less than the half step without it; a lone request finds the engine
    idle, which receives at once."""
    if case.recv_interval > 1 and running > 1:
        return max(0.5, case.recv_interval / (2 * micro_batch_steps(case.pp)))
    return 0.5


def others_prompts(tokens: int, prompt: int, cached: int = 0) -> list[StepShape]:
    """The other requests' prompt tokens one step computes beside the decodes: ``tokens`` of them (at most the
    step's budget left), as whole prompts of ``prompt`` tokens each after the ``cached`` prefix, each its own
    sequence, and the rest a chunk of the next prompt. vLLM V1's scheduler admits waiting requests one after
    another while the step's token budget lasts, each its own sequence (``vllm/v1/core/sched/scheduler.py``,
    ``Scheduler.schedule``; ``core.serve.schedulers.vllm_admit``), as SGLang's ``PrefillAdder`` and TensorRT-LLM's
    micro-batch scheduler fill a step with context requests: a step's prompts are not one sequence of ``tokens``
    tokens, whose attention would pair every token with all before it across prompts.

    A prompt longer than ``tokens`` is computed a chunk a step, chunk k after k x ``tokens`` of it (as
    ``chunked_prefill`` prices the request's own): the step's chunk is priced at those chunks' mean context,
    ``cached`` + (``prompt`` - ``tokens``) / 2, where the chunks' query-key pairs sum to the prompt's own (a step's
    attention is linear in its context), not as the prompt's first chunk (16 times too few pairs for a 131,072-token
    prompt in chunks of 8,192)."""
    whole, rest = divmod(tokens, prompt)
    if not whole:
        return [prefill_shape(tokens, context=cached + (prompt - tokens) // 2)]
    shapes = [prefill_shape(prompt, sequences=whole, context=cached)]
    if rest:
        shapes.append(prefill_shape(rest, context=cached))
    return shapes


def micro_batch_steps(pp: int) -> int:
    """Engine steps, each scheduled with its own token budget, that run while one micro-batch's request takes one
    step, under ``pp`` pipeline stages: every stage works on a different micro-batch, so pp batches are in flight.
    Read in each engine's pipeline loop: TensorRT-LLM's PyTorch backend (``_torch/pyexecutor/py_executor.py``,
    ``PyExecutor._executor_loop_pp``: ``_schedule()`` for each ``microbatch_id`` in turn, mod
    ``num_micro_batches``), vLLM V1 (``v1/engine/core.py``, ``EngineCore.step_with_batch_queue``: a new
    ``scheduler.schedule()`` while earlier batches run, up to ``batch_queue_size``) and SGLang
    (``managers/scheduler_pp_mixin.py``, ``event_loop_pp``: ``get_next_batch_to_run()`` for each of ``pp_size``
    micro-batches). The other requests' prompts therefore share pp x osl steps' budgets over one request's life."""
    return pp


def sustainable(isl: int, osl: int, budget: int) -> int:
    """Requests in flight whose prompts an engine with a ``budget`` of tokens per step keeps up with: over one
    request's osl steps the others' prompts, (r - 1) x isl tokens, must fit in the steps' prefill budget,
    (budget - r) tokens each (decodes first): r <= (osl x budget + isl) / (isl + osl). More users wait for a slot."""
    return max(1, (osl * budget + isl) // (isl + osl))


def whole_prompt_running(prompt: int, budget: int, decode_tokens: int = 1) -> int:
    """Requests in flight in one micro-batch of an engine that runs each ``prompt`` (tokens to compute, at most
    ``budget``) whole in one step of at most ``budget`` tokens, the running decodes first, each taking
    ``decode_tokens`` of it (1, or 1 + the draft tokens under speculative decoding): TensorRT-LLM's micro-batch
    scheduler with context chunking off (``MicroBatchScheduler``: beam width + ``getNumDraftTokens`` a decode;
    ``core.serve.schedulers``). A prompt starts only beside at most ``(budget - prompt) // decode_tokens`` decodes,
    one more then runs; under pipeline stages each micro-batch has its own budget (``micro_batch_steps``)."""
    return (budget - prompt) // decode_tokens + 1


def eager_prefill_note(operators: int, seconds_per_operator: float, why: str) -> str:
    """Why a prompt step costs what it does on an engine whose prefill runs outside CUDA graphs
    (``core.engine.prefill_graphs``): ``operators`` launched one by one at ``seconds_per_operator`` each, ``why``."""
    floor_ms = operators * seconds_per_operator * 1e3
    return (
        f"prefill runs eagerly: {operators:,} operators launched from the host at {seconds_per_operator * 1e6:.1f} us"
        f" each, so a prompt step takes at least {floor_ms:.1f} ms; {why}"
    )


def prefill_graph_notes(stepper: Stepper) -> list[str]:
    """How the prompt steps of ``stepper``'s case run on an SGLang profile (``core.engine.prefill_graphs``): eagerly,
    and why, or in the piecewise CUDA graphs of the release that priced them, and which steps do not; none
    elsewhere."""
    from mha_cli.core.engine.prefill_graphs import LATEST_READ, graph_kind, graph_tokens

    profile, case = stepper.profile, stepper.case
    rate, release = profile.prefill_dispatch_overhead_s, profile.prefill_graphs
    if not rate:
        return []
    if release is None:
        why = (
            "SGLang captures prefill in piecewise CUDA graphs by default only from 0.5.10 and only on NVIDIA GPUs"
            " (server_args.py _handle_piecewise_cuda_graph turns them off under is_hip(), on AMD); on an NVIDIA GPU"
            f" --engine sglang@0.5.10 or later has them, and --engine sglang is priced as {LATEST_READ} runs"
        )
        return [eager_prefill_note(stepper.eager_ops(), rate, why)]
    off = stepper.graphs_off()
    if off is not None:
        return [eager_prefill_note(stepper.eager_ops(), rate, off)]
    limit = graph_tokens(case, release)
    kind = graph_kind(release)
    note = f"prefill runs in {kind} CUDA graphs, as SGLang {release} captures them (core.engine.prefill_graphs)"
    largest = case.isl * case.concurrency if case.batching == "static" else case.chunk_tokens
    if largest > limit:
        note += (
            f"; a prompt step over {limit:,} tokens (the prefill graphs' token limit, core.engine.prefill_graphs) runs"
            f" eagerly: {stepper.eager_ops():,} operators launched from the host at {rate * 1e6:.1f} us each"
        )
    return [note]


def predict_serving(
    case: ServingCase, profile: DeviceProfile, ceiling: DeviceProfile | None, *, stepper: Stepper | None = None
) -> ServingPrediction:
    """``case`` served on ``profile``, with the same figures on ``ceiling`` as bounds (see the module docstring;
    ``ceiling`` None: no bounds, for a search that only judges a way out). ``stepper``: one on ``profile`` for the
    same model, layout and formats at another load, whose counted operations this prediction reuses
    (``core.cost.plan.LayoutPlans``)."""
    users = -(-case.concurrency // case.replicas)
    admitted = users if case.admitted_per_replica is None else case.admitted_per_replica
    if admitted < 1:
        raise BadInputError("the engine admits no request of this length on this deployment: see `mha kv` for why")
    computed = case.isl - case.cached_prefix
    budget = case.chunk_tokens * micro_batch_steps(case.pp)  # prompt tokens a request step, all micro-batches
    limit = admitted if case.batching == "static" else min(admitted, sustainable(computed, case.osl, budget))
    whole = None
    if case.whole_prompts and case.batching == "continuous" and computed <= case.chunk_tokens:
        drafted = 0 if case.speculative is None else case.speculative.num_speculative_tokens
        whole = whole_prompt_running(computed, case.chunk_tokens, 1 + drafted) * micro_batch_steps(case.pp)
        limit = min(limit, whole)
    running = min(users, limit)  # on the busiest replica, whose steps set the latency
    queued = users - running if case.batching == "continuous" else 0
    in_flight = min(case.concurrency, case.replicas * limit)  # every replica together
    gpus = case.tp * case.pp * case.replicas

    def figures(on: Stepper) -> tuple[float, float, float, float, float, int, StepTime]:
        ttft, itl, prefill, chunks, decode = _latencies(case, on, running)
        lifetime = ttft + (case.osl - 1) * itl
        if queued:
            ttft += queued / running * lifetime
        e2e = ttft + (case.osl - 1) * itl
        throughput = in_flight * case.osl / lifetime
        return ttft, itl, e2e, throughput, prefill, chunks, decode

    if stepper is None:
        stepper = Stepper(case, profile)
    assert stepper.profile is profile, "a stepper on another profile"
    # the ceiling's figures reuse the operations counted for the profile's: they do not depend on it
    ttft, itl, e2e, throughput, prefill, chunks, decode = figures(stepper)
    bounds = None
    if ceiling is not None:
        b_ttft, b_itl, b_e2e, b_throughput, *_ = figures(stepper.on(ceiling))
        bounds = ServingBounds(
            ttft_ms=b_ttft * 1e3, itl_ms=b_itl * 1e3, e2e_ms=b_e2e * 1e3, output_tokens_per_s=b_throughput
        )
    r = profile.relative_error
    notes = []
    if case.cached_prefix:
        notes.append(
            f"prefix cache: {case.cached_prefix:,} of each {case.isl:,}-token prompt served from the cache once warm"
            f" (the shared prefix's whole blocks); each prefill computes {computed:,} after reading them"
        )
    notes += prefill_graph_notes(stepper)
    # the default constants' fit carried it: a profile named without a generation (a calibration's), or one they price
    carried = "@" not in profile.name or CARRIED_BY_DEFAULTS in profile.constants.get("request_overhead_s", "")
    if case.batching != "static" and profile.request_overhead_s == 0 and profile.kind == "prior" and not carried:
        notes.append(  # trial 359 #4: vLLM 0.21+'s TTFT read as 2.4x 0.20's, a term no source measured
            "the front end (API server, process hops, the first token's way back) is not in this TTFT: no published"
            " measurement of this engine generation's was found (core.engine.front_end); a generation that has one"
            " adds it, so TTFTs across generations differ by it"
        )
    if case.whole_prompts and computed > case.chunk_tokens:
        notes.append(
            f"a {computed:,}-token prompt is over TensorRT-LLM's max_num_tokens ({case.chunk_tokens:,}): priced chunked,"
            " as with context chunking on (enable_chunked_prefill in its options file; off by default, when"
            " trtllm-serve refuses the prompt, as the simulated loop does)"
        )
    if case.batching == "static" and users > admitted:
        notes.append(f"a static batch of {users} exceeds the {admitted} the engine admits: priced as one batch anyway")
    if queued:
        if limit == admitted:
            why = f"the engine admits {admitted} request(s) of {case.isl + case.osl:,} tokens at once"
        elif limit == whole:
            batches = micro_batch_steps(case.pp)
            each = whole // batches
            beside = "when no other request decodes" if each == 1 else f"beside at most {each - 1:,} decoding"
            why = (
                f"each {computed:,}-token prompt runs whole in one step of at most {case.chunk_tokens:,} tokens"
                f" (max_num_tokens), the running decodes first, so it starts only {beside}"
                + (f" in its micro-batch ({batches} in flight)" if batches > 1 else "")
                + " (TensorRT-LLM's micro-batch scheduler, context chunking off)"
            )
        else:
            why = f"its prefill budget ({case.chunk_tokens:,} tokens a step) keeps up with {limit} requests' prompts"
        notes.append(f"{queued} of {users} users per replica wait: {why}; their wait is in TTFT")
    return ServingPrediction(
        deployment=Deployment(
            tp=case.tp, pp=case.pp, replicas=case.replicas, gpus=gpus,
            expert_ranks=None if case.experts is None else case.experts.ranks,
            expert_parallel=case.experts is not None and case.experts.whole,
            dp_attention=case.experts is not None and case.experts.dp_attention,
            moe_a2a_backend=case.experts.a2a_backend if case.experts is not None and case.experts.dp_attention else None,
            separate_servers=case.separate_servers,
        ), batching=case.batching,
        isl=case.isl, osl=case.osl, concurrency=case.concurrency, running_per_replica=running,
        queued_per_replica=queued, ttft_ms=ttft * 1e3, itl_ms=itl * 1e3, e2e_ms=e2e * 1e3,
        output_tokens_per_s=throughput, output_tokens_per_s_per_gpu=throughput / gpus, tokens_per_s_per_user=1 / itl,
        decode_step=decode, prefill_chunk_steps=chunks, prefill_ms=prefill * 1e3,
        front_end_ms=0.0 if case.batching == "static" else round(profile.request_overhead_s * 1e3, 3),
        bounds=bounds,
        profile=ProfileRef(name=profile.name, kind=profile.kind, source=profile.source),
        uncertainty=Uncertainty(
            relative=r, ttft_ms=ttft_band(ttft * 1e3, profile), ttft_relative=profile.ttft_relative_error,
            itl_ms=band_around(itl * 1e3, r, profile.kind, profile.source), how=_uncertainty_how(profile),
        ),
        notes=notes,
    )  # fmt: skip


GENERATION_PRIORS = "cost_priors_generations.json"
"""In the source of a profile that is an engine generation's fitted constants (``core.cost.priors``)."""


def ttft_band(ttft_ms: float, profile: DeviceProfile) -> tuple[float, float | None]:
    """The TTFT's band: the profile's band, widened to the TTFT's own held-out error where the profile has one
    (``latency_within``): never narrower than the general band at either end (review 411 #4)."""
    low, high = measured_within(profile.relative_error, profile.kind, profile.source)
    if profile.ttft_relative_error is not None:
        own_low, own_high = latency_within(profile.ttft_relative_error)
        low, high = min(low, own_low), max(high, own_high)
    return _scaled(ttft_ms, low, high)


def band_around(value: float, relative: float, kind: str, source: str) -> tuple[float, float | None]:
    """``value``'s band (``profile.measured_within``); None above where it has no upper bound."""
    return _scaled(value, *measured_within(relative, kind, source))


def _scaled(value: float, low: float, high: float) -> tuple[float, float | None]:
    """``value`` x ``low`` .. x ``high``, None above for an unbounded ``high``."""
    return value * low, (value * high if math.isfinite(high) else None)


def _uncertainty_how(profile: DeviceProfile) -> str:
    said = band_words(*measured_within(profile.relative_error, profile.kind, profile.source))
    if profile.kind == "calibrated" and profile.source.startswith(FITTED_SOURCE) and NONE_HELD_OUT in profile.source:
        return f"{said}: the fit's own error on its benchmark runs (none was held out)"
    if profile.kind == "calibrated" and profile.source.startswith(FITTED_SOURCE):
        return f"{said}: 4 in 5 held-out figures of its benchmark runs fell within it"
    if profile.kind == "calibrated":
        return f"{said}: the calibration's own fit error on this machine"
    if GENERATION_PRIORS in profile.source:  # an engine generation's fitted constants
        measurements = "this engine generation's held-out published measurements"
        if CARRIED in profile.source:  # review 403 #5: vllm-0.21 has none of its own, they are vllm-v1's
            carried = profile.source.split(CARRIED)[0].rpartition(": ")[2].removesuffix("'s constants")
            measurements = f"the held-out published measurements of {carried}, whose constants it takes,"
        where = " (none on this GPU: its vendor's constants)" if UNMEASURED_GPU in profile.source else ""
        if OWN_GPU_BAND in profile.source:  # "this GPU's 14 held-out figures" or "mi300x's 24 held-out figures"
            gpu = profile.source.rpartition(OWN_GPU_BAND)[2].partition("'s ")[0]
            where = (
                " on this GPU"
                if gpu == "this GPU"
                else f" on {gpu} (none on this GPU; the widest band of the GPUs the constants were measured on)"
            )
        alone = (  # review 408 #4: AMD plans without --engine take this set since 2026-12-08
            "; those measurements are tokens/s alone: its ITL and TTFT extrapolate them"
            if THROUGHPUT_ONLY in profile.source
            else ""
        )
        ttft = (  # trial 404 #1: the TTFT's own held-out band, read as the band is (this GPU's, or across GPUs)
            f"; its TTFT band is that one widened to 4 in 5 of its held-out TTFT figures,"
            f" {band_words(*latency_within(profile.ttft_relative_error))}"
            if profile.ttft_relative_error is not None
            else ""
        )
        return (
            f"{said}: 4 in 5 of {measurements}{where} fell within it"
            f" (cost_priors_generations.json){alone}{ttft}; `mha calibrate` on the device narrows it"
        )
    return (
        f"{said}: 4 in 5 held-out published measurements fell within it (cost_priors.json;"
        " this GPU's own when it has 5 or more); `mha calibrate` on the device narrows it"
    )
