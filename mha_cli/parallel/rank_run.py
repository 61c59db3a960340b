"""One rank's part of ``mha verify --tp N``: build its shard, measure, time, and (rank 0) check and report.

Every rank builds ``build_model(spec, tp_rank=r, tp_size=N)`` for the job's first layers and loads its
slice (``shard_state_dict``'s layout) of the same seed-derived full weights. It allocates its caches at
seq_len x batch and measures their bytes and its parameters' bytes; it prefills the same tokens,
decodes a few more one at a time, and keeps the logits; then it times repeated decode steps, with the
model's ``all_reduce`` replaced by ``TimedAllReduce`` (torch.distributed.all_reduce between device
synchronisations). Rank 0 then builds the whole model on one device with the same weights, runs the
same tokens, compares logits, gathers every rank's ``RankResult`` and assembles the report.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch
import torch.distributed as dist

from mha_cli.core.kv import footprint_for
from mha_cli.core.tensor_parallel import params_per_rank
from mha_cli.nn.device import device_name, synchronize
from mha_cli.nn.kv_cache import CACHE_DTYPES
from mha_cli.nn.tensor_parallel import seeded_shard, seeded_tensor
from mha_cli.parallel.group import backend_for
from mha_cli.parallel.report import RankResult, TpJob, TpNumerics, TpVerifyReport
from mha_cli.verify.numerics import DEFAULT_TOLERANCE
from mha_cli.verify.plan import first_layers

DECODE_WARMUP = 3


class TimedAllReduce:
    """A model's ``all_reduce``: sums a tensor over the ranks in place, timing each call between synchronisations.

    ``seconds`` and ``calls`` accumulate; the time includes waiting for the slowest rank, as a real step does.
    """

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.seconds = 0.0
        self.calls = 0

    def __call__(self, tensor: torch.Tensor) -> torch.Tensor:
        synchronize(self.device)
        start = time.perf_counter()
        dist.all_reduce(tensor)
        synchronize(self.device)
        self.seconds += time.perf_counter() - start
        self.calls += 1
        return tensor


def rank_device(device_type: str, local_rank: int) -> torch.device:
    """``cuda:LOCAL_RANK`` for CUDA ranks, else the CPU."""
    return torch.device("cuda", local_rank) if device_type == "cuda" else torch.device("cpu")


def _build(job: TpJob, device: torch.device, dtype: torch.dtype, tp_rank: int, tp_size: int) -> torch.nn.Module:
    from mha_cli.nn import build_model

    return build_model(
        job.model, n_layers=job.n_layers, dtype=dtype, device=device, mla_mode=job.mla_mode, tp_rank=tp_rank,
        tp_size=tp_size,
    ).eval()  # fmt: skip


def full_shapes(job: TpJob) -> dict[str, torch.Size]:
    """Names and shapes of the whole model's state dict (built on the meta device: nothing allocated)."""
    model = _build(job, torch.device("meta"), torch.float32, 0, 1)
    return {name: tensor.shape for name, tensor in model.state_dict().items()}


def token_ids(job: TpJob, device: torch.device) -> torch.Tensor:
    """The same seeded tokens on every rank: (b, prefill + decode + 1), the last one fed to the timed decode step."""
    generator = torch.Generator().manual_seed(job.seed)
    length = job.prefill_tokens + job.decode_tokens + 1
    ids = torch.randint(0, job.model.vocab_size, (job.deployment.batch, length), generator=generator)  # (b, s)
    return ids.to(device)


def run_tokens(model: torch.nn.Module, caches: list, ids: torch.Tensor, prefill: int) -> torch.Tensor:
    """Prefill ``ids[:, :prefill]``, then decode the rest but the last token one at a time.

    Returns the float32 logits of the prefill's last position and of every decoded token: (b, 1 + decode, V).
    """
    with torch.inference_mode():
        logits = model(ids[:, :prefill], caches, 0)  # (b, p, V)
        pieces = [logits[:, -1:].float()]  # (b, 1, V)
        for pos in range(prefill, ids.shape[1] - 1):
            pieces.append(model(ids[:, pos : pos + 1], caches, pos).float())  # (b, 1, V)
    return torch.cat(pieces, dim=1)  # (b, 1 + decode, V)


