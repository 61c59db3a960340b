"""Reading and writing config files: YAML loaded safely (and bounded), JSON accepted, writes atomic.

A write never leaves a half-written file (it goes to a temporary file in the same folder that is
then renamed over the target) and never replaces an existing file unless ``force`` is set.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mha_cli.core.config_layout import FLAT, as_flat_paths, checked_layout, unknown_field_hint
from mha_cli.core.errors import (
    BadInputError,
    OutputError,
    one_line,
    os_reason,
    shown_path,
    value_kind,
)
from mha_cli.core.safe_yaml import safe_loader
from mha_cli.core.schemas import MhaConfig
from mha_cli.core.validation import describe_validation_error

MAX_CONFIG_BYTES = 8 * 1024 * 1024
MAX_CONFIG_VALUES = 1_000_000
"""The most values (mappings, lists, scalars) a config may hold once YAML aliases are expanded: a real config
holds a few thousand; an alias bomb (nested anchors, each used many times) holds billions in a few lines."""


def read_mapping(path: Path) -> dict[str, Any]:
    """Parse one of mha's own YAML or JSON files whose top level is a mapping (a UTF-8 byte-order mark is allowed);
    a key an object gives twice is refused in JSON as in YAML (``read_mapping_noting_duplicates``).

    Bounded before any work: the file's size (``MAX_CONFIG_BYTES``), then its values with aliases expanded
    (``MAX_CONFIG_VALUES``, counted without expanding them). Every failure is a ``BadInputError``.
    """
    data, twice = read_mapping_noting_duplicates(path)
    if twice is not None:
        raise duplicate_key_refusal(path, twice)
    return data


def duplicate_key_refusal(path: Path, key: str) -> BadInputError:
    """The line refusing a JSON file's key given twice in one object (mha's own files)."""
    return BadInputError(f"{shown_path(path)}: malformed JSON: key {key!r} given twice in one object: keep one")


def read_mapping_noting_duplicates(path: Path) -> tuple[dict[str, Any], str | None]:
    """``read_mapping``'s mapping and, for a JSON file, its first key given twice in one object (None: none). JSON
    keeps the last (Python's ``json``, as transformers reads a config.json): the caller decides whether a duplicate
    is an error (mha's own files: ``duplicate_key_refusal``) or a note (Hugging Face's). YAML refuses one while
    parsing."""
    where = shown_path(path)
    text = _read_text(path, where)
    twice = None
    if path.suffix.lower() == ".json":
        data, twice = _parse_json(text, where)
    else:
        data = _parse_yaml(text, where)
    if not isinstance(data, dict):
        kind = "empty" if data is None else value_kind(data)
        raise BadInputError(f"{where}: expected a mapping of fields at the top level, found {kind}")
    _check_value_count(data, where)
    return data, twice


def _read_text(path: Path, where: str) -> str:
    return read_text_bounded(path, where, limit=MAX_CONFIG_BYTES, what="a config file")


def read_text_bounded(path: Path, where: str, *, limit: int, what: str) -> str:
    """A user's file as UTF-8 text, refused in one line (``BadInputError``) when it is missing, not a regular file
    (a folder, a FIFO that would block), over ``limit`` bytes, unreadable or not UTF-8; ``what`` names what was
    expected (``a config file``)."""
    try:
        info = path.stat()
    except FileNotFoundError:
        raise BadInputError(f"{where}: no such file") from None
    except (OSError, ValueError) as exc:  # name too long, a folder without search permission, a NUL in the name
        reason = os_reason(exc) if isinstance(exc, OSError) else "not a valid file name"
        raise BadInputError(f"{where}: cannot open it ({reason})") from None
    if not stat.S_ISREG(info.st_mode):  # a device (/dev/null), a FIFO, a socket: trial 334 #13 asked what to give
        raise BadInputError(f"{where}: not a file (a device, FIFO or socket): give the path of {what}")
    if info.st_size > limit:
        raise BadInputError(f"{where}: larger than {limit // 2**20} MiB; is this {what}?")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise BadInputError(f"{where}: cannot read it ({os_reason(exc)})") from None
    if len(raw) > limit:  # grew since stat, or a file whose size stat does not report
        raise BadInputError(f"{where}: larger than {limit // 2**20} MiB; is this {what}?")
    try:
        return raw.decode("utf-8-sig")  # an editor's byte-order mark is not part of the text
    except UnicodeDecodeError as exc:
        raise BadInputError(
            f"{where}: not UTF-8 text (byte {exc.start:,} cannot be decoded): save it as UTF-8"
        ) from None


def _parse_json(text: str, where: str) -> tuple[Any, str | None]:
    """The document and the first key an object gives twice (None: none); the last value of a repeated key kept."""
    import json  # here, not at the top: the commands that read no JSON config never import it

    repeated: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        obj: dict[str, Any] = {}
        for key, value in items:
            if key in obj and not repeated:
                repeated.append(key)
            obj[key] = value
        return obj

    try:
        return json.loads(text, object_pairs_hook=pairs), (repeated[0] if repeated else None)
    except json.JSONDecodeError as exc:
        raise BadInputError(f"{where}: malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise BadInputError(f"{where}: nested too deeply to be a config file") from None
    except ValueError as exc:  # an integer of more than 4,300 digits
        raise BadInputError(f"{where}: {_unreadable_value(exc)}") from None


def _tab_at(text: str, line: int, column: int) -> bool:
    """Whether the character at ``line``, ``column`` (0-based) of ``text`` is a tab (trial 319 #9: a tab opening a
    line was reported as "found character that cannot start any token")."""
    lines = text.splitlines()
    return line < len(lines) and column < len(lines[line]) and lines[line][column] == "\t"


def _parse_yaml(text: str, where: str) -> Any:
    import yaml  # here, not at import: preset and --json runs never pay for it

    loader = _config_loader(yaml, safe_loader())  # libyaml: a large file fast
    try:
        _count_yaml_values(yaml, yaml.parse(text, Loader=loader), where)  # stops at the bound, before building
        return yaml.load(text, Loader=loader)  # a safe loader (C or pure Python)
    except yaml.reader.ReaderError as exc:  # a control character: no mark, a position (trial 334 #13)
        line = text.count("\n", 0, exc.position) + 1
        column = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        code = exc.character if isinstance(exc.character, int) else ord(exc.character)
        raise BadInputError(
            f"{where}: malformed YAML at line {line}, column {column}: character U+{code:04X} is not allowed in YAML"
            " (a control character): delete it"
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "cannot parse"
        if mark and _tab_at(text, mark.line, mark.column):  # PyYAML's words for a tab vary with where it stands
            problem = "a tab; YAML indents with spaces"
        raise BadInputError(f"{where}: malformed YAML{at}: {one_line(problem, 80)}") from None
    except RecursionError:
        raise BadInputError(f"{where}: nested too deeply to be a config file") from None
    except (ValueError, OverflowError, TypeError) as exc:  # a bad date (2001-13-01), `!!int abc`, 4,301 digits
        raise BadInputError(f"{where}: {_unreadable_value(exc)}") from None


_EXPONENT_FLOAT = re.compile(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][-+]?[0-9]+$")
"""A number with an exponent and no dot, ``1e-6``: a float in YAML 1.2 and JSON, a string to PyYAML (YAML 1.1)."""


_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_PLAIN_INT = re.compile(r"^(?:[-+]?0b[0-1_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+)$")
"""PyYAML's integers less YAML 1.1's octal (``010`` is 8) and base-60 (``1:00`` is 60) forms, which a hand-edited
config file means as neither (trial 387 #2): those stay strings, which a count refuses in one line and a token count
(``seq_len``, which parses text: ``8k``) reads as written, ``010`` as 10."""
_PLAIN_FLOAT = re.compile(
    r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)
"""PyYAML's floats less the base-60 form (``1:30.5``)."""


def _config_loader(yaml: Any, base: type) -> type:
    """``base``, a safe loader, reading ``1e-6`` as the float it is (config.json's ``rms_norm_eps: 1e-06`` copied
    into a config file would otherwise be refused as a string), ``010`` and ``1:00`` as the strings they are, not
    YAML 1.1's octal 8 and base-60 60 (``_PLAIN_INT``), and refusing a key a mapping gives twice, which PyYAML would
    silently settle for the last (YAML 1.2, 3.2.1.1: "the keys of a mapping must be unique")."""

    class Loader(base):  # type: ignore[valid-type, misc]
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            _refuse_duplicate_keys(self, yaml, node)
            return super().construct_mapping(node, deep=deep)

    Loader.yaml_implicit_resolvers = {  # a copy: the base loader's own resolvers stay YAML 1.1's
        first: [(tag, regex) for tag, regex in resolvers if tag not in (_INT, _FLOAT)]
        for first, resolvers in base.yaml_implicit_resolvers.items()
    }
    Loader.add_implicit_resolver(_INT, _PLAIN_INT, list("-+0123456789"))
    Loader.add_implicit_resolver(_FLOAT, _PLAIN_FLOAT, list("-+0123456789."))
    Loader.add_implicit_resolver(_FLOAT, _EXPONENT_FLOAT, list("-+0123456789."))
    return Loader


def _refuse_duplicate_keys(loader: Any, yaml: Any, node: Any) -> None:
    """A ``ConstructorError`` at the second of two equal keys written in one mapping; a key a merge (``<<: *base``)
    brings in may be overridden, as YAML's merge key allows."""
    if not isinstance(node, yaml.MappingNode):
        return
    seen: dict[Any, Any] = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(key_node, yaml.ScalarNode):
            continue
        key = loader.construct_object(key_node)
        try:
            first = seen.setdefault(key, key_node.start_mark)
        except TypeError:  # an unhashable key: the constructor refuses it
            continue
        if first is not key_node.start_mark:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} given twice (first at line {first.line + 1}): keep one", key_node.start_mark
            )


