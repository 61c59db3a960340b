"""Binary byte units, the one definition every module that converts bytes to GiB or MiB imports (``torch`` and the
engines' logs report memory in these: 1 GiB = 2^30 bytes). A leaf: it imports nothing. Pure Python.
"""

GIB = 2**30
"""Bytes in a gibibyte."""
MIB = 2**20
"""Bytes in a mebibyte."""
