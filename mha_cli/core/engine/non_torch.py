"""vLLM's "non-torch forward increase memory" at tp > 1: what its profiling window adds outside torch's allocator.

vLLM 0.19 takes its start-up snapshot after NCCL starts (``v1/worker/gpu_worker.py`` ``init_device``: "Initialize
the distributed environment BEFORE taking memory snapshot") and charges what non-torch memory grows from there to the
end of the profiling run (``utils/mem_utils.py`` ``memory_profiling``). At tp > 1 three things that grow there exist
only on Hopper and Blackwell datacenter parts (compute capability 9.0 and the 10.x family):

- the FlashInfer all-reduce + RMSNorm fusion, which vLLM 0.19 turns on for tp > 1 only on those parts
  (``config/vllm.py`` ``enable_allreduce_rms_fusion``: ``is_device_capability_family(100)`` or
  ``is_device_capability(90)``). Its workspace is made while the profiling run compiles the model: three cudaMalloc
  IPC buffers (flashinfer-python 0.6.6, which 0.19 pins, ``comm/trtllm_ar.py``
  ``trtllm_create_ipc_workspace_for_all_reduce_fusion``), exchanged with ``dist.all_gather_object`` over the TP
  device group (``comm/cuda_ipc.py`` ``create_shared_buffer``), whose torch NCCL communicator that call creates;
- NCCL's NVLink SHARP buffers: NCCL 2.27.5 (``src/transport/nvls.cc``) sets NVLS up only with multicast support
  (NVSwitch, Hopper on) and more than two GPUs, 16 channels x 2 x 128 KiB x 8 steps = 32 MiB per NVLS head;
- nothing of the kind on Ampere, Ada or other parts (the H100 PCIe is Hopper: in): there the window holds NCCL's lazily connected P2P/SHM ring and
  tree buffers only (NCCL_BUFFSIZE 4 MiB, LL128 4.7 MiB and LL 0.5 MiB a connection, ``src/init.cc``, in host memory over SHM).

The sources name the parts but do not add up to the 2.1 GiB the v0.19 H100 logs print (tp 2 with a 0.5 GiB fusion
workspace and tp 4 with a 0.03 GiB one both print 2.07-2.21 GiB), so the figure on Hopper/Blackwell stays the logs'
measurement; elsewhere the one-rank figure is charged, which the PCIe logs' own breakdowns bear out (vLLM 0.10 on
eight L40S prints 0.21 GiB with NCCL's start-up inside its window).

The fusion is a default only from vLLM 0.17 (read in the wheels' ``config/vllm.py`` and ``config/compilation.py``):
0.10.1.1-0.11.x declare ``PassConfig.enable_fi_allreduce_fusion: bool = False``; 0.12-0.16 set
``fuse_allreduce_rms: False`` at every optimisation level; 0.17.0 sets it to ``enable_allreduce_rms_fusion`` at O2
(the default level) and O3 (vllm-project/vllm#34299, "enabled AR+rms fusion by default", as #34392 of 2026-02-12
says), on capability 9.0 or exactly 10.0 (``is_device_capability(100)``); 0.19.0 widens it to the 10.x family, B300
and GB300 (``is_device_capability_family(100)``, vllm-project/vllm#37755). Before its release a part pays the one-rank
figure: vLLM 0.11's H100 logs at tp 2 print 0.54-0.55 GiB (llm-d's tests/fixtures/engine_logs.yaml ids 302 and 307),
0.3 GiB above it with no source-backed cause found, and no log of 0.8-0.10 on Hopper at tp > 1 prints its figure.
Pure Python.
"""

from mha_cli.core.byte_units import GIB
from mha_cli.core.engine.generations import Version
from mha_cli.core.targets import Target