def _count_yaml_values(yaml: Any, events: Any, where: str) -> None:
    """Count the document's values as the parser reads them, aliases expanded by the size of what they name, and
    stop at ``MAX_CONFIG_VALUES`` before anything is built (1.8 million plain values are refused at the millionth,
    not after seconds of building them)."""
    values = 0
    aliases = False
    anchored: dict[str, int] = {}
    open_counts: list[tuple[int, str | None]] = []  # (values counted when the collection opened, its anchor)
    for event in events:
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            open_counts.append((values, event.anchor))
            values += 1
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            start, anchor = open_counts.pop()
            if anchor is not None:
                anchored[anchor] = values - start
        elif isinstance(event, yaml.ScalarEvent):
            values += 1
            if event.anchor is not None:
                anchored[event.anchor] = 1
        elif isinstance(event, yaml.AliasEvent):
            aliases = True
            if event.anchor not in anchored:  # still open: the alias is inside what it names
                raise BadInputError(f"{where}: a YAML alias refers to a value that contains it; remove the cycle")
            values += anchored[event.anchor]
        if values > MAX_CONFIG_VALUES:
            how = (
                "once its YAML aliases are expanded; write the values out instead of nesting aliases"
                if aliases
                else ("(a config file holds a few thousand): is this a config file?")
            )
            raise BadInputError(f"{where}: holds more than {MAX_CONFIG_VALUES:,} values {how}")


