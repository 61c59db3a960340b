"""TensorRT-LLM's recurrent-state pool for a hybrid Mamba-2 or Gated DeltaNet model (Nemotron-H, Qwen3-Next) on its
PyTorch backend (1.x): the states live in a pool of their own beside the KV pool, sized by ``max_batch_size``.

Read in TensorRT-LLM's ``_torch/pyexecutor/mamba_cache_manager.py`` (``MambaCacheManager``, behind
``MambaHybridCacheManager``) and ``_torch/pyexecutor/_util.py`` (``KvCacheCreator``), as stored before the C++
managers of 2026 (PR #10540 and after):

- slots: ``max_batch_size x pp`` whatever the load (``max_num_sequences = max_batch_size * mapping.pp_size``;
  ``conv_states`` and ``ssm_states`` are ``torch.empty([layers, slots, ...])``, handed to requests from a free list;
  the oldest stored version, b35ac1b6, took ``max_batch_size`` alone);
- a slot, per state layer: a conv state (conv_dim / tp) x (d_conv - 1) in the model's dtype and an SSM state
  (heads / tp) x head_dim x d_state in ``KvCacheConfig.mamba_ssm_cache_dtype``, whose default ``auto`` is the
  checkpoint config's ``mamba_ssm_cache_dtype`` where it has one (``model_loader.resolve_ssm_cache_dtype``:
  Nemotron-3's float32), else the model's dtype; tp must divide the heads and the conv channels (asserted; mha rounds
  up instead). Qwen3-Next maps onto it (d_state = key head dim, heads = value heads, groups = key heads);
- the budget: the profiling run holds the hybrid manager with its states allocated, so the peak it measures holds
  them: the KV pool is ``free_gpu_memory_fraction`` of what is left after them, and its bytes per token count the
  attention layers only.

Not read at a release tag (the repository's history was out of reach here): that this is 1.0-1.2's rule is inferred
from the pull requests' dates. The 1.3 release candidates keep the states in the KV pool's budget as a fixed cost of
``max_batch_size`` slots (``CppMambaHybridCacheManager``, then ``MambaHybridCacheManagerV2``): a tenth of the states'
bytes apart from this. A ``mamba_ssm_cache_dtype`` set in the engine's options rather than the checkpoint is not an
option here. Pure Python.
"""

from __future__ import annotations

from typing import NamedTuple

from mha_cli.core.engine.state_slot import slot_parts_per_layer
from mha_cli.core.schemas import ModelSpec

TRTLLM_KINDS = ("gated_deltanet", "mamba2")
"""The mixers whose TensorRT-LLM state pool is priced here (``MambaCacheManager``'s shapes)."""


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
            f"TensorRT-LLM's Mamba cache: max_batch_size x pp = {self.slots:,} slots x {self.per_slot / 2**20:.1f}"
            " MiB, held before the fraction is taken"
        )


def priced_here(model: ModelSpec) -> bool:
    """Whether TensorRT-LLM's state pool of ``model`` is priced here: a Mamba-2 or Gated DeltaNet hybrid."""
    return model.recurrent is not None and model.recurrent.kind in TRTLLM_KINDS


def trtllm_state_pool(model: ModelSpec, *, tp: int, state_layers: int, slots: int, dtype_bytes: int) -> TrtllmStatePool:
    """TensorRT-LLM's state pool on one rank: ``slots`` (its ``max_batch_size x pp``) slots of ``state_layers``
    layers, the conv state in the model's dtype (``dtype_bytes`` a value), the SSM state in the config's
    (``RecurrentSpec.state_dtype``: fp32 where it says so), else the model's."""
    state = model.recurrent
    assert state is not None
    ssm_bytes = 4 if state.state_dtype == "fp32" else dtype_bytes
    conv, ssm = slot_parts_per_layer(state, tp, conv_bytes=dtype_bytes, ssm_bytes=ssm_bytes, pad_groups=False)
    return TrtllmStatePool(slots=slots, per_slot=(conv + ssm) * state_layers)
