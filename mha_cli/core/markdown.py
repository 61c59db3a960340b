"""Markdown pieces the generated documents share: a table, a cell, and a block kept between two markers.

A generated block sits in a hand-written page between ``<!-- BEGIN GENERATED NAME ... -->`` and
``<!-- END GENERATED NAME -->``; ``replace_block`` swaps what is between them and keeps the prose around it, so a
page can be regenerated without losing what a person wrote. Pure Python.
"""

from __future__ import annotations

import re


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """A GitHub markdown table; numeric-looking columns stay as given."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def cell(text: object) -> str:
    """``text`` as one table cell: on one line, its ``|`` escaped so it does not split the cell."""
    return " ".join(str(text).split()).replace("|", "\\|")


def begin_marker(name: str, how: str) -> str:
    """The line that opens block ``name``; ``how`` is the command that regenerates it."""
    return f"<!-- BEGIN GENERATED {name}: do not edit by hand; regenerate with `{how}` -->"


def end_marker(name: str) -> str:
    return f"<!-- END GENERATED {name} -->"


def read_block(text: str, name: str) -> str | None:
    """What block ``name`` of ``text`` holds between its markers (None when the page has no such block)."""
    match = _block(name).search(text)
    return None if match is None else match.group("body")


def replace_block(text: str, name: str, body: str, how: str) -> str:
    """``text`` with block ``name`` holding ``body`` (its markers rewritten); a page without the block is refused."""
    match = _block(name).search(text)
    if match is None:
        raise ValueError(f"no generated block {name!r}: add {begin_marker(name, how)!r} and {end_marker(name)!r}")
    return text[: match.start()] + f"{begin_marker(name, how)}\n{body}{end_marker(name)}" + text[match.end() :]


def _block(name: str) -> re.Pattern[str]:
    escaped = re.escape(name)
    return re.compile(rf"<!-- BEGIN GENERATED {escaped}:[^\n]*-->\n(?P<body>.*?)<!-- END GENERATED {escaped} -->", re.S)
