"""An odd rotated width: RoPE turns a head's values in pairs, so each width it rotates must be even. ``mha check``
fires it as MHA095 (hard: ``mha verify``'s decoder cannot build it); ``mha kv`` says it among its warnings and still
prices the bytes (trial 392 #4: hidden_size 4,000 over 32 heads, head_dim 125, was priced without a word). A model
none of whose layers rotates (Jamba, Nemotron-H: ``core.engine.rope_cache.any_layer_rotates``) has no such width
(review 395 #1). Pure Python."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mha_cli.core.schemas import ModelSpec


def odd_rotary_width(model: ModelSpec) -> tuple[str, int] | None:
    """(what is wrong and what to change, the odd width) for the first RoPE ``model`` applies to an odd width: each
    RoPE (``rope``, and ``rope_local`` on its local layers) rotates int(width x partial_rotary_factor) values of a
    head's width (MLA: qk_rope_head_dim); None where every width is even, or no layer rotates."""
    from mha_cli.core.engine.rope_cache import any_layer_rotates

    rope, mla = model.rotary, model.attention.mla
    if rope is None or not any_layer_rotates(model):
        return None
    if mla is not None and mla.qk_rope_head_dim % 2:
        return (
            f"attention.mla.qk_rope_head_dim {mla.qk_rope_head_dim} is odd: RoPE turns values in pairs, so it must be"
            " even (DeepSeek-V3's is 64)",
            mla.qk_rope_head_dim,
        )
    base, field = (
        (mla.qk_rope_head_dim, "attention.mla.qk_rope_head_dim") if mla else (model.attention.head_dim, "attention.head_dim")
    )  # fmt: skip
    local = model.attention.rope_local if mla is None and model.n_local_layers else None
    for name, each in (("rope", rope), ("rope_local", local)):
        if each is None:
            continue
        width = int(base * each.partial_rotary_factor)  # as nn.rope.rotary_dim rounds it
        if width % 2:
            partial = f" x {name}.partial_rotary_factor {each.partial_rotary_factor}"
            return (
                f"{field} {base}{partial if each.partial_rotary_factor < 1 else ''} rotates {width} values a head:"
                f" RoPE turns them in pairs, so the width must be even: change {field.rpartition('.')[2]}"
                + (f" or {name}.partial_rotary_factor" if each.partial_rotary_factor < 1 else ""),
                width,
            )
    return None