def _unreadable_value(exc: Exception) -> str:
    """What a value the parser could not convert was, without quoting it."""
    if "integer string conversion" in str(exc):
        return "an integer with more than 4,300 digits: no field takes a number that large"
    return f"a value cannot be read ({one_line(str(exc), 60)}): check dates, numbers and explicit !!tags"


def _check_value_count(data: Any, where: str) -> None:
    """Refuse a document whose aliases expand past ``MAX_CONFIG_VALUES`` values, or refer to themselves.

    Each list and mapping is visited once (depth first, without recursion), its expanded size summed from
    its children's, so a nine-level alias bomb is refused after a few dozen steps."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[Any, bool]] = [(data, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        children = [*node.keys(), *node.values()] if isinstance(node, dict) else node
        if children_done:
            open_nodes.discard(key)
            sizes[key] = 1 + sum(sizes[id(c)] if isinstance(c, (dict, list)) else 1 for c in children)
            if sizes[key] > MAX_CONFIG_VALUES:
                raise BadInputError(
                    f"{where}: holds more than {MAX_CONFIG_VALUES:,} values once its YAML aliases are expanded;"
                    " write the values out instead of nesting aliases"
                )
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            raise BadInputError(f"{where}: a YAML alias refers to a value that contains it; remove the cycle")
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in children if isinstance(child, (dict, list)))


def parse_config(data: dict[str, Any], origin: str) -> MhaConfig:
    """Validate a mapping as our config file; errors name the file and every bad field as the file writes it.

    The model's layout must agree with the file's ``schema_version`` (``core.config_layout``)."""
    data, layout = checked_layout(data, origin)
    try:
        config = MhaConfig.model_validate(data)
    except ValidationError as exc:
        described = describe_validation_error(exc, unknown_hint=unknown_field_hint(layout))
        if layout == FLAT:
            described = as_flat_paths(described)
        raise BadInputError(f"{origin}: {described}") from exc
    if config.deployment.max_model_len is not None:  # read by plan alone: not quietly ignored by the others
        raise BadInputError(
            f"{origin}: deployment.max_model_len: an engine started longer than its requests is `mha plan"
            " --max-model-len`'s; a file gives deployment.seq_len (the tokens a request holds): remove it"
        )
    return config


def _applicable(config: MhaConfig) -> dict:
    """The config as data without ``None`` fields, and without the deployment settings its model has nothing for:
    MLA's cache mode outside MLA, the state convention without a fixed state or an indexer key."""
    data = config.model_dump(mode="json", exclude_none=True)
    model = config.model
    if model.attention.mla is None:
        data["deployment"].pop("mla_cache", None)
    if model.recurrent is None and (model.attention.mla is None or model.attention.mla.indexer is None):
        data["deployment"].pop("state_convention", None)
    return data


