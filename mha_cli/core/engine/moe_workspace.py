"""vLLM's fused-MoE workspace: two buffers its Triton experts kernel takes from a store that keeps them.

From 0.14.0 vLLM runs the CUDA MoE layers of bf16/fp16 checkpoints (``UnquantizedFusedMoEMethod``) and of fp8 ones
(``Fp8MoEMethod``, compressed-tensors' ``CompressedTensorsW8A8Fp8MoEMethod``, through ``make_fp8_moe_kernel``) as a
``FusedMoEModularKernel``; 0.13.0's ``UnquantizedFusedMoEMethod`` still called the functional ``fused_experts``, whose
caches are freed after each call (priced with the forward pass, ``core.engine.activation``). ``FusedMoEModularKernel._allocate_buffers`` takes
workspace13 and workspace2 from ``v1/worker/workspace.py``'s ``WorkspaceManager`` (0.13.0 on; 0.11-0.12 kept
``SharedResizableBuffer``s, unused by these methods under plain tensor parallelism), which grows one buffer to the
largest request and keeps it: after the profiling run it is still allocated. ``TritonExperts.workspace_shapes``
(read in ``fused_moe.py`` of 0.14.0, 0.16.0 and 0.19.1, ``experts/triton_moe.py`` of 0.22.1 and 0.29.0: the same): workspace1 (M, top_k,
max(N / 2, K)) and workspace2 (M, top_k, max(N, K)) in the activation dtype, N the rank's gate+up width
(2 x d_ff_expert / tp), K d_model, each rounded up to 256 B (``get_simultaneous``); the output reuses workspace13.
M is the profiling run's max_num_batched_tokens, at most ``VLLM_FUSED_MOE_CHUNK_SIZE`` (16,384) in 0.14-0.17, whose
modular kernel chunks; from 0.18.0 it has no chunking.

Which kernel runs without environment variables (``oracle/unquantized.py``, ``oracle/fp8.py``):

- bf16/fp16: Triton on every NVIDIA GPU in 0.14-0.19 (FlashInfer's MoE only with ``VLLM_USE_FLASHINFER_MOE_FP16``,
  read in 0.16.0 and 0.19.1); from 0.20.0 ``_get_priority_backends`` puts FlashInfer TRT-LLM and CUTLASS first, which
  run on capability 9.0, 10.x and 12.x (``FlashInferExperts._supports_current_device``, 0.22.1), so Triton only
  below 9.0 (read in 0.20.0, 0.21.0, 0.22.1; 0.23-0.26 not read, taken as 0.22.1); from 0.27.0 Hopper moves them
  behind Triton (``is_device_capability_family(90)``, read in 0.27.1, 0.28.0 and 0.29.0): Triton below 10.0.
- fp8: Triton on Ada (capability 8.9): FlashInfer, DeepGEMM and vLLM's CUTLASS MoE need 9.0, and below 8.9 (no fp8
  tensor cores) the oracle takes Marlin (``Fp8MoeBackend.MARLIN``, 0.13.0-0.29.0).

Not priced: fp8 on Hopper and Blackwell, FlashInfer's and Marlin's workspaces (other shapes), mxfp4 (gpt-oss,
``core.engine.mxfp4_moe``), nvfp4, AWQ/GPTQ (Marlin), ROCm (AITER) and the CPU.

Consequence for the profile (``utils/mem_utils.py`` ``memory_profiling``): the buffer is live at the torch peak of
every layer after the first MoE layer and of the dummy sampler, so it adds to the largest of those peaks rather than
competing with them; the forward's MoE caches are then this buffer, not a transient (``profile_peak_bytes``).
"""

from __future__ import annotations

from mha_cli.core.engine.generations import Version
from mha_cli.core.schemas import ModelSpec
from mha_cli.core.targets import Target

WORKSPACE_FROM: Version = (0, 14)
"""The first vLLM whose bf16 and fp8 MoE methods run the modular kernel on the kept workspace."""
UNCHUNKED_FROM: Version = (0, 18)
"""The first vLLM whose modular kernel no longer chunks M by ``VLLM_FUSED_MOE_CHUNK_SIZE``."""
CHUNK_TOKENS = 16 * 1024
"""``VLLM_FUSED_MOE_CHUNK_SIZE``'s default in 0.14-0.17 (``envs.py``)."""
WORKSPACE_BYTES = 2
"""``workspace_dtype``: the activation dtype (bf16/fp16) for the Triton experts."""
ALIGNMENT = 256
"""``WorkspaceManager.get_simultaneous`` rounds each view up to 256 B."""
FLASHINFER_FIRST_FROM: Version = (0, 20)
"""The first vLLM whose unquantized oracle tries FlashInfer's MoE before Triton by default."""
HOPPER_TRITON_FROM: Version = (0, 27)
"""The first vLLM read whose unquantized oracle moves FlashInfer behind Triton on Hopper (0.22.1 does not)."""
FP8_TENSOR_CORES = 8.9
"""Below this capability the fp8 oracle takes Marlin."""


def _bf16_triton_below(release: Version | None) -> float:
    """The capability below which vLLM ``release`` runs bf16/fp16 experts on Triton."""
    if release is not None and release < FLASHINFER_FIRST_FROM:
        return float("inf")
    return 9.0 if release is not None and release < HOPPER_TRITON_FROM else 10.0


def runs_triton_experts(release: Version | None, weight_dtype: str, target: Target) -> bool:
    """Whether vLLM ``release`` (None: the latest rules) runs a ``weight_dtype`` checkpoint's experts with the kept
    Triton workspace on ``target``."""
    if release is not None and release < WORKSPACE_FROM:
        return False
    capability = target.compute_capability
    if target.vendor != "NVIDIA" or capability is None:
        return False
    if weight_dtype in ("bf16", "fp16"):
        return capability < _bf16_triton_below(release)
    if weight_dtype in ("fp8", "fp8-block"):
        return FP8_TENSOR_CORES <= capability < 9.0
    return False


def _rows(tokens: int, release: Version | None) -> int:
    """M of the profiling run's workspace: its tokens, chunked to 16,384 in 0.14-0.17."""
    chunked = release is not None and release < UNCHUNKED_FROM
    return min(tokens, CHUNK_TOKENS) if chunked else tokens


def _aligned(nbytes: int) -> int:
    return -(-nbytes // ALIGNMENT) * ALIGNMENT


def moe_workspace_bytes(model: ModelSpec, *, tokens: int, tp: int, release: Version | None) -> int:
    """Bytes of workspace13 + workspace2 ``TritonExperts`` asks for over ``tokens`` tokens on one rank; 0 for a
    dense model."""
    moe = model.block.moe
    if moe is None:
        return 0
    rows = _rows(tokens, release)
    width = moe.d_ff_expert // tp  # N / 2: the gated activation's output
    per_row = rows * moe.n_active_experts * WORKSPACE_BYTES
    return _aligned(per_row * max(width, model.d_model)) + _aligned(per_row * max(2 * width, model.d_model))


def moe_workspace_how(model: ModelSpec, *, tokens: int, tp: int, release: Version | None) -> str:
    """The activation line's words for the kept workspace."""
    moe = model.block.moe
    assert moe is not None
    rows = _rows(tokens, release)
    width = moe.d_ff_expert // tp
    return (
        f"+ the fused-MoE workspace vLLM keeps (TritonExperts): {rows} tokens x top-k {moe.n_active_experts} x"
        f" ({max(width, model.d_model)} + {max(2 * width, model.d_model)}) x {WORKSPACE_BYTES} B"
    )