def time_decode(
    model: torch.nn.Module, caches: list, token: torch.Tensor, timer: TimedAllReduce, job: TpJob, device: torch.device
) -> tuple[float, float, int]:
    """(median decode step ms, median all-reduce ms per step, all-reduces per step) of a decode step at position
    seq_len - 1, attending to the whole cache (as single-device verify times it), repeated after ``DECODE_WARMUP``
    untimed steps; each step rewrites the same slot."""
    pos = job.deployment.seq_len - 1
    steps, reduces, calls = [], [], 0
    with torch.inference_mode():
        for rep in range(DECODE_WARMUP + job.reps):
            reduce_before, calls_before = timer.seconds, timer.calls
            synchronize(device)
            start = time.perf_counter()
            model(token, caches, pos)  # (b, 1, V)
            synchronize(device)
            if rep >= DECODE_WARMUP:
                steps.append(time.perf_counter() - start)
                reduces.append(timer.seconds - reduce_before)
                calls = timer.calls - calls_before
    return statistics.median(steps) * 1e3, statistics.median(reduces) * 1e3, calls


def reference_logits(
    job: TpJob, shapes: dict[str, torch.Size], ids: torch.Tensor, device: torch.device, dtype: torch.dtype
) -> torch.Tensor:
    """The whole model on one device, with the full seed-derived weights, over the same tokens."""
    model = _build(job, device, dtype, 0, 1)
    weights = {name: seeded_tensor(name, shape, job.seed).to(dtype) for name, shape in shapes.items()}
    model.load_state_dict(weights, strict=True)
    caches = model.new_cache(job.deployment.batch, ids.shape[1])
    return run_tokens(model, caches, ids, job.prefill_tokens)


def compare(tp_logits: torch.Tensor, reference: torch.Tensor, tolerance: float) -> TpNumerics:
    error = (tp_logits - reference).abs().max().item()
    scale = reference.abs().max().item()
    return TpNumerics(
        positions=reference.shape[1], max_abs_error=error, reference_max_abs=scale,
        relative_error=error / scale if scale > 0 else error, tolerance=tolerance,
    )  # fmt: skip


def _first_attention(model: torch.nn.Module) -> torch.nn.Module:
    return model.model.layers[0].self_attn


def run_job(
    job: TpJob, rank: int, device: torch.device, on_stage: Callable[[str], None] = lambda stage: None
) -> TpVerifyReport | None:
    """This rank's part of ``job``; rank 0 returns the report, the others ``None``.

    ``on_stage`` hears each stage's name as it starts (build, prefill and decode, decode timing, ...)."""
    dtype = CACHE_DTYPES[job.deployment.kv_dtype]
    built = first_layers(job.model, job.n_layers)
    deployment = job.deployment.model_copy(update={"block_size": None})
    torch.manual_seed(job.seed)
    on_stage("build")
    shapes = full_shapes(job)

    model = _build(job, device, dtype, rank, job.tp)
    shard = seeded_shard(shapes, job.model, rank, job.tp, job.seed)
    model.load_state_dict({name: tensor.to(dtype) for name, tensor in shard.items()}, strict=True)
    del shard
    timer = TimedAllReduce(device)
    if job.tp > 1:
        model.all_reduce = timer
    caches = model.new_cache(deployment.batch, deployment.seq_len)
    ids = token_ids(job, device)
    on_stage("prefill and decode")
    tp_logits = run_tokens(model, caches, ids, job.prefill_tokens)
    on_stage("decode timing")
    decode_ms, allreduce_ms, calls = time_decode(model, caches, ids[:, -1:], timer, job, device)
    attention = _first_attention(model)
    value_bytes = torch.empty((), dtype=dtype).element_size()
    result = RankResult(
        rank=rank, device=str(device), n_heads=attention.n_heads, n_kv_heads=getattr(attention, "n_kv_heads", 1),
        measured_cache_bytes=sum(cache.nbytes for cache in caches),
        predicted_cache_bytes=footprint_for(built, deployment, job.tp).total_bytes,
        measured_weight_bytes=sum(p.nbytes for p in model.parameters()),
        predicted_weight_bytes=params_per_rank(built, job.tp) * value_bytes,
        decode_ms=decode_ms, allreduce_ms=allreduce_ms, allreduce_calls=calls,
    )  # fmt: skip
    del model, caches

    numerics = None
    if rank == 0:
        on_stage("single-device reference")
        tolerance = DEFAULT_TOLERANCE[dtype] if job.tolerance is None else job.tolerance
        numerics = compare(tp_logits, reference_logits(job, shapes, ids, device, dtype), tolerance)
    on_stage("gather")
    results = gather_results(result, job.tp)
    if rank != 0:
        return None
    assert numerics is not None and results is not None
    return assemble_report(job, results, numerics, device)


def gather_results(result: RankResult, world_size: int) -> list[RankResult] | None:
    """Every rank's result on rank 0 (``None`` elsewhere), through ``gather_object``."""
    if world_size == 1:
        return [result]
    gathered: list[object] | None = [None] * world_size if dist.get_rank() == 0 else None
    dist.gather_object(result.model_dump(), gathered, dst=0)
    if gathered is None:
        return None
    return [RankResult.model_validate(item) for item in gathered]