def config_to_yaml(config: MhaConfig, header: str | None = None) -> str:
    """The config as YAML, fields in schema order, ``None`` fields (and MLA's cache mode for other
    variants; for MLA, the n_kv_heads and head_dim the schema derives from the latent) left out."""
    data = _applicable(config)
    if not data["model"].get("layers"):  # every layer global and dense-or-MoE by the block: nothing to say
        data["model"].pop("layers", None)
    if config.model.attention.mla is not None:  # one latent: no per-head KV count or width (derived on reading)
        data["model"]["attention"].pop("n_kv_heads", None)
        data["model"]["attention"].pop("head_dim", None)
    import yaml

    body = yaml.safe_dump(data, sort_keys=False, width=100)
    if header:
        body = "".join(f"# {line}\n" for line in header.splitlines()) + body
    return body


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


CONFIG_SUFFIXES = {".yaml": "YAML", ".yml": "YAML", ".json": "JSON"}


def config_text(config: MhaConfig, path: Path, header: str | None = None) -> str:
    """The config in the format ``path``'s extension names: ``.json`` JSON, ``.yaml``/``.yml`` YAML (with ``header``
    as comments). JSON has no comments, so there the header goes first in ``notes``. Other extensions are refused:
    a ``design.json`` holding YAML would be rejected by ``mha kv design.json``."""
    kind = CONFIG_SUFFIXES.get(path.suffix.lower())
    try:
        folder = path.is_dir()
    except OSError:  # a name too long to look up: the write reports it (exit 74)
        folder = False
    if folder:
        raise BadInputError(
            f"{shown_path(path)} is a folder: name a file in it, e.g. {shown_path(path / 'design.yaml')}"
        )
    if kind is None:
        raise BadInputError(f"{shown_path(path)}: name the file .yaml, .yml or .json (the extension sets the format)")
    if kind == "YAML":
        return config_to_yaml(config, header=header)
    if header:
        config = config.model_copy(update={"notes": [header, *config.notes]})
    import json  # only for a .json config

    return json.dumps(_applicable(config), indent=2) + "\n"


