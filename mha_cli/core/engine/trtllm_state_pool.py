"""TensorRT-LLM's recurrent-state pool for a hybrid Mamba-2 or Gated DeltaNet model (Nemotron-H, Qwen3-Next) on its
PyTorch backend (1.x): the states live in a pool of their own beside the KV pool, sized by ``max_batch_size``.

Read in TensorRT-LLM's ``_torch/pyexecutor/mamba_cache_manager.py`` (``MambaCacheManager``, behind
``MambaHybridCacheManager``) and ``_torch/pyexecutor/_util.py`` (``KvCacheCreator``), as stored before the C++
managers of 2026 (PR #10540 and after):

- slots: ``max_batch_size`` whatever the load (``conv_states`` and ``ssm_states`` are ``torch.empty([layers,
  max_batch_size, ...])``, handed to requests from a free list);
- a slot, per state layer: a conv state (conv_dim / tp) x (d_conv - 1) in the model's dtype and an SSM state
  (heads / tp) x head_dim x d_state in ``KvCacheConfig.mamba_ssm_cache_dtype``, whose default ``auto`` is the model's
  dtype; tp must divide both (asserted, no padding). Qwen3-Next maps onto it (d_state = key head dim, heads = value
  heads, groups = key heads);
- the budget: the profiling run holds the hybrid manager with its states allocated, so the peak it measures holds
  them: the KV pool is ``free_gpu_memory_fraction`` of what is left after them, and its bytes per token count the
  attention layers only.

Not read at a release tag (the repository's history was out of reach here): that this is 1.0-1.2's rule is inferred
from the pull requests' dates. The 1.3 release candidates keep the states in the KV pool's budget as a fixed cost of
``max_batch_size`` slots (``CppMambaHybridCacheManager``, then ``MambaHybridCacheManagerV2``): a tenth of the states'
bytes apart from this. ``mamba_ssm_cache_dtype: float32`` (NVIDIA's setting for Nemotron-3) is not an option here.
Pure Python.
"""

from __future__ import annotations

from typing import NamedTuple

from mha_cli.core.engine.state_slot import SLOT_KINDS, slot_parts_per_layer
from mha_cli.core.schemas import ModelSpec


class TrtllmStatePool(NamedTuple):
    """TensorRT-LLM's state pool on one rank."""

    slots: int
    """``max_batch_size``."""
    per_slot: int
    """One slot's conv and SSM states over the rank's state layers, bytes."""

    @property
    def bytes(self) -> int:
        """The pool's bytes on the rank."""
        return self.slots * self.per_slot

    def how(self) -> str:
        """The budget line's explanation."""
        return (
            f"TensorRT-LLM's Mamba cache: max_batch_size {self.slots:,} slots x {self.per_slot / 2**20:.1f} MiB (the"
            " model's dtype), held before the fraction is taken"
        )


def priced_here(model: ModelSpec) -> bool:
    """Whether TensorRT-LLM's state pool of ``model`` is priced here: a Mamba-2 or Gated DeltaNet hybrid."""
    return model.recurrent is not None and model.recurrent.kind in SLOT_KINDS


def trtllm_state_pool(model: ModelSpec, *, tp: int, state_layers: int, slots: int, dtype_bytes: int) -> TrtllmStatePool:
    """TensorRT-LLM's state pool on one rank: ``slots`` (its ``max_batch_size``) slots of ``state_layers`` layers,
    conv and SSM states in the model's dtype (``dtype_bytes`` a value)."""
    assert model.recurrent is not None
    conv, ssm = slot_parts_per_layer(
        model.recurrent, tp, conv_bytes=dtype_bytes, ssm_bytes=dtype_bytes, pad_groups=False
    )
    return TrtllmStatePool(slots=slots, per_slot=(conv + ssm) * state_layers)