def assemble_report(job: TpJob, ranks: list[RankResult], numerics: TpNumerics, device: torch.device) -> TpVerifyReport:
    """The report rank 0 prints: per-rank figures, the whole deployment's, and the checks."""
    model, tp = job.model, job.tp
    built = first_layers(model, job.n_layers)
    deployment = job.deployment.model_copy(update={"block_size": None})
    decode_ms = statistics.fmean(r.decode_ms for r in ranks)
    allreduce_ms = statistics.fmean(r.allreduce_ms for r in ranks)
    checks = {
        "tp_matches_single_device": numerics.relative_error <= numerics.tolerance,
        "cache_bytes_match": all(r.measured_cache_bytes == r.predicted_cache_bytes for r in ranks),
        "weight_bytes_match": all(r.measured_weight_bytes == r.predicted_weight_bytes for r in ranks),
    }
    details = {
        "tp_matches_single_device": f"relative error {numerics.relative_error:.2e}"
        f" {'<=' if checks['tp_matches_single_device'] else '>'} tolerance {numerics.tolerance:g}"
        f" over {numerics.positions} logit positions",
        "cache_bytes_match": _mismatches(ranks, "cache"),
        "weight_bytes_match": _mismatches(ranks, "weight"),
    }
    return TpVerifyReport(
        source=job.source, source_kind=job.source_kind, model_name=model.name, variant=model.variant or "",
        mla_cache=job.mla_mode if model.mla is not None else None, device=job.device_type,
        device_name=device_name(device), backend=backend_for(job.device_type) if tp > 1 else "none",
        torch_version=torch.__version__, dtype=job.deployment.kv_dtype, seq_len=deployment.seq_len,
        batch=deployment.batch, tp=tp, n_layers_model=model.n_layers, n_layers_built=job.n_layers,
        layers_note=job.layers_note, prefill_tokens=job.prefill_tokens, decode_tokens=job.decode_tokens,
        decode_context=deployment.seq_len, ranks=ranks, decode_ms=decode_ms,
        allreduce_ms=allreduce_ms, allreduce_share=allreduce_ms / decode_ms if decode_ms > 0 else 0.0,
        deployment_cache_bytes=sum(r.measured_cache_bytes for r in ranks),
        deployment_predicted_cache_bytes=footprint_for(built, deployment, tp).total_bytes_all_ranks,
        deployment_weight_bytes=sum(r.measured_weight_bytes for r in ranks), numerics=numerics, checks=checks,
        check_details=details, passed=all(checks.values()), notes=_notes(job),
    )  # fmt: skip


def _mismatches(ranks: list[RankResult], what: str) -> str:
    wrong = [
        f"rank {r.rank} measured {getattr(r, f'measured_{what}_bytes'):,} B != predicted"
        f" {getattr(r, f'predicted_{what}_bytes'):,} B"
        for r in ranks
        if getattr(r, f"measured_{what}_bytes") != getattr(r, f"predicted_{what}_bytes")
    ]
    if wrong:
        return "; ".join(wrong)
    return f"every rank measured {ranks[0].measured_cache_bytes if what == 'cache' else ranks[0].measured_weight_bytes:,} B == predicted"


def _notes(job: TpJob) -> list[str]:
    model, tp = job.model, job.tp
    notes = [
        "layout: q/k/v and MLP gate/up split by columns (heads, d_ff / tp), o_proj and down_proj by rows, each"
        " followed by an all-reduce; embeddings, norms and the LM head replicated on every rank",
        f"logits compared over a prefill of {job.prefill_tokens:,} tokens and {job.decode_tokens} decode steps;"
        f" decode timed at position {job.deployment.seq_len - 1:,} (the whole cache, positions past"
        f" {job.prefill_tokens + job.decode_tokens - 1:,} left as allocated: a step's time does not depend on them)",
    ]
    if model.mla is not None:
        notes.append("MLA: the latent and its down projections are replicated; every rank caches the whole latent")
    elif tp > model.kv_heads:
        notes.append(
            f"tp ({tp}) > n_kv_heads ({model.kv_heads}): each KV head is replicated on {tp // model.kv_heads} ranks"
        )
    if job.deployment.block_size:
        notes.append(f"block_size {job.deployment.block_size} ignored: caches are built unpaged (seq_len tokens)")
    if job.device_type == "cpu" and tp > 1:
        notes.append("CPU: the all-reduce runs over gloo between processes on one host, not over NVLink/NCCL")
    return notes
