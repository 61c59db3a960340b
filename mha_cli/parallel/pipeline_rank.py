"""One stage's part of ``mha verify --pp N`` (see ``pipeline_report``): build, measure, time, check, gather.

Rank r is stage r. Hidden states go from stage r to r + 1 with ``torch.distributed.send``/``recv`` (shapes known
to both from the job); in a decode loop the last stage sends the next token ids back to stage 0. Timings are
medians over ``reps`` after one warm-up; the stage's compute time is taken between device synchronisations.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable

import torch
import torch.distributed as dist

from mha_cli.core.dtypes import storage_format
from mha_cli.core.kv import kv_footprint
from mha_cli.core.pipeline import StageLayout, stage_layout, stage_model, stage_params, stage_sizes
from mha_cli.core.schemas import ModelSpec
from mha_cli.nn.device import synchronize
from mha_cli.nn.kv_cache import CACHE_DTYPES
from mha_cli.nn.model import build_model
from mha_cli.nn.pipeline import PipelineStage, build_stage
from mha_cli.nn.tensor_parallel import load_seeded_shard
from mha_cli.parallel.faults import requested_fault
from mha_cli.parallel.group import backend_for
from mha_cli.parallel.pipeline_report import (
    PP_CHECK_DECODE,
    PP_CHECK_PREFILL,
    DeploymentStage,
    PpJob,
    PpOutcome,
    PpStage,
    PpVerifyReport,
)
from mha_cli.parallel.rank_run import compare
from mha_cli.verify.plan import first_layers

CHECK_DTYPE = torch.float32


class _Pipe:
    """This process's place: stage ``rank // tp``, tensor-parallel rank ``rank % tp`` of it. It receives from the
    same tp rank of the previous stage and sends to the same tp rank of the next (the last stage: back to stage 0,
    the ring that carries decode tokens); ``reduce`` sums over its stage's tp ranks."""

    def __init__(self, rank: int, pp: int, tp: int, device: torch.device) -> None:
        self.rank, self.pp, self.tp, self.device = rank, pp, tp, device
        self.stage, self.tp_rank = divmod(rank, tp)
        self.first, self.last = self.stage == 0, self.stage == pp - 1
        groups = [dist.new_group(list(range(s * tp, (s + 1) * tp))) for s in range(pp)] if tp > 1 else []
        self.group = groups[self.stage] if groups else None  # every process creates every group, in one order

    def peer(self, stage: int) -> int:
        return (stage % self.pp) * self.tp + self.tp_rank

    def reduce(self, tensor: torch.Tensor) -> torch.Tensor:
        dist.all_reduce(tensor, group=self.group)
        return tensor

    def receive(self, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        tensor = torch.empty(shape, dtype=dtype, device=self.device)
        dist.recv(tensor, src=self.peer(self.stage - 1))
        return tensor

    def send(self, tensor: torch.Tensor) -> float:
        """Send to the next stage (the last stage: to stage 0); seconds it took."""
        synchronize(self.device)
        start = time.perf_counter()
        dist.send(tensor.contiguous(), dst=self.peer(self.stage + 1))
        synchronize(self.device)
        return time.perf_counter() - start


def _stage(spec: ModelSpec, job: PpJob, pipe: _Pipe, dtype: torch.dtype) -> PipelineStage:
    """This process's stage of ``spec``, its tp rank's shard, its all-reduces over the stage's ranks."""
    stage = build_stage(spec, job.pp, pipe.stage, dtype=dtype, device=pipe.device, tp_rank=pipe.tp_rank,
                        tp_size=job.tp)  # fmt: skip
    if job.tp > 1:
        stage.decoder.all_reduce = pipe.reduce
    return stage.eval()


def _timed(step: Callable[[], torch.Tensor], device: torch.device) -> tuple[torch.Tensor, float]:
    synchronize(device)
    start = time.perf_counter()
    out = step()
    synchronize(device)
    return out, time.perf_counter() - start


def _pass(stage: PipelineStage, pipe: _Pipe, inputs: torch.Tensor | None, caches: list, start: int,
          hidden: tuple[int, ...], dtype: torch.dtype) -> tuple[torch.Tensor | None, float, float]:  # fmt: skip
    """One forward of this stage within the pipeline: (the last stage's logits or None, compute s, send s).
    Stage 0 takes ``inputs`` (token ids); the others receive the previous stage's hidden states of ``hidden``."""
    x = inputs if pipe.first else pipe.receive(hidden, dtype)
    assert x is not None
    with torch.inference_mode():
        out, compute = _timed(lambda: stage(x, caches, start), pipe.device)
    if pipe.last:
        return out, compute, 0.0
    return None, compute, pipe.send(out)


def _decode_loop(stage: PipelineStage, pipe: _Pipe, job: PpJob, caches: list, dtype: torch.dtype) -> tuple[list[float], list[float], list[float]]:  # fmt: skip
    """Warm-up + reps decode steps at position seq - 1: (compute s, send s, rank 0's whole-step s) per timed step."""
    batch, position, d = job.deployment.batch, job.deployment.seq_len - 1, job.model.d_model
    token = torch.zeros(batch, 1, dtype=torch.long, device=pipe.device)  # (b, 1)
    computes, sends, steps = [], [], []
    for step in range(1 + job.reps):
        start = time.perf_counter()
        logits, compute, send = _pass(stage, pipe, token, caches, position, (batch, 1, d), dtype)
        if pipe.last:
            assert logits is not None
            next_token = logits[:, -1:].argmax(-1)  # (b, 1)
            if pipe.pp > 1:
                send = pipe.send(next_token)
            else:
                token = next_token
        elif pipe.first:
            token = pipe.receive((batch, 1), torch.long)  # the last stage's next token closes the step
        if step:  # the first is the warm-up
            computes.append(compute)
            sends.append(send)
            steps.append(time.perf_counter() - start)
    return computes, sends, steps


def _check(job: PpJob, pipe: _Pipe) -> torch.Tensor | None:
    """The seeded fp32 check stack's stage over the check tokens; the last stage returns the logits it made."""
    check = first_layers(job.model, job.check_layers)
    stage = _stage(check, job, pipe, CHECK_DTYPE)
    full = build_stage(check, job.pp, pipe.stage, device="meta")  # the stage's unsharded shapes
    shapes = {full.whole_model_name(name): tensor.shape for name, tensor in full.state_dict().items()}
    load_seeded_shard(stage, shapes, check, pipe.tp_rank, job.tp, job.seed, whole_name=stage.whole_model_name)
    if requested_fault(pipe.rank) == "corrupt":  # a test's deliberately wrong stage (or shard)
        with torch.no_grad():
            next(p for n, p in stage.named_parameters() if n.endswith("o_proj.weight")).neg_()
    ids = _check_tokens(job, pipe.device)  # (b, s)
    batch, d = ids.shape[0], job.model.d_model
    caches = stage.new_cache(batch, ids.shape[1])
    pieces = []
    for start, end in [(0, PP_CHECK_PREFILL), *((p, p + 1) for p in range(PP_CHECK_PREFILL, ids.shape[1]))]:
        logits, _, _ = _pass(stage.eval(), pipe, ids[:, start:end], caches, start, (batch, end - start, d), CHECK_DTYPE)
        if logits is not None:
            pieces.append(logits[:, -1:].float())  # (b, 1, V)
    return torch.cat(pieces, dim=1) if pipe.last else None  # (b, 1 + decode, V)


def _check_tokens(job: PpJob, device: torch.device) -> torch.Tensor:
    generator = torch.Generator().manual_seed(job.seed)
    ids = torch.randint(0, job.model.embeddings.vocab_size, (job.deployment.batch, PP_CHECK_PREFILL + PP_CHECK_DECODE),
                        generator=generator)  # fmt: skip
    return ids.to(device)  # (b, s)


def _reference(job: PpJob, device: torch.device) -> torch.Tensor:
    """The whole check stack on one device, the same seeded weights and tokens: (b, 1 + decode, V)."""
    check = first_layers(job.model, job.check_layers)
    model = build_model(check, dtype=CHECK_DTYPE, device=device).eval()
    load_seeded_shard(model, {n: t.shape for n, t in model.state_dict().items()}, check, 0, 1, job.seed)
    ids = _check_tokens(job, device)
    caches = model.new_cache(ids.shape[0], ids.shape[1])
    with torch.inference_mode():
        pieces = [model(ids[:, :PP_CHECK_PREFILL], caches, 0)[:, -1:].float()]
        for pos in range(PP_CHECK_PREFILL, ids.shape[1]):
            pieces.append(model(ids[:, pos : pos + 1], caches, pos).float())
    return torch.cat(pieces, dim=1)


def _figures(job: PpJob, pipe: _Pipe, built: ModelSpec, layout: StageLayout, stage: PipelineStage, caches: list,
             prefill_computes: list[float], computes: list[float], sends: list[float]) -> PpStage:  # fmt: skip
    """This process's bytes (measured and predicted) and timings."""
    bytes_per_value = storage_format(job.deployment.kv_dtype).bits // 8
    seq, batch = job.deployment.seq_len, job.deployment.batch
    return PpStage(
        stage=pipe.stage, tp_rank=pipe.tp_rank, first_layer=layout.first_layer, n_layers=layout.n_layers,
        embedding=layout.embedding, head=layout.head,
        predicted_weight_bytes=stage_params(built, layout, job.tp) * bytes_per_value,
        measured_weight_bytes=sum(p.nbytes for p in stage.parameters()),
        predicted_cache_bytes=kv_footprint(
            stage_model(built, layout), seq_len=seq, batch=batch, kv_dtype=job.deployment.kv_dtype, tp=job.tp,
            state_convention="transformers",  # what the torch stage holds
        ).total_bytes,
        measured_cache_bytes=sum(cache.nbytes for cache in caches),
        prefill_compute_ms=statistics.median(prefill_computes) * 1e3,
        decode_compute_ms=statistics.median(computes) * 1e3, send_ms=statistics.median(sends) * 1e3,
    )  # fmt: skip


def run_stage(job: PpJob, rank: int, device: torch.device, on_stage: Callable[[str], None]) -> PpVerifyReport | None:
    """Stage ``rank``'s part of ``job``; rank 0 returns the report, the others ``None``."""
    dtype = CACHE_DTYPES[job.deployment.kv_dtype]
    pipe = _Pipe(rank, job.pp, job.tp, device)
    built = first_layers(job.model, job.n_layers_built)
    layout = stage_layout(built, job.pp, pipe.stage)
    batch, seq, d = job.deployment.batch, job.deployment.seq_len, job.model.d_model
    on_stage("build")
    torch.manual_seed(rank)
    stage = _stage(built, job, pipe, dtype)
    caches = stage.new_cache(batch, seq, dtype=dtype)

    on_stage("prefill")
    prompt = torch.randint(job.model.embeddings.vocab_size, (batch, job.prefill_tokens), device=device)  # (b, p)
    prefill_computes, prefill_walls = [], []
    for rep in range(1 + job.reps):
        start = time.perf_counter()
        _, compute, _ = _pass(stage, pipe, prompt, caches, 0, (batch, job.prefill_tokens, d), dtype)
        done = torch.zeros(1, device=device)
        dist.all_reduce(done)  # every stage finished this prefill: rank 0's wall time covers the whole pipeline
        if rep:
            prefill_computes.append(compute)
            prefill_walls.append(time.perf_counter() - start)

    on_stage("decode")
    computes, sends, steps = _decode_loop(stage, pipe, job, caches, dtype)

    figures = _figures(job, pipe, built, layout, stage, caches, prefill_computes, computes, sends)
    del stage, caches  # the check builds its own stage in fp32: free this one first
    gc.collect()  # a built model sits in reference cycles until the collector runs
    on_stage("pp check")
    tp_logits = _check(job, pipe)
    gc.collect()  # the check stage, before the reference
    numerics = None
    if pipe.last and pipe.tp_rank == 0:
        on_stage("single-device reference")
        assert tp_logits is not None
        numerics = compare(tp_logits, _reference(job, device), job.tolerance)
    on_stage("gather")
    gathered: list[object] | None = [None] * job.pp * job.tp if rank == 0 else None
    dist.gather_object(PpOutcome(figures=figures, numerics=numerics).model_dump(), gathered, dst=0)
    if gathered is None:
        return None
    outcomes = [PpOutcome.model_validate(item) for item in gathered]
    return _report(job, outcomes, device, prefill_ms=statistics.median(prefill_walls) * 1e3,
                   decode_ms=statistics.median(steps) * 1e3)  # fmt: skip


def _report(job: PpJob, outcomes: list[PpOutcome], device: torch.device, *, prefill_ms: float, decode_ms: float) -> PpVerifyReport:  # fmt: skip
    stages = [outcome.figures for outcome in outcomes]
    numerics = next(outcome.numerics for outcome in outcomes if outcome.numerics is not None)
    assert numerics is not None
    checks = {
        "every_stage_weight_bytes_match": all(s.measured_weight_bytes == s.predicted_weight_bytes for s in stages),
        "every_stage_cache_bytes_match": all(s.measured_cache_bytes == s.predicted_cache_bytes for s in stages),
        "pp_matches_single_device": numerics.relative_error <= numerics.tolerance,
    }
    details = {
        "every_stage_weight_bytes_match": ", ".join(
            f"stage {s.stage}.{s.tp_rank} {s.measured_weight_bytes:,} {'==' if s.measured_weight_bytes == s.predicted_weight_bytes else '!='}"
            f" {s.predicted_weight_bytes:,} B" for s in stages),
        "every_stage_cache_bytes_match": ", ".join(
            f"stage {s.stage}.{s.tp_rank} {s.measured_cache_bytes:,} {'==' if s.measured_cache_bytes == s.predicted_cache_bytes else '!='}"
            f" {s.predicted_cache_bytes:,} B" for s in stages),
        "pp_matches_single_device": f"relative error {numerics.relative_error:.2e} vs tolerance {numerics.tolerance:g}"
        f" over {numerics.positions} logit positions",
    }  # fmt: skip
    value = storage_format(job.deployment.kv_dtype).bits // 8
    deployment_stages = []
    for s in range(job.pp):
        layout = stage_layout(job.model, job.pp, s)
        cache = kv_footprint(stage_model(job.model, layout), seq_len=job.deployment.seq_len,
                             batch=job.deployment.batch, kv_dtype=job.deployment.kv_dtype, tp=job.tp).total_bytes  # fmt: skip
        deployment_stages.append(DeploymentStage(stage=s, n_layers=layout.n_layers,
                                                 weight_bytes=stage_params(job.model, layout, job.tp) * value,
                                                 cache_bytes=cache))  # fmt: skip
    notes = [
        *(f"assumed: {note}" for note in job.assumptions),
        f"built {job.n_layers_built} of {job.model.n_layers} layers,"
        f" {'/'.join(map(str, stage_sizes(job.n_layers_built, job.pp)))} per stage (vLLM's split);"
        " deployment_stages predicts every layer's split",
        f"the stages-vs-one-device check runs {job.check_layers} layers in fp32 with seed-derived weights",
        "decode_ms is one token per sequence through every stage in turn (no micro-batching): a pipeline's latency,"
        " not its throughput",
    ]
    return PpVerifyReport(
        source=job.source, model_name=job.model.name, device=str(device), dtype=job.deployment.kv_dtype,
        seq_len=job.deployment.seq_len, batch=job.deployment.batch, pp=job.pp, tp=job.tp,
        backend=backend_for(job.device_type),
        n_layers_model=job.model.n_layers, n_layers_built=job.n_layers_built, stages=stages,
        prefill_tokens=job.prefill_tokens, prefill_ms=prefill_ms, decode_ms=decode_ms, numerics=numerics,
        deployment_stages=deployment_stages, checks=checks, check_details=details, passed=all(checks.values()),
        notes=notes,
    )  # fmt: skip
