"""Which device to run on, its name, and waiting for it: shared by bench, verify and experiments."""

from __future__ import annotations

import platform

import torch

from mha_cli.core.errors import BadInputError


def resolve_device(device: str) -> torch.device:
    """``auto`` (cuda when present, else cpu), ``cuda``, ``cuda:N`` or ``cpu``."""
    name = device.strip().lower()
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" or name.startswith("cuda:"):
        if not torch.cuda.is_available():
            raise BadInputError("--device cuda asked for but no CUDA device is visible: use --device cpu or auto")
        return torch.device(name)
    if name == "cpu":
        return torch.device("cpu")
    raise BadInputError(f"unknown device {device!r}: use auto, cuda or cpu")


def device_name(device: torch.device) -> str:
    """'NVIDIA H200' on CUDA; the processor's name (or architecture) on CPU."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return platform.processor() or platform.machine() or "cpu"


def synchronize(device: torch.device) -> None:
    """Wait for queued kernels: timings are taken between synchronisations."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def is_out_of_memory(exc: BaseException) -> bool:
    """A failed allocation: CUDA's ``OutOfMemoryError``, the CPU allocator's RuntimeError, Python's MemoryError."""
    if isinstance(exc, (torch.OutOfMemoryError, MemoryError)):
        return True
    return isinstance(exc, RuntimeError) and "can't allocate memory" in str(exc)
