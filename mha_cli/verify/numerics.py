"""Numerics: a cached decode must reproduce the full forward within the dtype's tolerance.

On a fresh cache of ``tokens`` positions, the first ``tokens - decode_tokens`` token ids go through
the built stack as one prefill and the rest one at a time (``start_pos`` advancing); the
concatenated logits are compared with one forward of the whole sequence without a cache. The error
is relative to the largest logit, so it does not depend on the weights' scale. In a mixture-of-experts
stack the cached pass replays the experts the full forward chose (``nn.moe.RoutingTape``): in bf16 a
near-tie can route a token differently on the two paths, which says nothing about the cache; how many
choices would have differed is reported (``routing_differing``).
"""

from __future__ import annotations

import torch
from torch import nn

from mha_cli.nn.moe import replayed_routing
from mha_cli.verify.report import NumericsResult

DEFAULT_TOLERANCE: dict[torch.dtype, float] = {torch.float32: 1e-4, torch.float16: 2e-3, torch.bfloat16: 2e-2}
"""Relative tolerance per dtype: a few units of the format's rounding (fp32 2^-24, fp16 2^-11, bf16 2^-8)
times the accumulation length; the two paths reduce in different orders."""


def check_cached_decode(
    model: nn.Module,
    *,
    vocab_size: int,
    dtype: torch.dtype,
    device: torch.device,
    tolerance: float | None = None,
    tokens: int = 16,
    decode_tokens: int = 4,
    batch: int = 1,
    seed: int = 0,
) -> NumericsResult:
    """Compare ``model``'s cached decode with its full forward; ``tolerance`` defaults per dtype.

    ``model``: ``forward(input_ids, caches=None, start_pos=0) -> logits`` and ``new_cache(batch, max_seq, dtype)``.
    """
    if not 0 < decode_tokens < tokens:
        raise ValueError(f"decode_tokens ({decode_tokens}) must lie in (0, tokens={tokens})")
    tol = DEFAULT_TOLERANCE[dtype] if tolerance is None else tolerance
    generator = torch.Generator(device="cpu").manual_seed(seed)
    ids = torch.randint(vocab_size, (batch, tokens), generator=generator).to(device)  # (b, s)
    prefix = tokens - decode_tokens
    with torch.inference_mode(), replayed_routing(model) as tapes:
        full = model(ids)  # (b, s, vocab)
        for tape in tapes:
            tape.replaying = True
        caches = model.new_cache(batch, tokens, dtype=dtype)
        pieces = [model(ids[:, :prefix], caches, 0)]  # (b, prefix, vocab)
        for pos in range(prefix, tokens):
            pieces.append(model(ids[:, pos : pos + 1], caches, pos))  # (b, 1, vocab)
        cached = torch.cat(pieces, dim=1)  # (b, s, vocab)
    routing_differing = sum(tape.differing for tape in tapes) if tapes else None
    error = (cached.float() - full.float()).abs().max().item()
    scale = full.float().abs().max().item()
    relative = error / scale if scale > 0 else error
    return NumericsResult(
        tokens=tokens, decode_tokens=decode_tokens, max_abs_error=error, reference_max_abs=scale,
        relative_error=relative, tolerance=tol, passed=relative <= tol, routing_differing=routing_differing,
    )  # fmt: skip
