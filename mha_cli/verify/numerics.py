"""Numerics: a cached decode must reproduce the full forward within the dtype's tolerance.

On a fresh cache of ``tokens`` positions, the first ``tokens - decode_tokens`` go through the layer
as one prefill and the rest one at a time (``start_pos`` advancing); the concatenated outputs are
compared with one forward of the whole sequence without a cache. The error is relative to the
largest output value, so it does not depend on the weights' scale.
"""

from __future__ import annotations

import torch
from torch import nn

from mha_cli.verify.report import NumericsResult

DEFAULT_TOLERANCE: dict[torch.dtype, float] = {torch.float32: 1e-4, torch.float16: 2e-3, torch.bfloat16: 2e-2}
"""Relative tolerance per dtype: a few units of the format's rounding (fp32 2^-24, fp16 2^-11, bf16 2^-8)
times the accumulation length; the two paths reduce in different orders."""


def check_cached_decode(
    layer: nn.Module,
    *,
    d_model: int,
    dtype: torch.dtype,
    device: torch.device,
    tolerance: float | None = None,
    tokens: int = 16,
    decode_tokens: int = 4,
    batch: int = 1,
    seed: int = 0,
) -> NumericsResult:
    """Compare ``layer``'s cached decode with its full forward; ``tolerance`` defaults per dtype."""
    if not 0 < decode_tokens < tokens:
        raise ValueError(f"decode_tokens ({decode_tokens}) must lie in (0, tokens={tokens})")
    tol = DEFAULT_TOLERANCE[dtype] if tolerance is None else tolerance
    generator = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(batch, tokens, d_model, generator=generator).to(dtype=dtype, device=device)  # (b, s, d)
    prefix = tokens - decode_tokens
    with torch.inference_mode():
        full = layer(x)  # (b, s, d)
        cache = layer.new_cache(batch, tokens)
        pieces = [layer(x[:, :prefix], cache, 0)]  # (b, prefix, d)
        for pos in range(prefix, tokens):
            pieces.append(layer(x[:, pos : pos + 1], cache, pos))  # (b, 1, d)
        cached = torch.cat(pieces, dim=1)  # (b, s, d)
    error = (cached.float() - full.float()).abs().max().item()
    scale = full.float().abs().max().item()
    relative = error / scale if scale > 0 else error
    return NumericsResult(
        tokens=tokens, decode_tokens=decode_tokens, max_abs_error=error, reference_max_abs=scale,
        relative_error=relative, tolerance=tol, passed=relative <= tol,
    )  # fmt: skip
