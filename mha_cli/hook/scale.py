"""The hook's scaled copy of a design: the same attention geometry, narrower, and N layers deep.

Kept from the design: the variant (MHA/GQA/MQA/MLA), the number of query heads and of KV heads (so
the query-to-KV ratio), the position scheme (RoPE, its context scaling dropped and a base above 10,000 lowered
where the heads narrow, ``HOOK_ROPE_BASE``; or learned positions),
per-head q/k norms, biases, the norm and MLP types, tied embeddings, sliding windows.
Scaled: the depth (the hook's N layers), the vocabulary and widths to the task's, and the head width
(MLA: its latent ranks and nope / rope / value widths, by one factor) only as far as ``HookSize``'s
cap on n_heads x head_dim asks, so that the copy trains in minutes on a CPU. A mixture-of-experts MLP
becomes one dense MLP (routing plays no part in induction). Every change is written down as a
sentence in ``ScaledCopy.changes``.

Pure Python (no torch): the CLI can build and check the copy before it imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mha_cli.core.schemas import ModelSpec
from mha_cli.hook.sizes import HookSize

MIN_MLA_ROPE = 8
"""MLA's decoupled RoPE key keeps at least 8 rotated values (4 frequencies): it alone carries position, and the
previous-token head that induction builds on needs a high and a low frequency."""
MIN_MLA_WIDTH = 8
"""MLA's per-head nope and value widths keep at least 8 values: DeepSeek-V3's copy (128 heads) narrowed to 4 nope
and 5 value values with a rank-21 latent reached 53% in 1,500 steps; with 8, 8 and rank 32 it passed in 450."""


@dataclass(frozen=True)
class ScaledCopy:
    """The spec the hook builds, and what was changed from the design (one sentence each)."""

    spec: ModelSpec
    changes: list[str]


def scaled_copy(design: ModelSpec, layers: int, size: HookSize) -> ScaledCopy:
    """The ``layers``-deep copy of ``design`` that the hook trains with ``size``."""
    if layers < 1:
        raise ValueError(f"the hook needs at least 1 layer, not {layers}")
    fields = design.model_dump()
    changes = [f"layers: {design.n_layers} -> {layers} (the hook's depth)"]
    fields.update(name=f"{design.name} (hook copy)", n_layers=layers)
    fields["embeddings"]["vocab_size"] = size.vocab_size
    changes.append(f"vocab_size: {design.embeddings.vocab_size:,} -> {size.vocab_size} (the induction task's tokens)")
    d_model = min(design.d_model, size.d_model)
    fields["d_model"] = d_model
    if d_model != design.d_model:
        changes.append(f"d_model: {design.d_model:,} -> {d_model} (residual width for a {size.seq_len}-token task)")
    changes += _scale_mlp(design, fields, size)
    changes += (
        _scale_mla(design, fields, size) if design.attention.mla is not None else _scale_heads(design, fields, size)
    )
    changes += _fit_positions(design, fields, layers, size)
    return ScaledCopy(spec=ModelSpec.model_validate(fields), changes=changes)


def _scale_mlp(design: ModelSpec, fields: dict[str, Any], size: HookSize) -> list[str]:
    if design.block.moe is not None:
        moe = design.block.moe
        fields["block"].update(moe=None, d_ff=size.d_ff)
        return [
            f"MLP: mixture of {moe.n_experts} experts ({moe.n_active_experts} active) -> one dense MLP of width"
            f" {size.d_ff} (routing plays no part in induction)"
        ]
    d_ff = min(design.block.d_ff, size.d_ff)
    fields["block"]["d_ff"] = d_ff
    return [] if d_ff == design.block.d_ff else [f"d_ff: {design.block.d_ff:,} -> {d_ff}"]


def _width_reason(design: ModelSpec, size: HookSize, floor: int) -> str:
    return (
        f"{design.attention.n_heads} heads x head width capped at {size.max_query_width} values, each head at least {floor}"
        " wide (the floor wins where both cannot hold), so the copy trains in minutes on a CPU"
    )


def _scale_heads(design: ModelSpec, fields: dict[str, Any], size: HookSize) -> list[str]:
    """MHA/GQA/MQA: same head counts, head_dim down to the cap (a multiple of 8, at least ``min_head_dim``)."""
    cap = max(size.min_head_dim, size.max_query_width // design.attention.n_heads // 8 * 8)
    head_dim = min(design.attention.head_dim, cap)
    fields["attention"]["head_dim"] = head_dim
    kept = f"heads kept: {design.attention.n_heads} query, {design.attention.n_kv_heads} KV ({design.attention.variant}, {design.attention.q_per_kv} per KV head)"
    if head_dim == design.attention.head_dim:
        return [kept, f"head_dim: {head_dim} kept"]
    return [
        kept,
        f"head_dim: {design.attention.head_dim} -> {head_dim} ({_width_reason(design, size, size.min_head_dim)})",
    ]


def _scale_mla(design: ModelSpec, fields: dict[str, Any], size: HookSize) -> list[str]:
    """MLA: nope, rope and value widths and the latent ranks shrink by one factor, to the query-width cap."""
    assert design.attention.mla is not None
    mla = design.attention.mla
    target = max(size.min_head_dim, size.max_query_width // design.attention.n_heads // 2 * 2)
    kept = f"heads kept: {design.attention.n_heads} query heads over one shared latent (MLA)"
    if mla.qk_head_dim <= target:
        return [kept, f"MLA widths kept (q/k head width {mla.qk_head_dim})"]
    factor = target / mla.qk_head_dim
    rope = min(mla.qk_rope_head_dim, _even(mla.qk_rope_head_dim * factor, floor=MIN_MLA_ROPE))
    nope = max(MIN_MLA_WIDTH, target - rope)
    value = max(MIN_MLA_WIDTH, round(mla.v_head_dim * factor))
    rank = min(mla.kv_lora_rank, max(size.min_latent_rank, round(mla.kv_lora_rank * factor)))
    q_rank = None
    if mla.q_lora_rank is not None:
        q_rank = min(mla.q_lora_rank, max(size.min_latent_rank, round(mla.q_lora_rank * factor)))
    fields["attention"]["mla"] = {
        **fields["attention"]["mla"],
        "qk_nope_head_dim": nope,
        "qk_rope_head_dim": rope,
        "v_head_dim": value,
        "kv_lora_rank": rank,
        "q_lora_rank": q_rank,
    }
    fields["attention"]["head_dim"] = nope + rope
    changes = [
        kept,
        f"MLA q/k head width: {mla.qk_nope_head_dim} nope + {mla.qk_rope_head_dim} rope -> {nope} nope + {rope} rope,"
        f" value width {mla.v_head_dim} -> {value} ({_width_reason(design, size, MIN_MLA_ROPE + MIN_MLA_WIDTH)})",
        f"MLA kv_lora_rank: {mla.kv_lora_rank} -> {rank} (the same factor {factor:.3g}, at least"
        f" {size.min_latent_rank})",
    ]
    if mla.q_lora_rank is not None:
        changes.append(f"MLA q_lora_rank: {mla.q_lora_rank} -> {q_rank}")
    return changes


HOOK_ROPE_BASE = 10_000.0
"""The largest RoPE base a copy with narrowed heads keeps (RoPE's own default, Llama 2's). A head narrowed to 8
values turns 4 frequencies, theta^(-2i/8): at Llama 3's 500,000 they are 1, 0.038, 0.0014 and 0.00005 radians a
position, three of them nearly still over the task's 40 positions, where the design's 128-wide head has 18 turning
faster than 1/40. Measured (``mha verify CONFIG --hook``, CPU, seed 0): Llama-3-8B's copy (32 heads of 128 -> 8)
11.5% after 1,500 steps at 500,000, 18.9% at 2.27 (the design's first four frequencies), 98.3% after 575 at
10,000; a 1B design's (24 heads of 64 -> 8) 10.6% at 500,000, 99.2% after 425 at 10,000."""


def _rotated_width(spec: dict[str, Any]) -> float | None:
    """Values a head rotates in a model dump: MLA's decoupled key, else head_dim x partial_rotary_factor."""
    attention = spec["attention"]
    if attention.get("mla"):
        return attention["mla"]["qk_rope_head_dim"]
    rope = attention.get("rope") or {}
    return (attention.get("head_dim") or spec["d_model"] // attention["n_heads"]) * rope.get("partial_rotary_factor", 1)


def _fit_rope_base(design: ModelSpec, fields: dict[str, Any]) -> list[str]:
    """A base above ``HOOK_ROPE_BASE`` lowered to it where the copy's heads rotate fewer values than the design's."""
    rope = design.attention.rope
    narrowed = _rotated_width(fields) < (_rotated_width(design.model_dump()) or 0)
    if rope is None or rope.theta <= HOOK_ROPE_BASE or not narrowed:
        return []
    fields["attention"]["rope"] = {**fields["attention"]["rope"], "theta": HOOK_ROPE_BASE}
    return [
        f"RoPE base theta {rope.theta:,.0f} -> {HOOK_ROPE_BASE:,.0f}: the copy's narrowed heads turn too few"
        " frequencies for a larger base to move within the task's sequences (a base acts on long-range positions)"
    ]


def _fit_positions(design: ModelSpec, fields: dict[str, Any], layers: int, size: HookSize) -> list[str]:
    """Learned positions cover the task; sliding windows kept (widened only if they would hide the first copy); a
    large RoPE base lowered where the heads were narrowed (``HOOK_ROPE_BASE``)."""
    changes = _fit_rope_base(design, fields)
    if design.attention.rope is not None and design.attention.rope.scaling is not None:
        # Context extension (YaRN, llama3, linear) matters past the pre-training context, far beyond the task; on
        # heads this narrow YaRN's frequencies and attention factor kept gpt-oss-20b's copy from learning at all.
        fields["attention"]["rope"] = {**fields["attention"]["rope"], "scaling": None}  # the base as set above
        changes.append(
            f"RoPE {design.attention.rope.scaling.type} scaling dropped: it acts beyond the pre-training context, not"
            f" on {size.seq_len}-token sequences"
        )
    if design.embeddings.positions:
        fields["embeddings"]["positions"] = (
            size.seq_len + design.embeddings.position_offset
        )  # OPT's 2 rows before position 0
        changes.append(f"learned positions: {design.embeddings.positions:,} -> {size.seq_len} (the task's length)")
    if design.layers.pattern:  # the copy's layers are the design's first ones, of the same kinds
        fields["layers"]["pattern"] = [design.layer_kind(i) for i in range(layers)]
    if design.layers.sliding_window is not None:
        if design.layers.sliding_window < size.seq_len:
            fields["layers"]["sliding_window"] = size.seq_len
            changes.append(
                f"sliding window: {design.layers.sliding_window} -> {size.seq_len} tokens (a shorter window would hide the"
                " segment's first occurrence, which induction must read)"
            )
        else:
            changes.append(
                f"sliding window of {design.layers.sliding_window:,} tokens kept (no effect on {size.seq_len}-token sequences)"
            )
    return changes


def _even(value: float, *, floor: int) -> int:
    """``value`` rounded down to an even integer, at least ``floor``."""
    return max(floor, int(value) // 2 * 2)
