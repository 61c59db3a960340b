"""One rank's part of ``mha verify --tp N``: measure its shard as single-device verify does, check the
split's output against one device, and (rank 0) assemble the report.

1. ``verify.rank.measure_rank(plan, device, tp_rank=r, tp_size=N, all_reduce=...)``: the same build,
   cache allocation, prefill, decode and numerics as single-device verify, on this rank's shard, with
   the model's ``all_reduce`` a ``TimedAllReduce`` (torch.distributed.all_reduce between device
   synchronisations) whose time during the decode stage gives the all-reduce share of a step.
2. The split's output: every rank builds its shard again (its first ``check_layers`` layers, in fp32:
   ``CHECK_DTYPE``) and loads its slice (``shard_state_dict``'s layout) of the same seed-derived full
   weights, then runs the same tokens (a short prefill, then a few decode steps); rank 0 builds the
   whole stack on one device with the full weights and compares logits.
3. Every rank's results go to rank 0 (``gather_object``), which builds single-device verify's report
   from all of them (``verify.run.build_report``) and adds the tensor-parallel figures and checks.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable

import torch
import torch.distributed as dist

from mha_cli.core.params import params_per_rank
from mha_cli.core.tensor_parallel import built_vocab_padding
from mha_cli.nn.device import synchronize
from mha_cli.nn.tensor_parallel import load_seeded_shard
from mha_cli.parallel.faults import requested_fault
from mha_cli.parallel.group import backend_for
from mha_cli.parallel.plan import check_layers_wanted, layers_for_each_kind
from mha_cli.parallel.report import RankOutcome, TpJob, TpNumerics, TpRank, TpVerifyReport
from mha_cli.verify.numerics import DEFAULT_TOLERANCE
from mha_cli.verify.plan import first_layers
from mha_cli.verify.prediction import active_profile
from mha_cli.verify.rank import measure_rank
from mha_cli.verify.run import build_report

CHECK_DTYPE = torch.float32
"""The tp-vs-one-device check runs in fp32 whatever the deployment's dtype: a wrong split shows as an error of
order one, which bf16's rounding of large-vocabulary logits (about 1e-2 relative) must not be allowed to
approach. The shards in the deployment's dtype are checked by measure_rank's numerics (with real all-reduces)."""


class TimedAllReduce:
    """A model's ``all_reduce``: sums a tensor over the ranks in place, timing each call between synchronisations.

    While ``counting`` (set during the decode stage) each call's seconds are appended to ``durations``. The
    time includes waiting for the slowest rank, as a real step does.
    """

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.counting = False
        self.durations: list[float] = []

    def __call__(self, tensor: torch.Tensor) -> torch.Tensor:
        synchronize(self.device)
        start = time.perf_counter()
        dist.all_reduce(tensor)
        synchronize(self.device)
        if self.counting:
            self.durations.append(time.perf_counter() - start)
        return tensor

    def per_step(self, steps: int, timed: int) -> tuple[float, int]:
        """(median seconds of all-reduce per step over the last ``timed`` of ``steps`` steps, calls per step).

        The calls recorded are split evenly over the steps, in order (every step makes the same calls).
        """
        calls, rest = divmod(len(self.durations), steps)
        if rest or not calls:
            return 0.0, 0  # no all-reduce (one rank), or a stage that did not run whole steps: nothing to split
        sums = [sum(self.durations[i * calls : (i + 1) * calls]) for i in range(steps)]
        return statistics.median(sums[-timed:]), calls


def rank_device(device_type: str, local_rank: int) -> torch.device:
    """``cuda:LOCAL_RANK`` for CUDA ranks, else the CPU."""
    return torch.device("cuda", local_rank) if device_type == "cuda" else torch.device("cpu")


def _build(job: TpJob, device: torch.device, tp_rank: int, tp_size: int) -> torch.nn.Module:
    """The check's stack (its first ``job.check_layers`` layers), rank ``tp_rank`` of ``tp_size``."""
    from mha_cli.nn import build_model

    plan = job.plan
    return build_model(
        plan.model, n_layers=job.check_layers, dtype=CHECK_DTYPE, device=device,
        mla_mode=plan.mla_cache or "absorbed", tp_rank=tp_rank, tp_size=tp_size,
    ).eval()  # fmt: skip


def full_shapes(job: TpJob) -> dict[str, torch.Size]:
    """Names and shapes of the check stack's whole (unsharded) state dict, from the meta device."""
    model = _build(job, torch.device("meta"), 0, 1)
    return {name: tensor.shape for name, tensor in model.state_dict().items()}


def check_tokens(job: TpJob, device: torch.device) -> torch.Tensor:
    """The same seeded token ids on every rank: (b, check prefill + check decode)."""
    generator = torch.Generator().manual_seed(job.seed)
    length = job.check_prefill_tokens + job.check_decode_tokens
    ids = torch.randint(
        0, job.plan.model.embeddings.vocab_size, (job.plan.deployment.batch, length), generator=generator
    )
    return ids.to(device)  # (b, s)


