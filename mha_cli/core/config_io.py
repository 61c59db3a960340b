"""Reading and writing config files: YAML loaded safely, JSON accepted, writes atomic.

A write never leaves a half-written file (it goes to a temporary file in the same folder that is
then renamed over the target) and never replaces an existing file unless ``force`` is set.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mha_cli.core.errors import BadInputError
from mha_cli.core.schemas import MhaConfig
from mha_cli.core.validation import describe_validation_error

MAX_CONFIG_BYTES = 8 * 1024 * 1024


def read_mapping(path: Path) -> dict[str, Any]:
    """Parse a YAML or JSON file whose top level is a mapping."""
    if not path.exists():
        raise BadInputError(f"{path}: no such file")
    if not path.is_file():
        raise BadInputError(f"{path}: not a file")
    if path.stat().st_size > MAX_CONFIG_BYTES:
        raise BadInputError(f"{path}: larger than {MAX_CONFIG_BYTES // 2**20} MiB; is this a config file?")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInputError(f"{path}: cannot read it as UTF-8 text ({exc.__class__.__name__})") from exc
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise BadInputError(f"{path}: malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from exc
    else:
        import yaml  # here, not at import: preset and --json runs never pay for it

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            problem = getattr(exc, "problem", None) or "cannot parse"
            raise BadInputError(f"{path}: malformed YAML{where}: {problem}") from exc
    if not isinstance(data, dict):
        kind = "empty" if data is None else f"a {type(data).__name__}"
        raise BadInputError(f"{path}: expected a mapping of fields at the top level, found {kind}")
    return data


def parse_config(data: dict[str, Any], origin: str) -> MhaConfig:
    """Validate a mapping as our config file; errors name the file and every bad field."""
    try:
        return MhaConfig.model_validate(data)
    except ValidationError as exc:
        raise BadInputError(f"{origin}: {describe_validation_error(exc)}") from exc


def config_to_yaml(config: MhaConfig, header: str | None = None) -> str:
    """The config as YAML, fields in schema order, ``None`` fields (and MLA's cache mode for other
    variants; for MLA, the n_kv_heads and head_dim the schema derives from the latent) left out."""
    data = config.model_dump(mode="json", exclude_none=True)
    if config.model.mla is None:
        data["deployment"].pop("mla_cache", None)
    else:  # MLA caches one latent: no per-head KV count or width to state (the schema derives them on reading)
        data["model"].pop("n_kv_heads", None)
        data["model"].pop("head_dim", None)
    import yaml

    body = yaml.safe_dump(data, sort_keys=False, width=100)
    if header:
        body = "".join(f"# {line}\n" for line in header.splitlines()) + body
    return body


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text_atomic(path: Path, text: str, *, force: bool = False) -> None:
    """Write ``text`` (UTF-8) to ``path`` whole or not at all; refuse to overwrite without ``force``."""
    write_bytes_atomic(path, text.encode("utf-8"), force=force)


def write_bytes_atomic(path: Path, data: bytes, *, force: bool = False) -> None:
    """Write ``data`` to ``path`` whole or not at all; refuse to overwrite without ``force``."""
    if path.is_dir():
        raise BadInputError(f"{path} is a folder: give a file name to write")
    if path.exists() and not force:
        raise BadInputError(f"{path} exists: pass --force to overwrite it")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise BadInputError(f"{folder}: no such folder to write {path.name} into")
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp_name, 0o666 & ~_current_umask())  # mkstemp makes 0600; give the usual mode
        if force:
            os.replace(tmp_name, path)
        else:
            _link_without_overwriting(tmp_name, path)
    finally:
        Path(tmp_name).unlink(missing_ok=True)


def _link_without_overwriting(tmp_name: str, path: Path) -> None:
    """Put the finished file at ``path`` only if nothing is there, even if one appeared meanwhile."""
    try:
        os.link(tmp_name, path)  # fails if path exists: no window between a check and the write
    except FileExistsError:
        raise BadInputError(f"{path} exists: pass --force to overwrite it") from None
    except OSError:  # a file system without hard links: check, then rename
        if path.exists():
            raise BadInputError(f"{path} exists: pass --force to overwrite it") from None
        os.replace(tmp_name, path)
