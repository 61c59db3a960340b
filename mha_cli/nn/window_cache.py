"""The KV cache of a sliding-window layer: a ring of ``min(max_seq, window)`` slots, written after RoPE.

A query at position p sees keys p - window + 1 .. p (``window`` keys, the transformers/Mistral
convention: key j is visible when j > p - window). Position p lives in slot p % slots, so the cache
never grows past the window; the keys are stored already rotated, so a slot needs no position.

``update`` returns the keys a step needs and the position of the first of them, from which the
caller builds the window mask. Several new tokens: the cached keys they can still see (at most
window - 1, copied out in position order) followed by the new ones. One new token (decode): views
of the ring itself, no copy, since every slot then lies inside the token's window.
"""

from __future__ import annotations

import torch

from mha_cli.nn.kv_cache import resolve_cache_dtype


class SlidingWindowCache:
    """``k``: (b, n_kv, slots, h_d); ``v``: (b, n_kv, slots, v_h_d); slots = min(max_seq, window)."""

    def __init__(
        self,
        batch: int,
        max_seq: int,
        n_kv_heads: int,
        head_dim: int,
        window: int,
        v_head_dim: int | None = None,
        *,
        dtype: torch.dtype | str | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        if window < 1:
            raise ValueError(f"window ({window}) must be at least 1")
        self.dtype = resolve_cache_dtype(dtype)
        self.batch, self.max_seq, self.n_kv_heads, self.window = batch, max_seq, n_kv_heads, window
        self.slots = min(max_seq, window)
        v_width = head_dim if v_head_dim is None else v_head_dim
        self.k = torch.zeros(
            batch, n_kv_heads, self.slots, head_dim, dtype=self.dtype, device=device
        )  # (b, n_kv, w, h_d)
        self.v = torch.zeros(
            batch, n_kv_heads, self.slots, v_width, dtype=self.dtype, device=device
        )  # (b, n_kv, w, v_h_d)

    @property
    def nbytes(self) -> int:
        """Exact bytes of the cache's tensors."""
        return self.k.nbytes + self.v.nbytes

    def update(self, start_pos: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, int]:
        """Write k, v (b, n_kv, s, h_d) for positions [start_pos, start_pos + s).

        Returns (keys, values, first): keys (b, n_kv, n_old + s, h_d) and values for the positions
        [first, start_pos + s), where the n_old = start_pos - first earlier positions are those the
        new queries may still see (at most window - 1), read from their slots.
        """
        b, _, s, _ = k.shape
        end = start_pos + s
        if start_pos < 0 or end > self.max_seq:
            raise ValueError(f"positions [{start_pos}, {end}) do not fit a cache of max_seq={self.max_seq}")
        if b > self.batch:
            raise ValueError(f"batch ({b}) exceeds the cache's batch ({self.batch})")
        if s == 1:
            return self._decode_step(start_pos, k, v)
        n_old = min(start_pos, self.window - 1, self.slots)
        first = start_pos - n_old
        old_slots = torch.arange(first, start_pos, device=self.k.device) % self.slots  # (n_old,)
        old_k = self.k[:b].index_select(2, old_slots).to(k.dtype)  # (b, n_kv, n_old, h_d)
        old_v = self.v[:b].index_select(2, old_slots).to(v.dtype)  # (b, n_kv, n_old, v_h_d)
        keys = torch.cat([old_k, k], dim=2)  # (b, n_kv, n_old + s, h_d)
        values = torch.cat([old_v, v], dim=2)  # (b, n_kv, n_old + s, v_h_d)
        kept = min(s, self.slots)  # only the last `slots` new positions can be seen later
        new_slots = torch.arange(end - kept, end, device=self.k.device) % self.slots  # (kept,)
        self.k[:b, :, new_slots] = k[:, :, s - kept :].to(self.dtype)  # (b, n_kv, kept, h_d)
        self.v[:b, :, new_slots] = v[:, :, s - kept :].to(self.dtype)  # (b, n_kv, kept, v_h_d)
        return keys, values, first

    def _decode_step(self, pos: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, int]:
        """One new token: write it into its slot and return views of the slots it sees, nothing copied.

        Every slot then holds one of the positions pos - slots + 1 .. pos, all inside the window, so
        the whole ring (or its filled prefix) is the key set. Once the ring has wrapped, the keys come
        in slot order, a rotation of position order, which an unmasked single query cannot tell apart.
        """
        b = k.shape[0]
        slot = pos % self.slots
        self.k[:b, :, slot : slot + 1] = k.to(self.dtype)  # (b, n_kv, 1, h_d)
        self.v[:b, :, slot : slot + 1] = v.to(self.dtype)  # (b, n_kv, 1, v_h_d)
        n_seen = min(pos + 1, self.slots)
        return self.k[:b, :, :n_seen], self.v[:b, :, :n_seen], pos + 1 - n_seen  # (b, n_kv, n_seen, *) x 2


def window_mask(
    first_query: int, n_queries: int, first_key: int, n_keys: int, window: int | None, device: torch.device
) -> torch.Tensor:
    """(s, t) booleans: query at first_query + i sees key first_key + j when it is causal and within ``window``."""
    queries = torch.arange(first_query, first_query + n_queries, device=device).unsqueeze(1)  # (s, 1)
    keys = torch.arange(first_key, first_key + n_keys, device=device).unsqueeze(0)  # (1, t)
    visible = keys <= queries  # (s, t)
    if window is not None:
        visible &= keys > queries - window  # (s, t)
    return visible
