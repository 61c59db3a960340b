"""Human quantities: ``7B`` parameters, ``8k`` tokens, ``80GB`` of memory.

Conventions, chosen to match how people quote each kind of number:

- parameter counts are decimal: ``7B`` = 7,000,000,000; ``350M``; ``1.5T``; ``125k``.
- token counts are binary, as context lengths are quoted: ``8k`` = 8,192, ``128K`` = 131,072,
  ``1M`` = 1,048,576. A plain integer (``32768``) is taken as it is.
- byte sizes follow the unit: ``GB`` is 10^9 bytes, ``GiB`` is 2^30; ``KB``/``KiB``, ``MB``/``MiB``,
  ``TB``/``TiB`` likewise; a bare number is bytes.

Every parser returns an ``int`` and raises ``BadInputError`` with a one-line message otherwise.
Input longer than ``MAX_QUANTITY_CHARS`` is refused before it is parsed, and the pattern has one
way to match any text (no nested or adjacent optional digit runs), so a parse is linear in its input.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation, localcontext

from mha_cli.core.errors import BadInputError, shown

MAX_QUANTITY_CHARS = 64
"""The longest quantity read: ``1.5T`` or ``131072`` need a few characters, a 20,000-character one is refused."""

_NUMBER_AND_SUFFIX = re.compile(r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)")

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


def _split(text: object, what: str, example: str) -> tuple[Decimal, str]:
    """(the number, its suffix as typed) of a quantity ``text``."""
    if not isinstance(text, str):
        raise BadInputError(f"{what} must be a number or text such as {example} (got {type(text).__name__})")
    if len(text) > MAX_QUANTITY_CHARS:
        raise BadInputError(f"{what} {shown(text)} is too long: write a number with an optional unit, e.g. {example}")
    match = _NUMBER_AND_SUFFIX.fullmatch(text.strip())
    if not match:
        raise BadInputError(f"cannot read {what} {shown(text)}: write a number with an optional unit, e.g. {example}")
    try:
        number = Decimal(match.group(1))
    except InvalidOperation as exc:  # pragma: no cover - the regex admits only valid decimals
        raise BadInputError(f"cannot read {what} {shown(text)}") from exc
    if abs(number.adjusted()) > _MAX_EXPONENT:
        raise BadInputError(f"{what} {shown(text)} is out of range")
    return number, match.group(2)


def _scale(text: str, number: Decimal, factor: int, what: str) -> int:
    with localcontext() as exact:
        exact.prec = 2 * MAX_QUANTITY_CHARS  # room for every digit typed times the unit: the product is exact
        value = number * factor
    if value != value.to_integral_value():
        raise BadInputError(f"{what} {shown(text)} is not a whole number ({value})")
    result = int(value)
    if result <= 0:
        raise BadInputError(f"{what} {shown(text)} must be positive")
    return result


def _exact_int(value: int, what: str) -> int:
    """An ``int`` given as is (a boolean is not a count); positive and within range."""
    if isinstance(value, bool):
        raise BadInputError(f"{what} must be a number, not {str(value).lower()}")
    if value.bit_length() > 128:
        raise BadInputError(f"{what} {shown(value)} is out of range")
    return _scale(str(value), Decimal(value), 1, what)


def parse_param_count(text: str | int) -> int:
    """Parse a parameter count (decimal suffixes): ``7B`` -> 7_000_000_000."""
    if isinstance(text, int):
        return _exact_int(text, "parameter count")
    number, suffix = _split(text, "parameter count", "7B, 350M, 1.5T")
    if suffix.upper() not in _DECIMAL_COUNT:
        raise BadInputError(
            f"unknown suffix {shown(suffix, 8)} in parameter count {shown(text)}: use K, M, B (or G) or T (e.g. 7B)"
        )
    return _scale(text, number, _DECIMAL_COUNT[suffix.upper()], "parameter count")


def parse_token_count(text: str | int) -> int:
    """Parse a token count (binary suffixes): ``8k`` -> 8192, ``128K`` -> 131072."""
    if isinstance(text, int):
        return _exact_int(text, "token count")
    number, suffix = _split(text, "token count", "8192, 8k, 128K")
    if suffix.upper() not in _BINARY_COUNT:
        raise BadInputError(
            f"unknown suffix {shown(suffix, 8)} in token count {shown(text)}: use k, M or G (e.g. 8k = 8192)"
        )
    return _scale(text, number, _BINARY_COUNT[suffix.upper()], "token count")


_VLLM_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_VLLM_BINARY = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
_VLLM_INT = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")


def parse_vllm_int(text: str) -> int:
    """A count as vLLM's ``--max-model-len`` reads it (``utils/argparse_utils.py`` ``human_readable_int``, vLLM
    0.32): a lowercase suffix decimal, ``int(float(number) x 1,000)`` (``8k`` -> 8,000, ``25.6k`` -> 25,600), an
    uppercase one binary and whole (``8K`` -> 8,192; ``1.5K`` refused), else Python's ``int`` (``8_000``, ``+8000``).
    Only a positive count: ``auto`` and -1 are the caller's (``cli.options``)."""
    text = text.strip()
    if len(text) > MAX_QUANTITY_CHARS:
        raise BadInputError(f"token count {shown(text)} is too long: write a number such as 8k or 8192")
    match = _VLLM_INT.fullmatch(text)
    try:
        if match is None:
            value = int(text)
        elif match.group(2) in _VLLM_DECIMAL:
            value = int(float(match.group(1)) * _VLLM_DECIMAL[match.group(2)])
        else:
            value = int(match.group(1)) * _VLLM_BINARY[match.group(2)]
    except ValueError:
        if match is not None:  # a decimal before a binary suffix
            number, suffix = match.groups()
            raise BadInputError(
                f"{shown(text)}: vLLM takes no decimals with a binary suffix ({suffix}): write {number}{suffix.lower()}"
                f" ({number} x 1,000) or a whole number of {suffix}"
            ) from None
        raise BadInputError(
            f"cannot read token count {shown(text)} as vLLM does: write a whole number, or one with k (x 1,000) or K"
            " (x 1,024), e.g. 8k = 8,000, 8K = 8,192"
        ) from None
    if value <= 0:
        raise BadInputError(f"token count {shown(text)} must be positive")
    return value


