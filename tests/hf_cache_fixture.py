"""A Hugging Face hub cache built by hand in a test folder, laid out as huggingface_hub lays it out: files stored once
in ``blobs/`` under their hash, each snapshot a folder of links to them, each branch or tag a file in ``refs/``
holding a commit hash (no newline)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path


def commit_of(text: str) -> str:
    """A 40-hex-digit commit hash, fixed by ``text``."""
    return hashlib.sha1(text.encode()).hexdigest()


def add_snapshot(cache: Path, repo: str, files: dict[str, dict | bytes], *, refs: tuple[str, ...] = ("main",)) -> Path:
    """``files`` (a dict is written as JSON) as one commit of model ``repo``, pointed at by each of ``refs``; returns
    the snapshot folder."""
    folder = cache / ("models--" + repo.replace("/", "--"))
    contents = {name: json.dumps(value).encode() if isinstance(value, dict) else value for name, value in files.items()}
    commit = commit_of(repo + "".join(f"{name}={data!r}" for name, data in sorted(contents.items())))
    snapshot = folder / "snapshots" / commit
    snapshot.mkdir(parents=True, exist_ok=True)
    (folder / "blobs").mkdir(exist_ok=True)
    for name, data in contents.items():
        blob = folder / "blobs" / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        (snapshot / name).symlink_to(Path("..") / ".." / "blobs" / blob.name)
    for ref in refs:
        path = folder / "refs" / ref
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(commit)
    return snapshot
