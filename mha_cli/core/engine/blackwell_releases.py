"""The engine releases that predate NVIDIA Blackwell (compute capability 10.x and 12.x), refused there in one line.

Read in the engines' release notes (trial 351 #1: ``--engine vllm@0.8 --target 8xb300`` was priced and its launch
line offered):

- vLLM: 0.9.0 moved the default wheel "from CUDA 12.4 to CUDA 12.8" and shipped its "initial set of optimized kernels
  on NVIDIA Blackwell" (v0.9.0 release notes, https://github.com/vllm-project/vllm/releases/tag/v0.9.0, quoted in
  NVIDIA-NeMo/Guardrails#1312). CUDA 12.4 compiles for no compute capability above 9.0, so every wheel before 0.9.0
  lacks Blackwell kernels.
- TensorRT-LLM: 0.17.0 "Added support for B200" and GeForce RTX 50 under "Blackwell support" (its release notes,
  NVIDIA/TensorRT-LLM#2725); no earlier release names a Blackwell part.

- SGLang: 0.4.6 is the first wheel with a ``blackwell`` extra (its METADATA: ``extra == "blackwell"``, torch
  unpinned, beside ``torch==2.6.0`` for ``srt``); 0.4.4-0.4.5 pin ``torch==2.5.1`` and 0.4.3 ``vllm<=0.7.2``, the
  CUDA 12.4 builds vLLM's line above names; 0.4.0-0.4.2, older still, name no Blackwell part (0.4.0 asks
  ``vllm>=0.6.3.post1``; 0.4.1-0.4.2 not read) (trial 359 #1, review 360 #8). 0.4.10 starts on an RTX 5080 (the
  engine log 510).

Not checked, for want of a source read here: Blackwell Ultra (10.3) against the first release that built for it, and
AMD's gfx950 (MI355X) against vLLM's and SGLang's ROCm releases.
"""

from __future__ import annotations

from mha_cli.core.engine.release_numbers import Release
from mha_cli.core.errors import ReleaseBeforeGpuError
from mha_cli.core.targets import Target

BLACKWELL_CAPABILITY = 10.0
"""The first Blackwell compute capability (B200 10.0, B300 10.3, RTX 50 and RTX PRO 12.0, GB10 12.1)."""
FIRST_BLACKWELL_RELEASE: dict[str, tuple[Release, str]] = {
    "vllm": ((0, 9, 0, 0), "vLLM's wheels before 0.9.0 are built with CUDA 12.4, which compiles no Blackwell kernels"
                     " (0.9.0's release notes: the default wheel moved to CUDA 12.8, with its first Blackwell kernels)"),
    "trtllm": ((0, 17, 0, 0), "TensorRT-LLM added Blackwell support in 0.17.0 (its release notes: 'Added support for B200')"),
    "sglang": ((0, 4, 6, 0), "SGLang's wheels before 0.4.6 pin torch 2.5.1 or vLLM 0.7 (CUDA 12.4 builds that compile no"
                             " Blackwell kernels) or predate them (0.4.6 added its 'blackwell' extra)"),
}  # fmt: skip
"""Engine -> (the first release that runs on Blackwell, why)."""


def check_release_runs_on(engine: str, release: Release, shown: str, target: Target) -> None:
    """Refuse (exit 2) ``engine`` at ``release`` (``core.engine.flags.release_meant``: a minor alone is its latest
    patch; ``shown`` as ``--engine`` named it: ``vllm@0.8``, ``vllm-v0``) on a Blackwell ``target``, when the release
    predates the engine's first Blackwell release. A target without a compute capability is not checked."""
    first = FIRST_BLACKWELL_RELEASE.get(engine)
    capability = target.compute_capability
    if first is None or capability is None or target.vendor != "NVIDIA":
        return
    if capability < BLACKWELL_CAPABILITY or tuple(release) >= first[0]:
        return
    major, minor, patch, _ = first[0]
    since = f"{major}.{minor}" + (f".{patch}" if patch else "")
    raise ReleaseBeforeGpuError(
        f"--engine {shown} does not run on {target.id} (compute capability {capability:.1f}, Blackwell):"
        f" {first[1]}; use --engine {engine}@{since} or later"
    )
