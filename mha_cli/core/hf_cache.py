"""Hugging Face model ids (``org/name``, ``org/name@revision``) found in the local Hugging Face cache, offline.

The cache is huggingface_hub's documented layout (its guide "Manage the cache"), read here without importing it:

    <hub cache>/models--<org>--<name>/refs/<revision>             the commit a branch or tag points at
    <hub cache>/models--<org>--<name>/snapshots/<commit>/<file>   that commit's files (links into blobs/)

The hub cache is ``HF_HUB_CACHE``, else ``HUGGINGFACE_HUB_CACHE`` (its old name), else ``$HF_HOME/hub``, else
``$XDG_CACHE_HOME/huggingface/hub``, else ``~/.cache/huggingface/hub``: huggingface_hub's order. A revision is looked
up in ``refs/``, else taken as a commit; a revision that is not cached is not replaced by another snapshot (as
huggingface_hub's ``try_to_load_from_cache``). Nothing is ever fetched.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import NamedTuple

from mha_cli.core.errors import one_line

_REPO_PART = r"\w(?:[\w.-]{0,94}\w)?"
"""One part of a repo id: letters, digits, ``_``, ``-``, ``.``, at most 96, starting and ending with a letter, digit
or ``_`` (huggingface_hub's ``validate_repo_id``)."""
_HF_ID = re.compile(rf"(?P<repo>{_REPO_PART}/{_REPO_PART})(?:@(?P<revision>\w[\w.-]*(?:/\w[\w.-]*)*))?", re.ASCII)
MAX_REVISION = 96
"""The longest revision taken (a commit hash is 40 characters); a longer one is not read as an id."""
PATH_SUFFIXES = (".json", ".yaml", ".yml")
"""A name ending so is a config file's path, not a model id (``configs/llama.yaml``)."""
DOWNLOAD_TOOL = "hf download"
"""huggingface_hub's download command (``hf`` since 0.34; ``huggingface-cli`` was removed in 1.0)."""


class HfId(NamedTuple):
    """A Hugging Face model id as typed: ``repo`` (``org/name``) and the ``revision`` after ``@`` (None: main)."""

    repo: str
    revision: str | None = None

    def __str__(self) -> str:
        return self.repo if self.revision is None else f"{self.repo}@{self.revision}"

    def download_command(self, filename: str = "config.json") -> str:
        """The command that puts ``filename`` of this id into the cache."""
        revision = "" if self.revision is None else f" --revision {self.revision}"
        return f"{DOWNLOAD_TOOL} {self.repo} {filename}{revision}"


def parse_hf_id(text: str) -> HfId | None:
    """``text`` as a model id (``org/name``, optionally ``@revision``), or None when it cannot be one."""
    match = _HF_ID.fullmatch(text)
    if match is None or text.lower().endswith(PATH_SUFFIXES):
        return None
    repo, revision = match["repo"], match["revision"]
    if "--" in repo or ".." in repo or repo.endswith(".git"):
        return None
    if revision is not None and (".." in revision or len(revision) > MAX_REVISION):
        return None
    return HfId(repo, revision)


class HubCache(NamedTuple):
    """The hub cache folder and the setting that chose it, in words (``set by HF_HUB_CACHE``, ``the default; ...``)."""

    folder: Path
    chosen_by: str


def hub_cache() -> HubCache:
    """Where huggingface_hub keeps downloaded models, by its environment variables."""
    for variable in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(variable):
            return HubCache(_expanded(os.environ[variable]), f"set by {variable}")
    if os.environ.get("HF_HOME"):
        return HubCache(_expanded(os.environ["HF_HOME"]) / "hub", "set by HF_HOME")
    if os.environ.get("XDG_CACHE_HOME"):
        return HubCache(_expanded(os.environ["XDG_CACHE_HOME"]) / "huggingface" / "hub", "set by XDG_CACHE_HOME")
    return HubCache(Path("~/.cache/huggingface/hub").expanduser(), "the default; HF_HUB_CACHE or HF_HOME set another")


def _expanded(value: str) -> Path:
    return Path(os.path.expanduser(os.path.expandvars(value)))


def repo_folder(repo: str) -> str:
    """The cache folder of a model repo: ``models--meta-llama--Llama-3.1-8B``."""
    return "models--" + repo.replace("/", "--")


HELD_SHOWN = 4
"""The most cached revisions an error line names."""


class CachedFile(NamedTuple):
    """A file of a cached snapshot (``path``), or None with ``missing``: what the cache lacked, for an error line."""

    path: Path | None
    commit: str | None
    missing: str


def find_cached(hf_id: HfId, filename: str = "config.json", cache: Path | None = None) -> CachedFile:
    """``filename`` of ``hf_id``'s snapshot in the hub cache (``hub_cache()`` unless ``cache`` is given)."""
    folder = (hub_cache().folder if cache is None else cache) / repo_folder(hf_id.repo)
    revision = hf_id.revision or "main"
    name, shown_revision = one_line(folder.name, 100), one_line(revision, 60)
    if not is_folder(folder):
        return CachedFile(None, None, f"no {name}")
    commit = _ref(folder / "refs" / revision) or revision
    snapshot = folder / "snapshots" / commit
    if not is_folder(snapshot):
        cached = sorted(_names(folder / "refs")) or [p.name[:8] for p in _entries(folder / "snapshots")]
        more = f" and {len(cached) - HELD_SHOWN} more" if len(cached) > HELD_SHOWN else ""
        listed = ", ".join(one_line(ref, 40) for ref in cached[:HELD_SHOWN])
        held = f" (it holds {listed}{more})" if cached else ""
        return CachedFile(None, None, f"{name} has no snapshot of {shown_revision}{held}")
    path = snapshot / filename
    if not path.is_file():
        return CachedFile(None, commit, f"the snapshot {commit[:8]} of {shown_revision} has no {filename}")
    return CachedFile(path, commit, "")


def is_folder(path: Path) -> bool:
    """Whether ``path`` is a folder (through links); False also when it cannot be looked at (a name too long, no
    permission)."""
    try:
        return stat.S_ISDIR(path.stat().st_mode)
    except (OSError, ValueError):
        return False


def _ref(path: Path) -> str | None:
    """The commit a ``refs/`` file names, or None when there is no such ref."""
    try:
        return path.read_text(encoding="ascii").strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def _entries(folder: Path) -> list[Path]:
    try:
        return [entry for entry in folder.iterdir() if not entry.name.startswith(".")]
    except OSError:
        return []


def _names(refs: Path) -> list[str]:
    """The branch and tag names in a ``refs/`` folder (``main``, ``refs/pr/1``)."""
    return [str(path.relative_to(refs)) for path in refs.rglob("*") if path.is_file()] if refs.is_dir() else []
