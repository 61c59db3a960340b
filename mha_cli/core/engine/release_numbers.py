"""Engine release numbers as PyPI orders them (``0.4.4.post1`` after ``0.4.4``, ``1.0.0rc4`` before ``1.0.0``), and
the engines' display names: the leaf that ``core.engine.flags``, ``generations``' release checks and the release
tables share. Pure Python.
"""

from __future__ import annotations

import re

ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}
"""Each engine's name as its project writes it, by ``--engine`` name."""

Release = tuple[int, int, int, int]
"""(major, minor, patch, post) of a release: ``0.4.4.post1`` is (0, 4, 4, 1); ``1.0.0rc4`` (1, 0, 0, -96)."""
LATEST = 1 << 20
"""A patch (or minor) number after every real one: ``0.10`` alone is (0, 10, LATEST, 0), its latest patch."""

_RELEASE = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+))?(?:\.post(\d+)|\.(\d+)|rc(\d+))?", re.IGNORECASE)


class WrittenRelease(tuple):
    """A release's key that keeps the number as it was written, to show it so: it compares and hashes as the plain
    key, so ``0.10.1.1`` (vLLM's) and ``0.10.1.post1`` (SGLang's form) share a key but each is shown as written."""

    written: str

    def __new__(cls, key: Release, written: str) -> WrittenRelease:
        made = super().__new__(cls, key)
        made.written = written
        return made


def release_key(text: str) -> Release:
    """``0.10.2`` as (0, 10, 2, 0); ``0.10`` as (0, 10, LATEST, 0); a pre-release before its release. The number as
    written (less a leading ``v``) goes with it, for ``format_release``."""
    match = _RELEASE.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"not a release number: {text!r}")
    major, minor, patch, post, fourth, candidate = match.groups()
    written = text.strip().removeprefix("v").removeprefix("V")
    if patch is None:
        return WrittenRelease((int(major), int(minor), LATEST, 0), written)  # type: ignore[return-value]
    extra = int(post or fourth or 0) if candidate is None else int(candidate) - 100
    return WrittenRelease((int(major), int(minor), int(patch), extra), written)  # type: ignore[return-value]
