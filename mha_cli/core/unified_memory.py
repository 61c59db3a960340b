"""Integrated GPUs: devices whose GPU shares the host's memory, and how vLLM measures memory on them.

On such a device (a DGX Spark's GB10, a Jetson) torch's total (``torch.cuda.mem_get_info()[1]``) is the system memory
the OS reports, and what the OS, a desktop and every other process hold is drawn from it. vLLM 0.32 reads free memory
there as psutil's ``virtual_memory().available``, as cudaMemGetInfo leaves out reclaimable page cache
(``utils/mem_utils.py`` ``MemorySnapshot.measure``, under ``current_platform.is_integrated_gpu``, itself
``torch.cuda.get_device_properties().is_integrated``: ``platforms/cuda.py``). It asks for ceil(total x
gpu_memory_utilization) and refuses to start when less is available (``v1/worker/utils.py`` ``request_memory``); the
KV budget is that request less what the instance consumed, measured as the drop in available memory from the worker's
start-up snapshot to the end of profiling, plus the transient peak (``memory_profiling``, ``gpu_worker.py``
``determine_available_memory``). So what the host holds does not shrink vLLM's pool: it has only to leave the request
available at start-up. What the host holds is not known here: the plan states it as an assumption, never as a figure
taken off the budget. What the worker itself allocates on the host inside that window does count; of it the plan
prices the token tables the source sizes (``core.engine.uma_token_tables``), not the rest.
"""

import math

from mha_cli.core.targets import Target

VLLM_UMA_SOURCE = "vLLM 0.32 utils/mem_utils.py MemorySnapshot.measure, v1/worker/utils.py request_memory"
INTEGRATED_GPUS: dict[str, str] = {
    "gb10": "DGX Spark: vLLM 0.32's MemorySnapshot.measure names it among its UMA platforms",
    "jetson-orin": "Jetson Orin: vLLM 0.32's MemorySnapshot.measure names it among its UMA platforms",
}
"""Target id -> why its GPU is integrated (shares the host's memory)."""


def is_integrated(target: Target) -> bool:
    """Whether ``target``'s GPU shares the host's memory (``INTEGRATED_GPUS``)."""
    return target.id in INTEGRATED_GPUS


def host_allowance_bytes(total_bytes: int, utilisation: float) -> int:
    """The most the host may hold at vLLM's start (bytes): total less vLLM's request, ceil(total x utilisation)."""
    return total_bytes - math.ceil(total_bytes * utilisation)


def unified_memory_notes(target: Target, engine: str, utilisation: float) -> list[str]:
    """The assumptions a plan on an integrated GPU rests on, one line each (none on a discrete device)."""
    if not is_integrated(target):
        return []
    total = target.device_memory_bytes
    shared = (
        f"{target.id} shares its memory with the host (unified memory): the total is torch's, the system memory the"
        f" OS reports, assumed {target.torch_memory_gib:.2f} GiB (the targets row's torch figure)"
    )
    if engine != "vllm":
        return [
            f"{shared}; what the host holds (OS, other processes, page cache) comes out of the memory this engine"
            " finds free, and is assumed here to be nothing"
        ]
    allowance = host_allowance_bytes(total, utilisation)
    return [
        f"{shared}. vLLM reads free memory there as the OS's available memory and asks for utilisation x total: it"
        f" starts only while the host (OS, other processes) holds at most {allowance / 2**30:.2f} GiB, assumed here"
        f" ({VLLM_UMA_SOURCE}). The pool does not depend on what the host holds; host memory the worker itself grows"
        " by between its start-up snapshot and the end of profiling is counted in vLLM's measure, and priced only"
        " for its token tables (max_num_seqs x max_model_len, in the non-torch line)"
    ]