def write_text_atomic(path: Path, text: str, *, force: bool = False) -> None:
    """Write ``text`` (UTF-8) to ``path`` whole or not at all; refuse to overwrite without ``force``."""
    write_bytes_atomic(path, text.encode("utf-8"), force=force)


def write_bytes_atomic(path: Path, data: bytes, *, force: bool = False) -> None:
    """Write ``data`` to ``path`` whole or not at all; refuse to overwrite without ``force``.

    ``force`` replaces only a regular file (never a FIFO, a symlink, a device or a socket). A failure of the
    file system (read-only, no permission, full disk, name too long) is an ``OutputError`` (exit 74) with the
    system's reason; the temporary file is removed whatever happens, Ctrl-C, SIGTERM and SIGHUP included
    (the CLI turns those into exceptions that unwind through the ``finally`` below).
    """
    where = shown_path(path)
    try:
        folder = path.parent if str(path.parent) else Path(".")
        _check_folder(folder, path.name)
        _check_target(path, where, force)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise OutputError(f"cannot write {where}: {os_reason(exc)}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp_name, 0o666 & ~_current_umask())  # mkstemp makes 0600; give the usual mode
        if force:
            _check_target(path, where, force)  # still a regular file (or nothing) just before it is replaced
            os.replace(tmp_name, path)
        else:
            _link_without_overwriting(tmp_name, path, where)
    except OSError as exc:
        raise OutputError(f"cannot write {where}: {os_reason(exc)}") from None
    finally:
        Path(tmp_name).unlink(missing_ok=True)


_KINDS = {stat.S_IFLNK: "a symlink", stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a device", stat.S_IFBLK: "a device",
          stat.S_IFSOCK: "a socket"}  # fmt: skip


def _check_folder(folder: Path, name: str) -> None:
    """Refuse a ``folder`` to write ``name`` into that does not exist, or one under a file (``out.yaml/x.yaml``:
    a path mistyped, exit 2, not a failed write)."""
    if folder.is_dir():
        return
    file = next((part for part in reversed((folder, *folder.parents)) if part.exists() and not part.is_dir()), None)
    if file is not None:
        raise BadInputError(f"{shown_path(file)} is a file, not a folder to write {shown_path(name)} into")
    raise BadInputError(f"{shown_path(folder)}: no such folder to write {shown_path(name)} into")


def _check_target(path: Path, where: str, force: bool) -> None:
    """Refuse a folder, an existing regular file without ``force``, and anything else (a symlink, a FIFO, a
    device) with or without it."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        raise BadInputError(f"{where} is a folder: give a file name to write")
    if not force and stat.S_ISREG(mode):
        raise BadInputError(f"{where} exists: pass --force to overwrite it")
    # with or without --force (trial 343 #5: a symlink was told to pass --force, then refused)
    if not stat.S_ISREG(mode):
        kind = _KINDS.get(stat.S_IFMT(mode), "something other than a file")
        raise BadInputError(
            f"{where} is {kind}: mha writes only a new file, or with --force replaces a regular file; write somewhere"
            " else"
        )


def _link_without_overwriting(tmp_name: str, path: Path, where: str) -> None:
    """Put the finished file at ``path`` only if nothing is there, even if one appeared meanwhile."""
    try:
        os.link(tmp_name, path)  # fails if path exists: no window between a check and the write
    except FileExistsError:
        raise BadInputError(f"{where} exists: pass --force to overwrite it") from None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
        # a file system without hard links: check, then rename
        if os.path.lexists(path):
            raise BadInputError(f"{where} exists: pass --force to overwrite it") from None
        os.replace(tmp_name, path)
