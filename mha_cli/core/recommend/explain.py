"""What the result explains beside the design: the alternatives at its shape, the variant's reason and the
initialisation plan (MHA040)."""

from __future__ import annotations

import math

from mha_cli.core.kv import KvFootprint, tp_splits_evenly
from mha_cli.core.memory import MemoryPlan
from mha_cli.core.params import count_params
from mha_cli.core.quantities import format_bytes
from mha_cli.core.recommend.context import Context
from mha_cli.core.recommend.result import Alternative, InitPlan
from mha_cli.core.recommend.variant import QUALITY_SOURCES, quality_risk
from mha_cli.core.rules import catalog as C
from mha_cli.core.rules.engine import counted
from mha_cli.core.schemas import ModelSpec
from mha_cli.core.variants import gqa_kv_heads_choices, variant_options


def alternatives(ctx: Context, model: ModelSpec, tp: int, budget: int) -> list[Alternative]:
    """The design's shape under ``variants.variant_options`` (MHA, GQA, MQA, MLA: the rows ``mha kv`` shows),
    each priced per device on the target's plan; options this tp cannot split are left out."""
    r = ctx.request
    rows = []
    for option in variant_options(model):
        spec = option.model
        if not tp_splits_evenly(spec.n_heads, spec.kv_heads, tp):
            continue
        kv = ctx.footprint(spec, tp)
        total_params = count_params(spec).total
        plan = ctx.plan(spec, tp, kv, total_params=total_params)
        notes = []
        if (
            option.variant == "MHA"
            and spec.n_heads > C.MHA_LONG_CONTEXT_MAX_HEADS
            and r.seq_len > C.MHA_LONG_CONTEXT_TOKENS
        ):
            notes.append("only if asked (MHA091)")
        if option.variant == "MLA" and budget < C.MLA_MIN_PARAMS:
            notes.append("only if asked (MHA092)")
        rows.append(
            Alternative(
                label=option.label, variant=option.variant, n_kv_heads=spec.kv_heads, is_recommended=option.is_current,
                bytes_per_token=kv.bytes_per_token, bytes_per_sequence=kv.bytes_per_sequence,
                kv_bytes_per_device=plan.kv_bytes_per_device if plan else kv.total_bytes,
                max_sequences=plan.max_sequences if plan else None, total_params=total_params,
                quality_risk=quality_risk(option.variant, spec.q_per_kv),
                quality_source=QUALITY_SOURCES[option.variant], note="; ".join(notes),
            )
        )  # fmt: skip
    return rows


def variant_reason(
    ctx: Context, model: ModelSpec, kv: KvFootprint, plan: MemoryPlan | None, rows: list[Alternative]
) -> str:
    """One sentence tying the variant to the KV-cache limits, priced against MHA (or, for MHA, against GQA)."""
    r = ctx.request
    per_seq = format_bytes(kv.bytes_per_sequence)
    fit = ""
    if plan is not None and plan.weights_fit:
        verb = "fits" if plan.max_sequences == 1 else "fit"
        fit = f"; {counted(plan.max_sequences, 'sequence')} of this length {verb} beside the weights on {r.target}"
    elif plan is not None:
        fit = f"; the weights alone do not fit one device of {r.target}"
    if model.variant == "MHA":
        return _mha_reason(ctx, model, per_seq, rows) + fit + "."
    mha = next(a for a in rows if a.variant == "MHA")
    ratio = mha.bytes_per_token / kv.bytes_per_token
    what = {
        "GQA": f"GQA-{model.kv_heads} ({model.q_per_kv} query heads per KV head, quality risk"
        f" {quality_risk('GQA', model.q_per_kv)})",
        "MQA": f"MQA (one shared KV head, quality risk {quality_risk('MQA', model.q_per_kv)})",
        "MLA": f"MLA (a {model.mla.latent_dim if model.mla else 0}-value latent per token per layer, more FLOPs)",
    }[model.variant or "GQA"]
    asked = " (asked for with --variant)" if r.variant is not None else ""
    return (
        f"{what}{asked} divides the KV cache by {ratio:.1f} versus MHA, to {per_seq} per {r.seq_len:,}-token"
        f" sequence{fit}."
    )


def _mha_reason(ctx: Context, model: ModelSpec, per_seq: str, rows: list[Alternative]) -> str:
    """Why MHA, with its cache priced against the GQA and MLA rows of the alternatives."""
    r = ctx.request
    if r.variant == "MHA":
        why = "asked for with --variant MHA"
    elif model.n_heads <= C.FEW_HEADS:
        why = f"{model.n_heads} heads, too few for sharing K/V to save much"
    elif not gqa_kv_heads_choices(model.n_heads):
        why = f"{model.n_heads} heads have no GQA divisor"
    else:
        why = "priority training at short context keeps the reference quality"
    cheaper = [a for a in rows if a.variant in ("GQA", "MLA")]
    prices = [f"{format_bytes(a.bytes_per_sequence)} with {a.label}" for a in cheaper]
    priced = f"; the same shape would cache {', '.join(prices)} (see the alternatives)" if prices else ""
    return f"MHA ({why}): {model.n_heads} KV heads cache {per_seq} per {r.seq_len:,}-token sequence{priced}"


def init_plan(ctx: Context, model: ModelSpec) -> InitPlan:
    """MHA040: Xavier normal for the projections; O scaled by 1/sqrt(2 n_layers)."""
    d = model.d_model

    def xavier(fan_in: int, fan_out: int) -> float:
        return math.sqrt(2.0 / (fan_in + fan_out))

    depth = 1 / math.sqrt(2 * model.n_layers)
    if model.mla is not None:
        mla = model.mla
        std = {
            "q": xavier(d, model.n_heads * mla.qk_head_dim),
            "kv_down": xavier(d, mla.latent_dim),
            "kv_up": xavier(mla.kv_lora_rank, model.n_heads * (mla.qk_nope_head_dim + mla.v_head_dim)),
            "o": xavier(model.n_heads * mla.v_head_dim, d) * depth,
        }
    else:
        q_width, kv_width = model.attention_width, model.kv_heads * model.dim_per_head
        std = {
            "q": xavier(d, q_width),
            "k": xavier(d, kv_width),
            "v": xavier(d, kv_width),
            "o": xavier(q_width, d) * depth,
        }
    ctx.trace.fire(
        "MHA040",
        f"Xavier normal; O scaled by 1/sqrt(2 x {model.n_layers})",
        **{f"{name}_std": value for name, value in std.items()},
    )
    return InitPlan(scheme="xavier-normal, O scaled by 1/sqrt(2 n_layers)", std=std)
