"""``core.rounding.round_up``: one definition, in a leaf, that the MXFP4 kernels' padding and the offload pages use."""

from __future__ import annotations

import ast
from pathlib import Path

from mha_cli.core import rounding
from mha_cli.core.engine import mxfp4_moe, offload


def test_round_up_by_hand():
    assert rounding.round_up(2880, 256) == 3072  # gpt-oss' hidden size to Marlin's multiple
    assert rounding.round_up(1440, 64) == 1472  # its tp 2 intermediate size to triton_kernels' on Hopper
    assert rounding.round_up(4096, 4096) == 4096  # a whole page stays one
    assert rounding.round_up(4097, 4096) == 8192
    assert rounding.round_up(0, 8) == 0


def test_one_definition_in_a_leaf():
    tree = ast.parse(Path(rounding.__file__).read_text(encoding="utf-8"))
    assert not [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]
    assert mxfp4_moe.round_up is offload.round_up is rounding.round_up