def run_tokens(model: torch.nn.Module, ids: torch.Tensor, prefill: int) -> torch.Tensor:
    """Prefill ``ids[:, :prefill]`` into fresh caches, then decode the rest one token at a time.

    Returns the float32 logits of the prefill's last position and of every decoded token: (b, 1 + decode, V).
    """
    caches = model.new_cache(ids.shape[0], ids.shape[1])
    with torch.inference_mode():
        logits = model(ids[:, :prefill], caches, 0)  # (b, p, V)
        pieces = [logits[:, -1:].float()]  # (b, 1, V)
        for pos in range(prefill, ids.shape[1]):
            pieces.append(model(ids[:, pos : pos + 1], caches, pos).float())  # (b, 1, V)
    return torch.cat(pieces, dim=1)  # (b, 1 + decode, V)


def shard_logits(job: TpJob, rank: int, device: torch.device, all_reduce: Callable) -> tuple[torch.Tensor, int, int]:
    """(logits of the check tokens, query heads, KV heads) of this rank's shard loaded with the seeded weights."""
    model = _build(job, device, rank, job.tp)
    load_seeded_shard(model, full_shapes(job), job.plan.model, rank, job.tp, job.seed)
    if requested_fault(rank) == "corrupt":  # a test's deliberately wrong shard (mha_cli.parallel.faults)
        with torch.no_grad():
            model.model.layers[0].self_attn.o_proj.weight.neg_()
    if job.tp > 1:
        model.all_reduce = all_reduce
    attention = model.model.layers[0].self_attn
    heads = (attention.n_heads, getattr(attention, "n_kv_heads", 1))
    return run_tokens(model, check_tokens(job, device), job.check_prefill_tokens), *heads


def reference_logits(job: TpJob, device: torch.device) -> torch.Tensor:
    """The whole stack on one device with the full seed-derived weights, over the same tokens."""
    model = _build(job, device, 0, 1)
    load_seeded_shard(model, full_shapes(job), job.plan.model, 0, 1, job.seed)
    return run_tokens(model, check_tokens(job, device), job.check_prefill_tokens)


def compare(tp_logits: torch.Tensor, reference: torch.Tensor, tolerance: float) -> TpNumerics:
    error = (tp_logits - reference).abs().max().item()
    scale = reference.abs().max().item()
    return TpNumerics(
        positions=reference.shape[1], max_abs_error=error, reference_max_abs=scale,
        relative_error=error / scale if scale > 0 else error, tolerance=tolerance,
    )  # fmt: skip


def run_job(
    job: TpJob, rank: int, device: torch.device, on_stage: Callable[[str], None] = lambda stage: None
) -> TpVerifyReport | None:
    """This rank's part of ``job``; rank 0 returns the report, the others ``None``.

    ``on_stage`` hears each stage's name as it starts (measure_rank's, then the tp check's)."""
    plan = job.plan
    timer = TimedAllReduce(device)

    def stage(name: str) -> None:
        timer.counting = name == "decode"  # measure_rank's decode stage: the steps that are timed
        on_stage(name)

    torch.manual_seed(0)
    measured = measure_rank(
        plan, device, tp_rank=rank, tp_size=job.tp, reps=job.reps, tolerance=job.tolerance,
        all_reduce=timer if job.tp > 1 else None, on_stage=stage,
    )  # fmt: skip
    timer.counting = False
    gc.collect()  # the measured stack, before the check builds its own
    steps = measured.decode.warmup + measured.decode.reps  # every decode step of the stage, warm-up first
    allreduce_s, allreduce_calls = timer.per_step(steps, measured.decode.reps)
    built = first_layers(plan.model, plan.n_layers_built)

    on_stage("tp check")
    tp_logits, n_heads, n_kv_heads = shard_logits(job, rank, device, timer)
    figures = TpRank(
        rank=rank, n_heads=n_heads, n_kv_heads=n_kv_heads, measured_cache_bytes=measured.measured_cache_bytes,
        predicted_cache_bytes=plan.predicted_cache_bytes, measured_weight_bytes=measured.measured_weight_bytes,
        predicted_weight_bytes=params_per_rank(built, job.tp, built_vocab_padding(job.tp)) * plan.value_bytes,
        decode_ms=measured.decode.median_ms, allreduce_ms=allreduce_s * 1e3, allreduce_calls=allreduce_calls,
    )  # fmt: skip
    numerics = None
    gc.collect()  # the check shard: a built model sits in reference cycles until the collector runs
    if job.tp > 1:
        on_stage("waiting for every rank's check")  # what a hang elsewhere is reported against
        dist.barrier()  # every rank's check shard freed before rank 0 builds the whole stack (one host on CPU)
    if rank == 0:
        on_stage("single-device reference")
        tolerance = DEFAULT_TOLERANCE[CHECK_DTYPE] if job.tolerance is None else job.tolerance
        numerics = compare(tp_logits, reference_logits(job, device), tolerance)
    on_stage("gather")
    outcomes = gather_outcomes(RankOutcome(measured=measured, figures=figures), job.tp)
    if outcomes is None:
        return None
    assert numerics is not None
    return assemble_report(job, outcomes, numerics, device)


