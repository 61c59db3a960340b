"""Where profiles live and how ``--profile NAME|FILE`` finds one. Pure Python.

``mha calibrate`` writes ``NAME.json`` into the user's data directory (``platformdirs``: on Linux
``~/.local/share/mha/profiles``; ``MHA_DATA_DIR`` replaces ``~/.local/share/mha``, as tests do). ``--profile``
takes a name from there, a path to a profile file, or a shipped prior by its name (``h200-prior``). Without it,
a command that predicts uses, in order: the newest calibrated profile of the device it runs on (``verify``), or
the target's prior (``plan``, ``recommend``, ``kv``).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from pydantic import ValidationError

from mha_cli.core.cost.profile import FITTED_SOURCE, DeviceProfile
from mha_cli.core.errors import BadInputError, looking_at_input, shown, shown_path

DATA_DIR_ENV = "MHA_DATA_DIR"
PROFILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
MAX_PROFILE_BYTES = 1 << 20
"""A profile is a few KiB; a larger file is refused before it is parsed."""


def data_dir() -> Path:
    """The user's data directory for mha (not created here)."""
    override = os.environ.get(DATA_DIR_ENV)
    if override:
        return Path(override)
    from platformdirs import user_data_dir

    return Path(user_data_dir("mha", appauthor=False))


def profiles_dir() -> Path:
    return data_dir() / "profiles"


