"""Whole-number rounding the engines' shapes and pages use, defined once. A leaf: it imports nothing. Pure Python."""


def round_up(value: int, multiple: int) -> int:
    """``value`` rounded up to a whole number of ``multiple`` (a width padded to a kernel's tile, bytes to a page)."""
    return -(-value // multiple) * multiple
