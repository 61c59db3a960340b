"""SGLang's expert-parallel size must divide the routed experts: its MoE layer asserts ``(num_experts -
num_shared_slots) % self.moe_ep_size == 0`` (``srt/layers/moe/fused_moe_triton/layer.py``, read in the 0.5.13 wheel;
its DeepEP, Mooncake and NIXL dispatchers assert the same of their group), where vLLM spreads an uneven count, some
ranks holding one more. Pure Python."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mha_cli.core.schemas import ModelSpec


def sglang_experts_uneven(model: ModelSpec, ep_size: int | None) -> str | None:
    """Why SGLang's line cannot spread ``model``'s routed experts over ``ep_size`` ranks: its MoE layers assert that
    the ranks divide them (``num_experts % moe_ep_size == 0``; vLLM spreads an uneven count); None where they do."""
    moe = model.block.moe
    if moe is None or not ep_size or ep_size == 1 or moe.n_experts % ep_size == 0:
        return None
    return (
        f"SGLang needs --ep-size to divide the {moe.n_experts} experts (here {ep_size}): give a layout whose ranks do"
    )