def gather_outcomes(outcome: RankOutcome, world_size: int) -> list[RankOutcome] | None:
    """Every rank's outcome on rank 0, in rank order (``None`` elsewhere), through ``gather_object``."""
    if world_size == 1:
        return [outcome]
    gathered: list[object] | None = [None] * world_size if dist.get_rank() == 0 else None
    dist.gather_object(outcome.model_dump(), gathered, dst=0)
    if gathered is None:
        return None
    return [RankOutcome.model_validate(item) for item in gathered]


def assemble_report(
    job: TpJob, outcomes: list[RankOutcome], numerics: TpNumerics, device: torch.device
) -> TpVerifyReport:
    """Single-device verify's report over every rank's measurement, with the tp figures and checks added."""
    base = build_report(
        job.loaded, job.plan, [outcome.measured for outcome in outcomes], device, max_kv_gib=job.max_kv_gib,
        max_decode_ms=job.max_decode_ms, profile=active_profile(job.profile, device, job.plan.dtype),
    )  # fmt: skip
    ranks = [outcome.figures for outcome in outcomes]
    checks = dict(base.checks)
    details = dict(base.check_details)
    checks["tp_matches_single_device"] = numerics.relative_error <= numerics.tolerance
    details["tp_matches_single_device"] = (
        f"relative error {numerics.relative_error:.2e} {'<=' if checks['tp_matches_single_device'] else '>'}"
        f" tolerance {numerics.tolerance:g} over {numerics.positions} logit positions"
    )
    for what in ("cache", "weight"):
        name = f"every_rank_{what}_bytes_match"
        checks[name], details[name] = _every_rank(ranks, what)
    decode_ms = statistics.fmean(rank.decode_ms for rank in ranks)
    allreduce_ms = statistics.fmean(rank.allreduce_ms for rank in ranks)
    # single-device verify's note that one process ran rank 0 with identity all-reduces does not hold here
    notes = [note for note in base.notes if "all-reduces are identities" not in note] + _notes(job)
    return TpVerifyReport(
        **base.model_dump(exclude={"checks", "check_details", "passed", "notes"}), checks=checks,
        check_details=details, passed=all(checks.values()), notes=notes, backend=backend_for(job.plan.device_type),
        ranks=ranks, allreduce_ms=allreduce_ms, allreduce_share=allreduce_ms / decode_ms if decode_ms > 0 else 0.0,
        tp_numerics=numerics,
    )  # fmt: skip


def _every_rank(ranks: list[TpRank], what: str) -> tuple[bool, str]:
    """(whether every rank's measured bytes equal the calculator's, the figures)."""
    pairs = [(getattr(r, f"measured_{what}_bytes"), getattr(r, f"predicted_{what}_bytes")) for r in ranks]
    wrong = [f"rank {r.rank} {m:,} B != {p:,} B" for r, (m, p) in zip(ranks, pairs, strict=True) if m != p]
    if wrong:
        return False, "; ".join(wrong)
    return True, f"all {len(ranks)} ranks measured {pairs[0][0]:,} B == predicted"


def _notes(job: TpJob) -> list[str]:
    model, tp = job.plan.model, job.tp
    notes = [
        "tp layout: q/k/v and MLP gate/up split by columns (heads, d_ff / tp), o_proj and down_proj by rows, each"
        " followed by an all-reduce; the token embedding and the LM head split by the vocabulary padded to a multiple"
        " of 64 (lookups all-reduced, logits gathered), as vLLM does; norms replicated on every rank",
        f"tp check: {tp} ranks and one device ran the first {job.check_layers} layer(s) in fp32 with the same"
        f" seed-derived weights over a {job.check_prefill_tokens}-token prefill and {job.check_decode_tokens} decode"
        " steps; logits compared",
    ]
    wanted = check_layers_wanted(model)
    if job.check_layers < wanted and layers_for_each_kind(model) > job.check_layers:
        notes.append(
            f"tp check: not every layer kind was in it (one of each needs the first {wanted} layers, {job.check_layers}"
            f" were built): --layers {wanted} checks them all"
        )
    elif job.check_layers < wanted:  # every layer alike (trial 374 #6: "not every layer kind" of a uniform model)
        notes.append(
            f"tp check: {job.check_layers} layer built, so no layer's output fed another's input across the ranks:"
            f" --layers {wanted} checks that too"
        )
    if model.attention.mla is not None:
        notes.append("MLA: the latent and its down projections are replicated; every rank caches the whole latent")
    elif tp > model.attention.n_kv_heads:
        notes.append(
            f"tp ({tp}) > n_kv_heads ({model.attention.n_kv_heads}): each KV head is replicated on {tp // model.attention.n_kv_heads} ranks"
        )
    if job.plan.device_type == "cpu":
        notes.append("CPU: the all-reduce runs over gloo between processes on one host, not over NVLink/NCCL")
    return notes
