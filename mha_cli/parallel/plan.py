"""Decide a tensor-parallel verify before any process starts: the shapes, layer count and token counts
every rank uses, refused with exit 2 when tp does not split the model or the device cannot host the ranks.
"""

from __future__ import annotations

from mha_cli.core.errors import BadInputError
from mha_cli.core.schemas import DeploymentSpec
from mha_cli.core.sources import ModelSource
from mha_cli.core.tensor_parallel import tp_shard_problem
from mha_cli.parallel.report import DeviceType, TpJob
from mha_cli.verify.plan import CPU_DEFAULT_LAYERS, CPU_DEFAULT_PREFILL_TOKENS, torch_dtype_name, validate_options

DECODE_TOKENS = 4
"""Tokens decoded one at a time after the prefill and compared with the single device."""
CUDA_DEFAULT_PREFILL_TOKENS = 1024
"""Prefill length on GPUs unless --prefill-tokens says otherwise (the single-device reference runs it too)."""
DEFAULT_TIMEOUT_S = 900.0
"""Bound on a whole tensor-parallel run and on each of its collectives (--tp-timeout)."""


def resolve_tp_device(device: str, tp: int) -> DeviceType:
    """``cpu`` or ``cuda`` for ``tp`` ranks: CUDA needs one visible device per rank (else exit 2, offering the CPU)."""
    import torch

    from mha_cli.nn.device import resolve_device

    target = resolve_device(device)
    if target.type != "cuda":
        return "cpu"
    visible = torch.cuda.device_count()
    if visible < tp:
        raise BadInputError(
            f"--tp {tp} needs {tp} CUDA devices, {visible} visible: rerun with --device cpu to run {tp} gloo"
            " processes on the host"
        )
    return "cuda"


def make_tp_job(
    loaded: ModelSource,
    deployment: DeploymentSpec,
    *,
    tp: int,
    device_type: DeviceType,
    layers: int | None = None,
    prefill_tokens: int | None = None,
    reps: int = 10,
    tolerance: float | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    seed: int = 0,
) -> TpJob:
    """The job every rank runs; raises ``BadInputError`` (exit 2) for options or a tp that cannot work."""
    validate_options(reps=reps, layers=layers, prefill_tokens=prefill_tokens, tolerance=tolerance)
    model = loaded.model
    if tp < 1:
        raise BadInputError(f"--tp must be at least 1 (got {tp})")
    if not timeout_s > 0:
        raise BadInputError(f"--tp-timeout must be greater than 0 (got {timeout_s:g})")
    problem = tp_shard_problem(model, tp)
    if problem is not None:
        raise BadInputError(problem)
    torch_dtype_name(deployment.kv_dtype)  # refuses quantised formats (exit 2)
    if layers is not None and layers > model.n_layers:
        raise BadInputError(f"--layers ({layers}) must be between 1 and the model's {model.n_layers} layers")
    if layers is not None:
        n_layers, note = layers, f"{layers} of {model.n_layers} (--layers)"
    elif device_type == "cpu" and model.n_layers > CPU_DEFAULT_LAYERS:
        n_layers, note = CPU_DEFAULT_LAYERS, f"{CPU_DEFAULT_LAYERS} of {model.n_layers} (CPU default; --layers N)"
    else:
        n_layers, note = model.n_layers, f"all {model.n_layers}"
    seq = deployment.seq_len
    longest_prefill = seq - DECODE_TOKENS - 1  # room for the checked decode tokens and one timed step
    if longest_prefill < 1:
        raise BadInputError(f"--seq ({seq}) must be at least {DECODE_TOKENS + 2} for a tensor-parallel check")
    default = CPU_DEFAULT_PREFILL_TOKENS if device_type == "cpu" else CUDA_DEFAULT_PREFILL_TOKENS
    prefill = min(default if prefill_tokens is None else prefill_tokens, longest_prefill)
    return TpJob(
        source=loaded.origin, source_kind=loaded.kind, model=model, deployment=deployment, tp=tp,
        device_type=device_type, n_layers=n_layers, layers_note=note, mla_mode=deployment.mla_cache,
        prefill_tokens=prefill, decode_tokens=DECODE_TOKENS, reps=reps, seed=seed, tolerance=tolerance,
        timeout_s=timeout_s,
    )  # fmt: skip