def check_profile_name(name: str) -> str:
    if not PROFILE_NAME.fullmatch(name):
        raise BadInputError(
            f"profile name {shown(name)} must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )
    if name.endswith(".json"):  # --profile reads such a name as a file path (``load_profile``, case as typed)
        stem = name[: -len(".json")]  # never empty: a name starts with a letter or digit
        raise BadInputError(
            f"profile name {shown(name)} ends in .json, which --profile reads as a file path: name it {shown(stem)}"
        )
    return name


def profile_path(name: str) -> Path:
    return profiles_dir() / f"{check_profile_name(name)}.json"


class NonFiniteError(ValueError):
    """A profile's ``Infinity``, ``-Infinity`` or ``NaN``."""


def _no_constant(name: str) -> float:
    """``json.loads``' ``parse_constant``: the non-finite numbers JSON leaves out and Python writes, refused."""
    raise NonFiniteError(name)


def read_profile(path: Path) -> DeviceProfile:
    """The profile in ``path``; one line saying what is wrong otherwise."""
    where = shown_path(path)
    with looking_at_input(path):
        if path.is_dir():
            raise BadInputError(f"{where} is a folder: give a profile file or a profile name")
    try:
        if path.stat().st_size > MAX_PROFILE_BYTES:
            raise BadInputError(f"{where} is larger than a profile ({MAX_PROFILE_BYTES // 1024} KiB at most)")
        data = json.loads(path.read_text(encoding="utf-8"), parse_constant=_no_constant)
    except FileNotFoundError:
        raise BadInputError(f"{where}: no such profile file") from None
    except NonFiniteError as exc:  # Python's json writes and reads these; a rate of them prices every time as NaN
        raise BadInputError(
            f"{where} is not a valid profile: {exc} is not a measured figure (rewrite it with `mha calibrate`)"
        ) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadInputError(f"{where} is not a profile JSON file ({exc.__class__.__name__})") from None
    try:
        return DeviceProfile.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "the file"
        raise BadInputError(
            f"{where} is not a valid profile: {field}: {first['msg']} (rewrite it with `mha calibrate`)"
        ) from None


def calibrated_profiles() -> list[tuple[Path, DeviceProfile]]:
    """Every readable profile in the data directory, newest first (unreadable files are skipped)."""
    folder = profiles_dir()
    if not folder.is_dir():
        return []
    found = []
    for path in sorted(folder.glob("*.json")):
        try:
            found.append((path, read_profile(path)))
        except BadInputError:
            continue
    return sorted(found, key=lambda item: item[1].created or "", reverse=True)


def find_calibrated(device: str, device_name: str, dtype: str) -> DeviceProfile | None:
    """The newest calibrated profile measured on this device in this dtype, if any."""
    for _, profile in calibrated_profiles():
        if (profile.device, profile.device_name, profile.dtype) == (device, device_name, dtype):
            return profile
    return None


def newest_cpu_profile(*, measured_only: bool = False) -> DeviceProfile | None:
    """The newest profile of a CPU in the data directory (``mha calibrate --device cpu`` or ``--from``);
    ``measured_only``: the newest ``mha calibrate --device cpu`` measured, never one ``--from`` fitted."""
    for _, profile in calibrated_profiles():
        if profile.device != "cpu":
            continue
        if not measured_only or (profile.kind == "calibrated" and not profile.source.startswith(FITTED_SOURCE)):
            return profile
    return None


def cpu_profile() -> DeviceProfile:
    """``--target cpu``'s profile: the newest of this CPU; one line saying how to make one when there is none."""
    profile = newest_cpu_profile()
    if profile is None:
        raise BadInputError(
            "--target cpu needs a profile of this machine: run `mha calibrate --device cpu`, or `mha calibrate --from"
            " RESULTS.json ...` on benchmark results of a server on it, or pass --profile"
        )
    return profile


def profile_stand_in(profile: DeviceProfile, device_id: str, device_name: str) -> str | None:
    """The line saying ``profile`` was measured on another device than the one priced (``device_id``; ``cpu``: this
    machine), whose rates then stand in; None where it is that device's (plan, kv and recommend say it alike)."""
    if device_id == "cpu":
        here = "this CPU"
        other = profile.device != "cpu"
    else:
        here = device_name
        other = profile.target_id not in (None, device_id) or profile.device != "cuda"
    return (
        f"profile {profile.name} was measured on {profile.device_name}, not {here}: its rates stand in"
        if other
        else None
    )


def load_profile(
    spec: str, weight_dtype: str = "bf16", release: str | None = None, generation: str | None = None
) -> DeviceProfile:
    """``--profile``: a file path (anything with a ``/`` or ending ``.json``), a calibrated name, ``ID-prior``
    (the target's prior for ``weight_dtype``: fp8 weights on a GPU with fp8 tensor cores use their throughput), or
    ``ID-prior@GENERATION``, the name a plan prints for an engine generation's prior (``h100-sxm-prior@sglang-0.5``),
    built as that plan built it (``release``: the engine release typed, as ``prior_profile`` takes it). A plain
    ``ID-prior`` beside ``--engine`` (``generation``) is that engine generation's prior, as the plan without
    ``--profile`` prices: naming the default must not change it."""
    if "/" in spec or spec.endswith(".json"):
        return read_profile(Path(spec))
    if generation is not None and spec.endswith("-prior") and not profile_path(spec).exists():
        spec = f"{spec}@{generation}"
    base, at, generation = spec.partition("@")
    if at and base.endswith("-prior"):
        from mha_cli.core.cost.priors import prior_profile
        from mha_cli.core.engine.generations import BY_ID
        from mha_cli.core.targets import resolve_target

        if generation.lower() not in BY_ID:
            raise BadInputError(
                f"profile {shown(spec)}: {shown(generation)} is not an engine generation (one of {', '.join(BY_ID)})"
            )
        target = resolve_target(base.removesuffix("-prior")).target
        return prior_profile(target, weight_dtype, generation=generation.lower(), release=release)
    path = profile_path(spec)
    if path.exists():
        return read_profile(path)
    if spec.endswith("-prior"):
        from mha_cli.core.cost.priors import prior_profile
        from mha_cli.core.targets import resolve_target

        return prior_profile(resolve_target(spec.removesuffix("-prior")).target, weight_dtype)
    names = [p.stem for p, _ in calibrated_profiles()]
    known = f"calibrated here: {', '.join(names)}" if names else "none calibrated yet: run `mha calibrate`"
    raise BadInputError(f"no profile named {shown(spec)} ({known}; or give a file, or a target's prior: h200-prior)")
