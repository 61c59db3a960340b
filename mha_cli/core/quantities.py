"""Human quantities: ``7B`` parameters, ``8k`` tokens, ``80GB`` of memory.

Conventions, chosen to match how people quote each kind of number:

- parameter counts are decimal: ``7B`` = 7,000,000,000; ``350M``; ``1.5T``; ``125k``.
- token counts are binary, as context lengths are quoted: ``8k`` = 8,192, ``128K`` = 131,072,
  ``1M`` = 1,048,576. A plain integer (``32768``) is taken as it is.
- byte sizes follow the unit: ``GB`` is 10^9 bytes, ``GiB`` is 2^30; ``KB``/``KiB``, ``MB``/``MiB``,
  ``TB``/``TiB`` likewise; a bare number is bytes.

Every parser returns an ``int`` and raises ``BadInputError`` with a one-line message otherwise.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from mha_cli.core.errors import BadInputError

_NUMBER_AND_SUFFIX = re.compile(r"^\s*([+-]?[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*$")

_MAX_EXPONENT = 30
"""Numbers beyond 10^30 (or below 10^-30) are refused before any arithmetic on them."""

_DECIMAL_COUNT = {"": 1, "K": 10**3, "M": 10**6, "B": 10**9, "G": 10**9, "T": 10**12}
_BINARY_COUNT = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}
_BYTE_UNITS = {
    "": 1,
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "KIB": 2**10,
    "MIB": 2**20,
    "GIB": 2**30,
    "TIB": 2**40,
}


def _split(text: str, what: str, example: str) -> tuple[Decimal, str]:
    match = _NUMBER_AND_SUFFIX.match(str(text))
    if not match:
        raise BadInputError(f"cannot read {what} {text!r}: write a number with an optional unit, e.g. {example}")
    try:
        number = Decimal(match.group(1))
    except InvalidOperation as exc:  # pragma: no cover - the regex admits only valid decimals
        raise BadInputError(f"cannot read {what} {text!r}") from exc
    if abs(number.adjusted()) > _MAX_EXPONENT:
        raise BadInputError(f"{what} {text!r} is out of range")
    return number, match.group(2).upper()


def _scale(text: str, number: Decimal, factor: int, what: str) -> int:
    value = number * factor
    if value != value.to_integral_value():
        raise BadInputError(f"{what} {text!r} is not a whole number ({value})")
    result = int(value)
    if result <= 0:
        raise BadInputError(f"{what} {text!r} must be positive")
    return result


def parse_param_count(text: str | int) -> int:
    """Parse a parameter count (decimal suffixes): ``7B`` -> 7_000_000_000."""
    if isinstance(text, int):
        return _scale(str(text), Decimal(text), 1, "parameter count")
    number, suffix = _split(text, "parameter count", "7B, 350M, 1.5T")
    if suffix not in _DECIMAL_COUNT:
        raise BadInputError(f"unknown suffix {suffix!r} in parameter count {text!r}: use K, M, B (or G) or T (e.g. 7B)")
    return _scale(text, number, _DECIMAL_COUNT[suffix], "parameter count")


def parse_token_count(text: str | int) -> int:
    """Parse a token count (binary suffixes): ``8k`` -> 8192, ``128K`` -> 131072."""
    if isinstance(text, int):
        return _scale(str(text), Decimal(text), 1, "token count")
    number, suffix = _split(text, "token count", "8192, 8k, 128K")
    if suffix not in _BINARY_COUNT:
        raise BadInputError(f"unknown suffix {suffix!r} in token count {text!r}: use k, M or G (e.g. 8k = 8192)")
    return _scale(text, number, _BINARY_COUNT[suffix], "token count")


def parse_byte_size(text: str | int) -> int:
    """Parse a memory size: ``80GB`` -> 80 * 10**9, ``24GiB`` -> 24 * 2**30."""
    if isinstance(text, int):
        return _scale(str(text), Decimal(text), 1, "memory size")
    number, suffix = _split(text, "memory size", "80GB, 24GiB")
    if suffix not in _BYTE_UNITS:
        raise BadInputError(
            f"unknown unit {suffix!r} in memory size {text!r}: use B, KB, MB, GB, TB or KiB, MiB, GiB, TiB"
        )
    return _scale(text, number, _BYTE_UNITS[suffix], "memory size")


def format_bytes(n_bytes: float) -> str:
    """Binary-prefixed size for people: 131072 -> '128.0 KiB'."""
    value = float(n_bytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def format_count(n: float) -> str:
    """Decimal-prefixed count for people: 8_030_261_248 -> '8.03B'."""
    for factor, suffix in ((10**12, "T"), (10**9, "B"), (10**6, "M"), (10**3, "K")):
        if abs(n) >= factor:
            return f"{n / factor:.3g}{suffix}" if n / factor < 100 else f"{n / factor:,.0f}{suffix}"
    return f"{n:,.0f}"
