"""Static, pre-allocated KV caches (after gpt-fast): buffers sized once, filled by a prefill and then
one token at a time, never reallocated. Each reports ``nbytes``, the exact bytes of its tensors,
which equals ``mha_cli.core.kv.bytes_per_token_per_layer(...) * batch * max_seq``.

Only unquantised formats (fp32, fp16, bf16) are built; the calculator prices fp8/int8/int4 caches,
but their scale layouts are not implemented here, so asking for one raises ``BadInputError``.
"""

from __future__ import annotations

import torch

from mha_cli.core.dtypes import BUILDABLE, normalise_dtype_name
from mha_cli.core.errors import BadInputError

CACHE_DTYPES: dict[str, torch.dtype] = dict(zip(BUILDABLE, (torch.float32, torch.float16, torch.bfloat16), strict=True))
"""The torch dtype of each format the modules build (``core.dtypes.BUILDABLE``, in its order)."""
DTYPE_NAMES: dict[torch.dtype, str] = {dtype: name for name, dtype in CACHE_DTYPES.items()}
_BUILDABLE_LIST = f"{', '.join(BUILDABLE[:-1])} or {BUILDABLE[-1]}"


def resolve_cache_dtype(dtype: torch.dtype | str | None, default: torch.dtype = torch.float32) -> torch.dtype:
    """A torch dtype for a cache: a torch dtype, a name (``bf16``, ``bfloat16``) or ``None`` (``default``)."""
    if dtype is None:
        dtype = default
    if isinstance(dtype, str):
        name = normalise_dtype_name(dtype)
        if name not in CACHE_DTYPES:
            raise BadInputError(
                f"KV cache dtype {name} is priced by `mha kv` but not built by the torch modules: use {_BUILDABLE_LIST}"
            )
        return CACHE_DTYPES[name]
    if dtype not in DTYPE_NAMES:
        raise BadInputError(
            f"KV cache dtype {dtype} is not supported: use torch.float32, torch.float16 or torch.bfloat16"
        )
    return dtype


def _check_span(start_pos: int, n_new: int, batch: int, max_seq: int, max_batch: int) -> int:
    """Positions [start_pos, start_pos + n_new) must fit; returns the end position."""
    end = start_pos + n_new
    if start_pos < 0 or end > max_seq:
        raise ValueError(f"positions [{start_pos}, {end}) do not fit a cache of max_seq={max_seq}")
    if batch > max_batch:
        raise ValueError(f"batch ({batch}) exceeds the cache's batch ({max_batch})")
    return end


class KVCache:
    """Per-head keys and values for MHA/GQA/MQA (and naive MLA, whose K and V widths differ).

    ``k``: (b, n_kv, max_seq, k_h_d); ``v``: (b, n_kv, max_seq, v_h_d).
    """

    def __init__(
        self,
        batch: int,
        max_seq: int,
        n_kv_heads: int,
        head_dim: int,
        v_head_dim: int | None = None,
        *,
        dtype: torch.dtype | str | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        self.dtype = resolve_cache_dtype(dtype)
        self.batch, self.max_seq, self.n_kv_heads = batch, max_seq, n_kv_heads
        v_width = head_dim if v_head_dim is None else v_head_dim
        self.k = torch.zeros(batch, n_kv_heads, max_seq, head_dim, dtype=self.dtype, device=device)  # (b, n_kv, t, h_d)
        self.v = torch.zeros(
            batch, n_kv_heads, max_seq, v_width, dtype=self.dtype, device=device
        )  # (b, n_kv, t, v_h_d)

    @property
    def nbytes(self) -> int:
        """Exact bytes of the cache's tensors."""
        return self.k.nbytes + self.v.nbytes

    def update(self, start_pos: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Write k, v (b, n_kv, s, h_d) at [start_pos, start_pos + s); return views of [0, start_pos + s)."""
        b, _, s, _ = k.shape
        end = _check_span(start_pos, s, b, self.max_seq, self.batch)
        self.k[:b, :, start_pos:end] = k  # (b, n_kv, s, h_d)
        self.v[:b, :, start_pos:end] = v  # (b, n_kv, s, v_h_d)
        return self.k[:b, :, :end], self.v[:b, :, :end]  # (b, n_kv, end, h_d), (b, n_kv, end, v_h_d)


class LatentCache:
    """MLA's absorbed cache: one shared latent plus the RoPE key per token, no per-head K or V.

    One buffer ``kv`` (b, max_seq, kv_lora_rank + rope_dim) so the attention can read
    latent+rope as its key and the latent alone as its value without copying either.
    """

    def __init__(
        self,
        batch: int,
        max_seq: int,
        kv_lora_rank: int,
        rope_dim: int = 0,
        *,
        dtype: torch.dtype | str | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        self.dtype = resolve_cache_dtype(dtype)
        self.batch, self.max_seq = batch, max_seq
        self.kv_lora_rank, self.rope_dim = kv_lora_rank, rope_dim
        self.kv = torch.zeros(batch, max_seq, kv_lora_rank + rope_dim, dtype=self.dtype, device=device)  # (b, t, r + p)

    @property
    def nbytes(self) -> int:
        """Exact bytes of the cache's tensors."""
        return self.kv.nbytes

    @property
    def latent(self) -> torch.Tensor:
        return self.kv[..., : self.kv_lora_rank]  # (b, max_seq, r)

    @property
    def rope_key(self) -> torch.Tensor:
        return self.kv[..., self.kv_lora_rank :]  # (b, max_seq, p)

    def update(self, start_pos: int, latent: torch.Tensor, rope_key: torch.Tensor | None) -> torch.Tensor:
        """Write latent (b, s, r) and rope_key (b, s, p) at [start_pos, start_pos + s); return kv[:, :end]."""
        b, s, _ = latent.shape
        end = _check_span(start_pos, s, b, self.max_seq, self.batch)
        self.kv[:b, start_pos:end, : self.kv_lora_rank] = latent  # (b, s, r)
        if self.rope_dim:
            self.kv[:b, start_pos:end, self.kv_lora_rank :] = rope_key  # (b, s, p)
        return self.kv[:b, :end]  # (b, end, r + p)
