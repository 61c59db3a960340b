"""The engine releases that predate NVIDIA Blackwell (compute capability 10.x and 12.x), refused there in one line.

Read in the engines' release notes (trial 351 #1: ``--engine vllm@0.8 --target 8xb300`` was priced and its launch
line offered):

- vLLM: 0.9.0 moved the default wheel "from CUDA 12.4 to CUDA 12.8" and shipped its "initial set of optimized kernels
  on NVIDIA Blackwell" (v0.9.0 release notes, https://github.com/vllm-project/vllm/releases/tag/v0.9.0, quoted in
  NVIDIA-NeMo/Guardrails#1312). CUDA 12.4 compiles for no compute capability above 9.0, so every wheel before 0.9.0
  lacks Blackwell kernels.
- TensorRT-LLM: 0.17.0 "Added support for B200" and GeForce RTX 50 under "Blackwell support" (its release notes,
  NVIDIA/TensorRT-LLM#2725); no earlier release names a Blackwell part.

Not checked, for want of a source read here: SGLang by release (0.4.10 starts on an RTX 5080: the engine log 510),
Blackwell Ultra (10.3) against the first release that built for it, and AMD's gfx950 (MI355X) against vLLM's and
SGLang's ROCm releases.
"""

from __future__ import annotations

from mha_cli.core.engine.generations import Version
from mha_cli.core.errors import ReleaseBeforeGpuError
from mha_cli.core.targets import Target

BLACKWELL_CAPABILITY = 10.0
"""The first Blackwell compute capability (B200 10.0, B300 10.3, RTX 50 and RTX PRO 12.0, GB10 12.1)."""
FIRST_BLACKWELL_RELEASE: dict[str, tuple[Version, str]] = {
    "vllm": ((0, 9), "vLLM's wheels before 0.9.0 are built with CUDA 12.4, which compiles no Blackwell kernels"
                     " (0.9.0's release notes: the default wheel moved to CUDA 12.8, with its first Blackwell kernels)"),
    "trtllm": ((0, 17), "TensorRT-LLM added Blackwell support in 0.17.0 (its release notes: 'Added support for B200')"),
}  # fmt: skip
"""Engine -> (the first release that runs on Blackwell, why)."""


def check_release_runs_on(engine: str, release: Version | None, shown: str, target: Target) -> None:
    """Refuse (exit 2) ``engine`` at ``release`` (``shown`` as ``--engine`` named it: ``vllm@0.8``, ``vllm-v0``) on a
    Blackwell ``target``, when the release predates the engine's first Blackwell release; None ``release`` is the
    latest, which runs there. A target without a compute capability is not checked."""
    first = FIRST_BLACKWELL_RELEASE.get(engine)
    capability = target.compute_capability
    if first is None or release is None or capability is None or target.vendor != "NVIDIA":
        return
    if capability < BLACKWELL_CAPABILITY or release >= first[0]:
        return
    since = ".".join(str(part) for part in first[0])
    raise ReleaseBeforeGpuError(
        f"--engine {shown} does not run on {target.id} (compute capability {capability:.1f}, Blackwell):"
        f" {first[1]}; use --engine {engine}@{since} or later"
    )
