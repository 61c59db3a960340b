"""split_heads / combine_heads: the layout each head's slice lands in, and the round trip."""

from __future__ import annotations

import pytest
import torch

from mha_cli.nn import combine_heads, split_heads


def test_split_heads_puts_each_slice_of_the_width_in_its_head() -> None:
    x = torch.arange(2 * 3 * 12, dtype=torch.float32).reshape(2, 3, 12)  # (b, s, n_h * h_d)
    heads = split_heads(x, 4)  # (b, n_h, s, h_d)
    assert heads.shape == (2, 4, 3, 3)
    for h in range(4):
        assert torch.equal(heads[:, h], x[:, :, 3 * h : 3 * (h + 1)])


def test_combine_heads_inverts_split_heads() -> None:
    x = torch.randn(2, 5, 24, generator=torch.Generator().manual_seed(0))
    assert torch.equal(combine_heads(split_heads(x, 6)), x)
    assert combine_heads(torch.zeros(2, 6, 5, 4)).shape == (2, 5, 24)


def test_split_heads_rejects_a_width_the_heads_do_not_divide() -> None:
    with pytest.raises(ValueError, match=r"width \(10\) must be divisible by n_heads \(4\)"):
        split_heads(torch.zeros(1, 2, 10), 4)
