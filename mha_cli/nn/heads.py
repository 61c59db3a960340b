"""Split the projected width into heads and back.

Shape glossary (after torchtune), reused by every module of ``mha_cli.nn``:
``b`` batch, ``s`` new tokens, ``t`` tokens attended to (cache length), ``n_h`` query heads,
``n_kv`` key/value heads, ``h_d`` head width, ``d`` model width.
"""

from __future__ import annotations

import torch


def split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """(b, s, n_heads * h_d) -> (b, n_heads, s, h_d): one reshape, one transpose (a view when possible)."""
    b, s, width = x.shape
    if width % n_heads:
        raise ValueError(f"width ({width}) must be divisible by n_heads ({n_heads})")
    return x.reshape(b, s, n_heads, width // n_heads).transpose(1, 2)  # (b, n_h, s, h_d)


def combine_heads(x: torch.Tensor) -> torch.Tensor:
    """(b, n_heads, s, h_d) -> (b, s, n_heads * h_d): the inverse of ``split_heads``."""
    b, n_heads, s, head_dim = x.shape
    return x.transpose(1, 2).reshape(b, s, n_heads * head_dim)  # (b, s, n_h * h_d)
