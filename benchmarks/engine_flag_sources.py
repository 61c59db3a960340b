"""Fetch the Python sources of vLLM and SGLang releases, for ``benchmarks/engine_flag_history.py`` to read.

    python benchmarks/engine_flag_sources.py --cache /tmp/engine_src vllm 0.8.0 0.11.1 ...
    python benchmarks/engine_flag_sources.py --cache /tmp/engine_src sglang 0.4.3 ...

Each release's wheel comes from PyPI through ``pip download`` (no dependencies, a Linux x86-64 CPython 3.11 wheel);
only its ``.py`` files and its ``entry_points.txt`` are kept, under ``CACHE/ENGINE-VERSION/``, and the wheel is
deleted. A release already there is skipped. Needs the network (a developer's tool, not part of ``mha``).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

PLATFORMS = ("manylinux1_x86_64", "manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_24_x86_64",
             "manylinux_2_28_x86_64", "manylinux_2_31_x86_64", "manylinux_2_34_x86_64", "manylinux_2_35_x86_64")  # fmt: skip
PACKAGES = {"vllm": "vllm", "sglang": "sglang"}


def fetch(engine: str, version: str, cache: Path) -> str:
    """Download and unpack ``engine``==``version`` into ``cache``; returns what happened, in a word or two."""
    out = cache / f"{engine}-{version}"
    if out.exists():
        return "cached"
    with tempfile.TemporaryDirectory() as tmp:
        platforms = [word for p in PLATFORMS for word in ("--platform", p)]
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version",
                   "3.11", "--implementation", "cp", *platforms, "-d", tmp, f"{PACKAGES[engine]}=={version}"]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True)
        wheels = list(Path(tmp).glob("*.whl"))
        if done.returncode or not wheels:
            return "no wheel: " + (done.stderr.strip().splitlines() or ["?"])[-1][:120]
        staging = cache / f".{engine}-{version}"
        with zipfile.ZipFile(wheels[0]) as wheel:
            for name in wheel.namelist():
                if name.endswith(".py") or name.endswith("entry_points.txt"):
                    wheel.extract(name, staging)
        staging.rename(out)
    return "fetched"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=Path("/tmp/engine_src"))
    parser.add_argument("engine", choices=sorted(PACKAGES))
    parser.add_argument("versions", nargs="+")
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    for version in args.versions:
        print(f"{args.engine} {version}: {fetch(args.engine, version, args.cache)}", flush=True)
    shutil.rmtree(args.cache / "__pycache__", ignore_errors=True)


if __name__ == "__main__":
    main()
