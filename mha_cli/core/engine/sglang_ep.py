"""SGLang's expert-parallel size must divide its experts: its MoE layer asserts ``(num_experts - num_shared_slots) %
self.moe_ep_size == 0`` (``srt/layers/moe/fused_moe_triton/layer.py``, read in the 0.5.13 wheel; its DeepEP, Mooncake
and NIXL dispatchers assert the same of their group), where vLLM spreads an uneven count, some ranks holding one more.
The experts counted there include the redundant copies ``--ep-num-redundant-experts`` allocates (from 0.4.6.post5, read
in every wheel: ``outputs/engine_flags/presence.json``): LMSYS ran DeepSeek-V3's 256 experts over EP72 with 32 of them, 288 / 72 = 4 a GPU, the ceil(256 /
72) the plan prices. So an uneven count takes that many copies on SGLang's line, and is refused before 0.4.6.post5.
Pure Python."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mha_cli.core.schemas import ModelSpec

REDUNDANT_FROM = (0, 4, 6, 5)
"""SGLang's first release read with ``--ep-num-redundant-experts``."""


def redundant_experts(model: ModelSpec, ep_size: int | None) -> int:
    """The redundant expert copies that make ``model``'s routed experts divide ``ep_size`` ranks (0 where they do)."""
    moe = model.block.moe
    if moe is None or not ep_size or ep_size == 1:
        return 0
    return -moe.n_experts % ep_size


def sglang_experts_uneven(model: ModelSpec, ep_size: int | None, release: tuple[int, ...] | None = None) -> str | None:
    """Why SGLang ``release`` (None: the latest) cannot spread ``model``'s routed experts over ``ep_size`` ranks: they
    do not divide them and it has no ``--ep-num-redundant-experts`` to add copies; None where it can."""
    extra = redundant_experts(model, ep_size)
    if not extra or release is None or release >= REDUNDANT_FROM:
        return None
    assert model.block.moe is not None
    return (
        f"SGLang before 0.4.6.post5 needs --ep-size to divide the {model.block.moe.n_experts} experts (here {ep_size};"
        f" from it --ep-num-redundant-experts {extra} makes them divide): give a layout whose ranks do, or a later"
        " release"
    )


def redundant_note(model: ModelSpec, ep_size: int) -> str:
    """What the redundant copies on SGLang's line are for."""
    assert model.block.moe is not None
    extra = redundant_experts(model, ep_size)
    return (
        f"the sglang line adds --ep-num-redundant-experts {extra}: SGLang needs its --ep-size {ep_size} to divide the"
        f" {model.block.moe.n_experts} experts, and {model.block.moe.n_experts + extra} do (as LMSYS's EP72 ran"
        " DeepSeek-V3 with 32); the plan prices the ceil of experts a GPU those copies fill, not their balancing (EPLB)"
    )
