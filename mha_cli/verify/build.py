"""Build the stack one rank holds: ``mha_cli.nn.build_model`` for the plan's first layers, ready to measure.

On CPU a random draw costs about 10 ns a value, so initialising a 7B model's 128K-token embedding
and LM head (0.5 G values each) would take longer than the whole measurement. ``tiled_random_init``
keeps every module's own initialiser (its distribution and scale) but lets each large in-place draw
(``uniform_``, ``normal_``) draw ``TILE`` values and repeat them over the tensor, so initialising
costs a copy. Weight values change neither the bytes nor a step's time, and the numerics check
compares two paths over the same weights; the tile length is prime, so rows do not repeat.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from mha_cli.nn import build_model
from mha_cli.nn.kv_cache import CACHE_DTYPES
from mha_cli.verify.plan import VerifyPlan

TILE = 1_048_573
"""Values each large random fill draws (a prime just under 2^20): the rest of the tensor repeats them."""
_FILLS = {torch.Tensor.uniform_, torch.Tensor.normal_, nn.init.uniform_, nn.init.normal_}
"""In-place random draws whose first argument is the tensor and whose other arguments set the distribution."""


class _TiledFills(TorchFunctionMode):
    """Turns ``t.uniform_(...)`` / ``t.normal_(...)`` (or ``nn.init``'s) on a contiguous tensor of more than
    TILE values into one draw of TILE values with the same arguments, repeated over ``t``."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        tensor = args[0] if args else kwargs.get("tensor")  # nn.init passes the tensor by keyword
        if func not in _FILLS or not isinstance(tensor, torch.Tensor) or tensor.numel() <= TILE:
            return func(*args, **kwargs)
        if tensor.is_meta or not tensor.is_contiguous():
            return func(*args, **kwargs)
        with torch.no_grad():
            _tile(tensor.view(-1), func, args, kwargs)  # (n,)
        return tensor


def _tile(flat: torch.Tensor, func: Callable[..., object], args: tuple, kwargs: dict) -> None:
    """Draw the first TILE values of ``flat`` with ``func``'s arguments, then repeat them over the rest."""
    head = flat[:TILE]  # (TILE,)
    if args:
        func(head, *args[1:], **kwargs)  # the module's own distribution (the mode is off inside its handler)
    else:
        func(**(kwargs | {"tensor": head}))
    filled = TILE
    while filled < flat.numel():  # double the filled prefix: contiguous copies, n values in all
        step = min(filled, flat.numel() - filled)
        flat[filled : filled + step].copy_(flat[:step])  # (step,)
        filled += step


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