def parse_byte_size(text: str | int) -> int:
    """Parse a memory size: ``80GB`` -> 80 * 10**9, ``24GiB`` -> 24 * 2**30."""
    if isinstance(text, int):
        return _exact_int(text, "memory size")
    number, suffix = _split(text, "memory size", "80GB, 24GiB")
    if suffix.upper() not in _BYTE_UNITS:
        raise BadInputError(
            f"unknown unit {shown(suffix, 8)} in memory size {shown(text)}: use B, KB, MB, GB, TB or KiB, MiB, GiB, TiB"
        )
    return _scale(text, number, _BYTE_UNITS[suffix.upper()], "memory size")


def format_bytes(n_bytes: float) -> str:
    """Binary-prefixed size for people: 131072 -> '128.0 KiB'."""
    value = float(n_bytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def format_count(n: float) -> str:
    """Decimal-prefixed count for people: 8_030_261_248 -> '8.03B'; from a million T, a power of ten (2.5e+21), not
    a float's rounding noise written out as digits."""
    if abs(n) >= 10**18:
        return f"{n:.3g}"
    for factor, suffix in ((10**12, "T"), (10**9, "B"), (10**6, "M"), (10**3, "K")):
        if abs(n) >= factor:
            return f"{n / factor:.3g}{suffix}" if n / factor < 100 else f"{n / factor:,.0f}{suffix}"
    return f"{n:,.0f}"


def format_ms(value: float) -> str:
    """A latency target in milliseconds as typed, with thousands: ``50.5``, ``2,000``, ``1,000,000`` (not ``1e+06``:
    review 356 #7)."""
    return f"{value:,.0f}" if value >= 1e6 else f"{value:,g}"


def format_past(value: float, target: float, places: int) -> str:
    """``value`` (ms, past ``target``) to ``places`` decimals, or to the fewest more (up to 3) that print it above
    the target as ``format_ms`` prints it: a TPOT of 7.003 ms past 7 read "7.0 ms > 7" (review 408 #10)."""
    shown_target = float(format_ms(target).replace(",", ""))
    for decimals in range(places, 4):
        text = f"{value:,.{decimals}f}"
        if float(text.replace(",", "")) > shown_target:
            return text
    return text
