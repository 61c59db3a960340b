"""Build the stack one rank holds: ``mha_cli.nn.build_model`` for the plan's first layers, ready to measure.

On CPU a random draw costs about 10 ns a value, so initialising a 7B model's 128K-token embedding
and LM head (0.5 G values each) would take longer than the whole measurement. ``tiled_random_init``
keeps every module's own initialiser (its distribution and scale) but lets each large in-place draw
(``uniform_``, ``normal_``) draw ``TILE`` values and repeat them over the tensor, so initialising
costs a copy. Weight values change neither the bytes nor a step's time, and the numerics check
compares two paths over the same weights; the tile length is prime, so rows do not repeat.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from mha_cli.nn import build_model
from mha_cli.nn.kv_cache import CACHE_DTYPES
from mha_cli.verify.plan import VerifyPlan

TILE = 1_048_573
"""Values each large random fill draws (a prime just under 2^20): the rest of the tensor repeats them."""
_FILLS = {torch.Tensor.uniform_, torch.Tensor.normal_}


class _TiledFills(TorchFunctionMode):
    """Turns ``t.uniform_(...)`` / ``t.normal_(...)`` on a contiguous tensor of more than TILE values into
    one draw of TILE values with the same arguments, repeated over ``t``."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        tensor = args[0] if args else None
        if func not in _FILLS or not isinstance(tensor, torch.Tensor) or tensor.numel() <= TILE:
            return func(*args, **kwargs)
        if not tensor.is_contiguous():
            return func(*args, **kwargs)
        tile = torch.empty(TILE, dtype=tensor.dtype, device=tensor.device)  # (TILE,)
        func(tile, *args[1:], **kwargs)  # the module's own distribution (the mode is off inside its handler)
        flat = tensor.view(-1)  # (n,)
        repeats, rest = divmod(flat.numel(), TILE)
        flat[: repeats * TILE].view(repeats, TILE).copy_(tile.expand(repeats, TILE))  # (repeats, TILE)
        flat[repeats * TILE :].copy_(tile[:rest])  # (rest,)
        return tensor


@contextmanager
def tiled_random_init() -> Iterator[None]:
    """Within it, large random fills draw ``TILE`` values and repeat them (see the module docstring)."""
    with _TiledFills():
        yield


def build_stack(plan: VerifyPlan, device: torch.device, *, tp_rank: int = 0, tp_size: int | None = None) -> nn.Module:
    """Rank ``tp_rank`` of ``tp_size`` (default ``plan.tp``): embedding, the plan's first layers, final norm,
    LM head, in the plan's dtype on ``device``, in eval mode without gradients. On CPU initialised tiled."""
    kwargs = {
        "n_layers": plan.n_layers_built, "dtype": CACHE_DTYPES[plan.dtype], "device": device,
        "mla_mode": plan.mla_cache or "absorbed", "tp_rank": tp_rank, "tp_size": plan.tp if tp_size is None else tp_size,
    }  # fmt: skip
    if device.type == "cpu":
        with tiled_random_init():
            model = build_model(plan.model, **kwargs)
    else:
        model = build_model(plan.model, **kwargs)
    return model.eval().requires_grad_(False)
