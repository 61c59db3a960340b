"""Releases that never existed: one typed inside a release series known to have ended (``--engine trtllm@0.99``,
``vllm@0.10.9``) is refused, naming the series' last release. A release past the newest read is another matter
(``core.engine.releases_read``: priced as the newest read, with a note); one older than an engine's first generation
is refused by ``core.engine.generations.generation_of``. Pure Python.

Where the series are known:

- vLLM and SGLang: every release read (``data/engine_architectures.json`` ``releases_read``, every PyPI release of
  each engine when the table was built; their last patch of each minor series matches PyPI's release history). A
  minor series has ended when a later minor was read: its last release read is its last release.
- TensorRT-LLM: its 0.x releases on PyPI (https://pypi.org/project/tensorrt-llm/#history): 0.5.0 to 0.21.0
  (2025-08-04), then 1.0.0 (2025-09-24); the 1.x series is open.
"""

from __future__ import annotations

from mha_cli.core.engine.release_numbers import ENGINE_NAMES, LATEST, release_key
from mha_cli.core.errors import BadInputError

TRTLLM_0X_RELEASES = (
    "0.5.0", "0.5.0.post1", "0.6.1", "0.7.0", "0.7.1", "0.8.0", "0.9.0", "0.10.0", "0.11.0", "0.12.0", "0.13.0",
    "0.14.0", "0.15.0", "0.16.0", "0.17.0", "0.17.0.post1", "0.18.0", "0.18.1", "0.18.2", "0.19.0", "0.20.0", "0.21.0",
    "1.0.0",
)  # fmt: skip
"""TensorRT-LLM's 0.x releases on PyPI (pre-releases and dev builds left out), and the 1.x series' first: 0.x ended at
0.21.0. The 1.x releases after 1.0.0 are not listed (that series is open: ``releases_read`` prices them)."""


def releases_known(engine: str) -> tuple[str, ...]:
    """Every release of ``engine`` known here, oldest first (empty for an engine not followed)."""
    if engine == "trtllm":
        return TRTLLM_0X_RELEASES
    from mha_cli.core.engine.architectures_table import releases_read

    return tuple(releases_read(engine))


def refuse_release_past_its_series(engine: str, typed: str) -> None:
    """``BadInputError`` (one line, exit 2) when release ``typed`` of ``engine`` falls after the last release of a
    series that has ended: its major (TensorRT-LLM 0.x) or, with a patch written, its minor (vLLM 0.10 ended at
    0.10.2). A minor alone (``vllm@0.10``) means that series' last release and is never refused here."""
    known = releases_known(engine)
    if not known:
        return
    key = release_key(typed)
    keys = [release_key(release) for release in known]
    name = ENGINE_NAMES.get(engine, engine)
    same_major = [k for k in keys if k[0] == key[0]]
    if same_major and any(k[0] > key[0] for k in keys) and key[:2] > max(same_major)[:2]:
        raise BadInputError(
            f"{name} {typed} was never released: its {key[0]}.x series ended at {max(same_major).written}; give a"
            f" release up to it, or --engine {engine} for the latest"
        )
    if key[2] == LATEST:  # a minor alone: that series' last release
        return
    same_minor = [k for k in keys if k[:2] == key[:2]]
    if same_minor and any(k[:2] > key[:2] for k in keys) and key > max(same_minor):
        raise BadInputError(
            f"{name} {typed} was never released: the {key[0]}.{key[1]} series ended at {max(same_minor).written};"
            f" give --engine {engine}@{max(same_minor).written} or a later series"
        )
    _refuse_release_between_known(engine, typed, key, keys)


def _refuse_release_between_known(engine: str, typed: str, key: tuple, keys: list) -> None:
    """A final release (not a pre-release) between the oldest and the newest known that is not among them
    (``vllm@0.10.1.2``, ``sglang@0.5.8.post9``) was never released: refused, naming the releases on either side and
    offering the nearer one of its own minor series, rather than launch lines written for it."""
    if key[3] < 0 or not min(keys) < key < max(keys) or key in keys:
        return
    before, after = max(k for k in keys if k < key), min(k for k in keys if k > key)
    offered = before if before[:2] == key[:2] else after
    raise BadInputError(
        f"{ENGINE_NAMES.get(engine, engine)} {typed} was never released ({before.written}, then {after.written}):"
        f" give --engine {engine}@{offered.written}, or another release"
    )
