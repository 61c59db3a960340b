"""Which device profile a torch command predicts with (``verify``, ``bench``): asked, calibrated here, or a prior.

``--profile`` when given; else the newest profile ``mha calibrate`` measured on this device in this dtype; else, on
a GPU the targets database knows, its shipped prior. On a CPU without a calibration there is none, and the note
says which command makes one.
"""

from __future__ import annotations

import torch

from mha_cli.core.cost.priors import prior_profile
from mha_cli.core.cost.profile import DeviceProfile
from mha_cli.core.cost.store import find_calibrated, load_profile
from mha_cli.core.targets import match_target
from mha_cli.nn.device import device_name


def active_profile(spec: str | None, device: torch.device, dtype: str) -> tuple[DeviceProfile | None, str]:
    """(the profile verify predicts with, or None; a note on how it was chosen or how to get one)."""
    if spec is not None:
        named = load_profile(spec)
        runs = f"{dtype} on {device.type}"
        if f"{named.dtype} on {named.device}" != runs:  # trial 303 #3: a bf16 profile priced an fp32 run unsaid
            return named, f"--profile {spec}, a profile of {named.dtype} on {named.device}, for this run in {runs}"
        return named, f"--profile {spec}"
    name = device_name(device)
    calibrated = find_calibrated(device.type, name, dtype)
    if calibrated is not None:
        return calibrated, f"calibrated on this {device.type} ({calibrated.name}, {calibrated.created})"
    if device.type == "cuda":
        target = match_target(name)
        if target is not None:
            return prior_profile(target, dtype), f"the shipped prior of {target.id} (no calibration of {name} found)"
    command = f"mha calibrate --device {device.type} --dtype {dtype}"
    return None, f"no profile of this {device.type} in {dtype}: run `{command}` for predicted times"
