"""YAML read safely and fast: PyYAML's safe loader, in libyaml's C build where PyYAML has it (the same safe
constructor over a C parser: the same objects as ``yaml.safe_load``, 6-10x faster on a megabyte file). PyYAML is
imported when a file is read, not with this module: the commands that read no YAML never pay for it."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def safe_loader() -> type:
    """libyaml's safe loader, or PyYAML's pure-Python one where it was built without libyaml."""
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml_file(path: Path) -> Any:
    """``path``'s YAML document (UTF-8), loaded safely: the repository's fixtures (``tests/fixtures``: the start-up
    logs and the serving tables, which the tests and the benchmarks read)."""
    import yaml

    return yaml.load(Path(path).read_text(encoding="utf-8"), Loader=safe_loader())
