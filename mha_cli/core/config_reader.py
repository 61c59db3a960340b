"""``ConfigReader``: looks up a config.json's fields by their spellings and records what it had to assume.

Shared by ``core.hf_import`` and the family modules (``core.families.models``), whose readers of a family's own
fields (layer kinds, fixed-state mixers) take one. Pure Python.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from mha_cli.core.errors import BadInputError


class ReadTracking(dict):
    """A config.json's fields that remember which of them were looked at (``get``, ``[key]``, ``in``), so that a
    field nobody read can be named (``ConfigReader.unread``). A ``hidden`` field reads as absent and is never looked
    at: a field the family's model ignores (``Family.window_fields``), so it is named as unread."""

    def __init__(self, *args: Any, hidden: frozenset[str] = frozenset(), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.looked_at: set[str] = set()
        self.hidden = hidden

    def __getitem__(self, key: str) -> Any:
        if key in self.hidden:
            raise KeyError(key)
        self.looked_at.add(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        if key in self.hidden:
            return default
        self.looked_at.add(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        if key in self.hidden:
            return False
        if isinstance(key, str):
            self.looked_at.add(key)
        return super().__contains__(key)


class ConfigReader:
    """Looks up the first present key among aliases and records what it had to assume."""

    def __init__(
        self,
        config: dict[str, Any],
        origin: str,
        defaults_from: str = "",
        defaults: Mapping[str, Any] | None = None,
        *,
        ignored: frozenset[str] = frozenset(),
        read_from: Mapping[str, str] | None = None,
    ) -> None:
        """``ignored``: fields read as absent, as the family's model ignores them (named as not read); ``read_from``:
        where a default was read, by field, where not ``defaults_from`` (the class's defaults table's release)."""
        self.config = ReadTracking(config, hidden=ignored)
        self.origin = origin
        self.assumptions: list[str] = []
        self.defaults_from = defaults_from
        self.defaults: Mapping[str, Any] = defaults if defaults is not None else MappingProxyType({})
        self.read_from: Mapping[str, str] = read_from or {}

    def get(self, *keys: str) -> Any:
        """The first of ``keys`` the config sets; else the family's transformers default for one it leaves out (said
        once). A key present as null is not left out: transformers reads it as None too."""
        for key in keys:
            if self.config.get(key) is not None:
                return self.config[key]
        for key in keys:
            if self.defaults.get(key) is not None and key not in self.config:
                value = self.defaults[key]
                self.assume(
                    value, f"{key} absent: {value!r}, the {self.read_from.get(key, self.defaults_from)} default"
                )
                return value
        return None

    def require(self, what: str, *keys: str) -> Any:
        value = self.get(*keys)
        if value is None:
            raise BadInputError(f"{self.origin} has no {what} (looked for {', '.join(keys)})")
        return value

    def count(self, what: str, *keys: str, zero: bool = False) -> int:
        """A required positive whole number (``32`` or ``32.0``; not ``32.5``, ``0`` or ``"32"``); ``zero``: 0 too
        (Qwen's ``max_window_layers`` 0, every layer sliding)."""
        value = self.require(what, *keys)
        whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
        if isinstance(value, bool) or not whole or value < (0 if zero else 1):
            key = next((k for k in keys if self.config.get(k) is not None), keys[0])
            kind = "a whole number of 0 or more" if zero else "a positive whole number"
            raise BadInputError(f"{self.origin}: {key} must be {kind}, got {value!r}")
        return int(value)

    def unread(self) -> list[str]:
        """The config's fields no reader has looked at so far, in the config's order."""
        return [key for key in dict.keys(self.config) if key not in self.config.looked_at]

    def assume(self, value: Any, note: str) -> Any:
        if note not in self.assumptions:
            self.assumptions.append(note)
        return value
