"""The fixed per-sequence state one linear-attention / state-space layer keeps: a conv state and a recurrent state.

Its size does not grow with the context: ``batch * conv_channels * conv_kernel`` values in the activation dtype plus
``batch * heads * rows * cols`` values of recurrent state (fp32 for Gated DeltaNet, Mamba-2 and KDA, as transformers and
vLLM keep them). ``nbytes`` is what the tensors really allocate, to be compared with ``mha_cli.core.kv``'s price.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class MixerState:
    """One layer's state for a batch of sequences; the mixers update both tensors in place."""

    conv: torch.Tensor
    """Last ``conv_kernel`` inputs of every conv channel: [batch, conv_channels, conv_kernel], activation dtype."""
    recurrent: torch.Tensor
    """Per-head state matrix: [batch, heads, rows, cols] (Gated DeltaNet: key dim x value dim; Mamba-2: head dim x
    d_state), fp32."""

    @classmethod
    def zeros(
        cls,
        batch: int,
        *,
        conv_channels: int,
        conv_kernel: int,
        heads: int,
        rows: int,
        cols: int,
        dtype: torch.dtype,
        state_dtype: torch.dtype = torch.float32,
        device: torch.device | str | None = None,
    ) -> MixerState:
        """A fresh (all-zero) state: the conv in ``dtype`` (the activations'), the recurrent state in ``state_dtype``."""
        conv = torch.zeros(batch, conv_channels, conv_kernel, dtype=dtype, device=device)  # [batch, channels, kernel]
        recurrent = torch.zeros(
            batch, heads, rows, cols, dtype=state_dtype, device=device
        )  # [batch, heads, rows, cols]
        return cls(conv=conv, recurrent=recurrent)

    @property
    def batch(self) -> int:
        """Sequences this state holds."""
        return self.conv.shape[0]

    @property
    def nbytes(self) -> int:
        """Bytes the two tensors allocate (numel * element_size), all sequences together (a property, as
        ``KVCache.nbytes`` is, so ``verify``'s cache accounting reads both alike)."""
        return sum(t.numel() * t.element_size() for t in (self.conv, self.recurrent))

    @property
    def nbytes_per_sequence(self) -> int:
        """Bytes for one sequence: what ``mha_cli.core.kv.state_bytes_per_layer`` prices."""
        return self.nbytes // self.batch