NON_TORCH_ONE_RANK = round(0.25 * GIB)
"""vLLM's "non-torch forward increase memory" on one GPU: 0.24-0.26 GiB in every published v0.19 log of one
rank (H100, Llama/Qwen/Gemma/Phi/DeepSeek; ``tests/fixtures/vllm_logs.yaml``): CUDA context growth, cuBLAS
workspaces."""
NON_TORCH_TENSOR_PARALLEL = round(2.1 * GIB)
"""The same at tp > 1 on Hopper/Blackwell: 2.06-2.21 GiB in the published v0.19 H100 logs at tp 2 and 4 (the
all-reduce fusion workspace and the NCCL communicator it creates, NVLS buffers at tp > 2)."""

FUSION_DEFAULT_FROM: Version = (0, 17)
"""The first vLLM release that turns the all-reduce fusion on by default (vllm-project/vllm#34299, in 0.17.0)."""
FUSION_FAMILY_100_FROM: Version = (0, 19)
"""The first vLLM release that turns it on across the 10.x family, not 10.0 alone (vllm-project/vllm#37755)."""

FUSED_CAPABILITIES = (9.0, 10.0)
"""Compute capabilities on which vLLM 0.17 and later enable the FlashInfer all-reduce fusion: Hopper (H100, H200, H20,
H800, GH200) and 10.0 (B200, GB200). RTX 50xx and RTX PRO Blackwell are 12.0: not in."""
FAMILY_100 = 10
"""The 10.x family (B300 and GB300 are 10.3, Blackwell Ultra): in from vLLM 0.19 (``FUSION_FAMILY_100_FROM``)."""


def fused_allreduce_part(target: Target, release: Version | None = None) -> bool:
    """vLLM ``release`` (None: the latest) turns the all-reduce fusion on by default on ``target``: an NVIDIA GPU of
    compute capability 9.0 or 10.0 (``FUSED_CAPABILITIES``), and the 10.x family from 0.19, from 0.17 on. By its
    capability, as vLLM decides, for a target file too (trial 338 #2: a file's name words decided, so renaming it
    moved the pool by 1.85 GiB a GPU)."""
    if target.vendor != "NVIDIA" or (release is not None and release < FUSION_DEFAULT_FROM):
        return False
    capability = target.compute_capability
    if capability is None:
        return False
    family = release is None or release >= FUSION_FAMILY_100_FROM
    return capability in FUSED_CAPABILITIES or (family and int(capability) == FAMILY_100)


def non_torch_bytes(tp: int, target: Target, release: Version | None = None) -> int:
    """Bytes of non-torch memory vLLM ``release`` (None: the latest) charges each rank of ``tp`` on ``target``."""
    if tp > 1 and fused_allreduce_part(target, release):
        return NON_TORCH_TENSOR_PARALLEL
    return NON_TORCH_ONE_RANK


def non_torch_how(tp: int, target: Target, release: Version | None = None) -> str:
    """Where ``non_torch_bytes`` comes from, for the budget's line."""
    if tp == 1 and target.vendor == "AMD":  # review 405 #10
        return "measured in vLLM's logs on NVIDIA GPUs, tp 1 (CUDA context, cuBLAS); ROCm's HIP context unmeasured"
    if tp == 1:
        return "measured in vLLM's logs, tp 1 (CUDA context, cuBLAS)"
    if fused_allreduce_part(target, release):
        return "measured in vLLM 0.19's H100 logs, tp > 1 (all-reduce fusion workspace, NCCL, NVLS)"
    if release is not None and fused_allreduce_part(target):
        return (
            f"vLLM {release[0]}.{release[1]} leaves the all-reduce fusion off on {target.id} (a default from 0.17,"
            " 0.19 for B300): the one-rank figure"
        )
    if target.vendor == "AMD":  # trial 402 #7: ROCm's RCCL and vLLM's quick all-reduce buffers, not NVIDIA's
        return (
            f"{target.id}: no all-reduce fusion at tp > 1 (vLLM's is NVIDIA's): the one-rank figure, measured on NVIDIA"
            " GPUs; RCCL's and vLLM's ROCm all-reduce buffers are not measured"
        )
    return f"{target.id}: no all-reduce fusion or NVLS at tp > 1 (vLLM, NCCL source): the one-rank figure"
