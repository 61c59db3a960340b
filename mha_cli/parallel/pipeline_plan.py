"""Plan a pipeline-parallel verify once, before any stage starts (``PpJob``): the layers built and checked, the
prompt, the tolerance; refused in one line (exit 2) for what the stages cannot run, exit 3 when a stage cannot fit.
The stages split the layers built as vLLM does (``core.pipeline.stage_sizes``), unevenly where pp does not divide them.
"""

from __future__ import annotations

from mha_cli.core.dtypes import storage_format
from mha_cli.core.errors import BadInputError, OutOfMemoryError
from mha_cli.core.kv import kv_footprint
from mha_cli.core.pipeline import first_moe_layer, pp_problem, stage_layout, stage_model, stage_params
from mha_cli.core.quantities import format_bytes
from mha_cli.core.schemas import DeploymentSpec, ModelSpec
from mha_cli.core.sources import ModelSource
from mha_cli.core.tensor_parallel import tp_shard_problem
from mha_cli.parallel.pipeline_report import PpJob
from mha_cli.parallel.plan import DEFAULT_TIMEOUT_S, one_device_stack_bytes
from mha_cli.verify.plan import DeviceType, check_buildable, device_free_bytes, first_layers, workspace_bytes

CPU_LAYERS_PER_STAGE = 1
"""Layers each stage builds on CPU by default (a GPU builds every layer)."""
CPU_PREFILL_TOKENS = 128
DEFAULT_TOLERANCE = 1e-4
"""fp32 stages against one fp32 device: only the order of additions differs."""
MAX_PP = 64


def _check_layers(model: ModelSpec, pp: int, built: int) -> int:
    """Layers of the check: one of each kind (a full local/global pattern, the dense layers and one MoE layer),
    at least one per stage (the stages split any count of at least pp, unevenly where pp does not divide it:
    ``core.pipeline.stage_sizes``), at most the layers built."""
    kinds = max(1, len(model.layers.pattern or []), first_moe_layer(model) + 1)
    return min(built, max(kinds, pp))


FP32 = 4
CHECK_TOKENS = 32
"""Tokens the stages-vs-one-device check caches (its prefill and decoded tokens, rounded up)."""


def _stage_needs(
    model: ModelSpec, deployment: DeploymentSpec, *, pp: int, tp: int, layers: int, batch: int, prompt: int
) -> list[int]:
    """Bytes each process holds at its peak with ``batch`` sequences: its stage (weights, cache and the activations
    of a ``prompt``-token prefill, ``verify.plan.workspace_bytes``), then, that
    freed, its fp32 check stage (its seeded weights written in place, a block of rows at a time:
    ``nn.tensor_parallel``); the last stage's first rank also builds the whole check stack on one device in fp32."""
    value = storage_format(deployment.kv_dtype).bits // 8
    built = first_layers(model, layers)
    check = first_layers(model, _check_layers(model, pp, layers))
    reference = one_device_stack_bytes(check, CHECK_TOKENS)
    needs = []
    for stage in range(pp):
        layout, check_layout = stage_layout(built, pp, stage), stage_layout(check, pp, stage)
        cache = kv_footprint(
            stage_model(built, layout), seq_len=deployment.seq_len, batch=batch, kv_dtype=deployment.kv_dtype, tp=tp
        ).total_bytes
        workspace = workspace_bytes(
            built, batch=batch, prefill_tokens=min(prompt, deployment.seq_len), context=deployment.seq_len,
            value_bytes=value, tp=tp,
        )  # fmt: skip
        main = stage_params(built, layout, tp) * value + cache + workspace
        checking = stage_params(check, check_layout, tp) * FP32
        reference_here = reference if stage == pp - 1 else 0  # the last stage's first rank only
        needs += [max(main, checking + reference_here)] + [max(main, checking)] * (tp - 1)
    return needs


def _check_memory(
    model: ModelSpec, deployment: DeploymentSpec, *, pp: int, tp: int, layers: int, device_type: DeviceType, free: int,
    prompt: int,
) -> None:  # fmt: skip
    """Refuse (exit 3) what does not fit (``_stage_needs``), saying what to shrink: the batch where one sequence
    fits, else the layers, the context, or (the embedding and head alone too large) the machine. On CPU the processes
    share the host's memory; on GPUs each has one."""
    usable = int(free * 0.8)
    what = "one GPU" if device_type == "cuda" else "the host"

    def need(batch: int, seq_len: int = deployment.seq_len) -> int:
        sized = deployment.model_copy(update={"seq_len": seq_len})
        needs = _stage_needs(model, sized, pp=pp, tp=tp, layers=layers, batch=batch, prompt=prompt)
        return max(needs) if device_type == "cuda" else sum(needs)

    asked = need(deployment.batch)
    if asked <= usable:
        return
    fewer = layers // 2
    if deployment.batch > 1 and need(1) <= usable:
        advice = "try a smaller --batch or a shorter --seq (the cache of every sequence is what does not fit)"
    elif fewer >= pp:
        advice = f"try --layers {fewer} or a shorter --seq"
    elif need(1, seq_len=1) > usable:
        advice = "the embedding and head alone (in fp32 for the check) do not fit: a larger machine, or GPUs"
    else:
        advice = "try a shorter --seq"
    raise OutOfMemoryError(
        f"{pp} stages x tp {tp} need {format_bytes(asked)} on {what} (their weights, cache and prefill activations,"
        f" then the fp32 check), {format_bytes(usable)} usable: {advice}"
    )


def make_pp_job(
    loaded: ModelSource,
    deployment: DeploymentSpec,
    *,
    pp: int,
    tp: int = 1,
    device_type: DeviceType,
    layers: int | None = None,
    prefill_tokens: int | None = None,
    reps: int = 10,
    tolerance: float | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> PpJob:
    """The job every stage runs; raises ``BadInputError`` (exit 2) or ``OutOfMemoryError`` (exit 3)."""
    model = loaded.model
    if not 2 <= pp <= MAX_PP:
        raise BadInputError(f"--pp {pp}: give 2 to {MAX_PP} stages")
    problem = pp_problem(model, pp) or (tp_shard_problem(model, tp) if tp > 1 else None)
    if problem is not None:
        raise BadInputError(problem)
    check_buildable(model, deployment, layers=layers, prefill_tokens=prefill_tokens)
    if layers is None:
        layers = model.n_layers if device_type == "cuda" else min(model.n_layers, CPU_LAYERS_PER_STAGE * pp)
    if layers < pp:
        raise BadInputError(f"--layers {layers} is fewer than --pp {pp}: each stage builds at least one layer")
    seq = deployment.seq_len
    prompt = prefill_tokens or (seq if device_type == "cuda" else min(seq, CPU_PREFILL_TOKENS))
    if prompt > seq:
        raise BadInputError(f"--prefill-tokens {prompt} exceeds --seq {seq}")
    free = device_free_bytes(device_type, 0 if device_type == "cuda" else None)
    if free is not None:
        _check_memory(model, deployment, pp=pp, tp=tp, layers=layers, device_type=device_type, free=free, prompt=prompt)
    return PpJob(
        source=loaded.origin, model=model, deployment=deployment, pp=pp, tp=tp, device_type=device_type,
        n_layers_built=layers, check_layers=_check_layers(model, pp, layers), prefill_tokens=prompt, reps=reps,
        tolerance=DEFAULT_TOLERANCE if tolerance is None else tolerance, timeout_s=timeout_s,
        assumptions=list(loaded.assumptions),
    )  # fmt: skip
