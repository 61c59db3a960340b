"""The recommender: parameter budget + context + target -> an attention design, with its reasons.

Steps, in the skill's order, each citing the rules of ``core.rules.catalog`` it applies:

1. shape from the budget (``shape``): width (MHA001), MLP (MHA003), vocabulary (MHA004), depth
   (MHA002, at most ``MAX_LAYERS``); a budget no width can meet is refused with the range that
   works (``budget``: MHA093, MHA094);
2. head geometry: head_dim (MHA010), n_heads (MHA011), KV heads and tensor parallelism (MHA024);
3. the variant (``variant``: MHA020-MHA023) under the hard rules (MHA090-MHA092), then the KV-cache
   estimate, the memory plan and roofline on the target, flagged when they do not fit (MHA025,
   MHA026, with the ways out of ``core.fit``); a variant switch (MHA022) re-solves the depth and
   re-records MHA002, so the trace ends on the final design;
4. the MLA latent rank when MLA is chosen (MHA030);
5. initialisation (MHA040), biases (MHA041) and the testability hook (MHA050); the alternatives
   and the variant's reason (``explain``).

Every KV figure comes from ``kv_footprint``, every parameter count from ``count_params``.
"""

from __future__ import annotations

from dataclasses import dataclass

from mha_cli.core.fit import flag_fit
from mha_cli.core.kv import KvFootprint
from mha_cli.core.memory import MemoryPlan, weight_bytes
from mha_cli.core.params import count_params
from mha_cli.core.recommend.budget import refuse_budget
from mha_cli.core.recommend.context import Context
from mha_cli.core.recommend.explain import alternatives, init_plan, variant_reason
from mha_cli.core.recommend.result import (
    PRIORITIES,
    Alternative,
    InitPlan,
    ModelSummary,
    Priority,
    RecommendRequest,
    RecommendResult,
    TestHook,
)
from mha_cli.core.recommend.shape import (
    build_model,
    head_dim_for,
    ideal_width,
    mlp_width,
    record_depth,
    solve_layers,
    vocab_for,
    widths,
)
from mha_cli.core.recommend.variant import Candidate, candidate_at, fit_variant
from mha_cli.core.roofline import estimate_roofline
from mha_cli.core.rules import catalog as C
from mha_cli.core.schemas import MhaConfig, ModelSpec, Variant

__all__ = [
    "PRIORITIES", "Alternative", "InitPlan", "ModelSummary", "Priority", "RecommendRequest", "RecommendResult",
    "TestHook", "build_model", "head_dim_for", "ideal_width", "mlp_width", "recommend",
]  # fmt: skip


@dataclass(frozen=True)
class Design:
    """The model the rules settled on, its variant and the tensor-parallel degree its heads split over."""

    model: ModelSpec
    variant: Variant
    tp: int


def choose_shape(ctx: Context, budget: int, vocab: int, tied: bool) -> tuple[Candidate, ModelSpec]:
    """MHA001-MHA004, MHA010, MHA011: the first width on the ladder whose depth lands within the budget,
    its findings recorded; MHA093/MHA094 when none does."""
    r = ctx.request
    for d_model in widths(ctx, budget):
        candidate = candidate_at(ctx, d_model, budget, vocab, tied)
        if candidate is None:
            continue
        model = solve_layers(budget, candidate.make)
        if model is None:
            continue
        head_dim, n_heads = model.dim_per_head, model.n_heads
        how = "fixed by --d-model" if r.d_model else f"ideal {ideal_width(budget):,.0f} snapped to the ladder"
        ctx.trace.fire("MHA001", f"d_model {d_model} ({how})", d_model=d_model, ideal=round(ideal_width(budget)))
        ctx.trace.fire(
            "MHA004",
            f"vocabulary {vocab:,}, {'tied' if tied else 'untied'} output head",
            vocab_size=vocab,
            tied_embeddings=tied,
        )
        ctx.trace.fire("MHA003", f"SwiGLU d_ff {model.d_ff} = {C.FFN_MULTIPLIER} x {d_model}", d_ff=model.d_ff)
        ctx.trace.fire("MHA010", f"head_dim {head_dim} at width {d_model}", head_dim=head_dim)
        ctx.trace.fire("MHA011", f"{n_heads} heads = {d_model} / {head_dim}", n_heads=n_heads)
        ctx.trace.findings.extend(candidate.trace.findings)
        record_depth(ctx.trace, model, budget)
        return candidate, model
    refuse_budget(ctx, budget, vocab, tied)


def flag_unfit(ctx: Context, design: Design, kv: KvFootprint, plan: MemoryPlan | None, total_params: int) -> list[str]:
    """rule MHA025 (the weights) or rule MHA026 (the cache): a plan that does not fit is flagged with the ways out
    (``core.fit.flag_fit``); a cache that does not fit also offers priority inference when the rules were not free
    to shrink it."""
    if plan is None or ctx.target is None:
        return []
    r = ctx.request
    ways = flag_fit(ctx.trace, design.model, ctx.target, ctx.deployment(design.tp), plan, kv, total_params)
    if not plan.fits and plan.weights_fit and r.priority != "inference" and r.variant is None:
        ways.append("--priority inference (lets the rules shrink the cache: fewer KV heads, MLA)")
    return ways


def recommend(request: RecommendRequest) -> RecommendResult:
    """Run the skill on ``request``: see the module docstring for the steps."""
    ctx = Context.of(request)
    budget = request.params
    vocab, tied = vocab_for(budget, request.vocab_size)

    candidate, provisional = choose_shape(ctx, budget, vocab, tied)
    model, variant = fit_variant(ctx, budget, candidate, provisional)
    design = Design(model=model, variant=variant, tp=candidate.tp)
    if model.mla is not None:
        ctx.trace.fire(
            "MHA030",
            f"latent {model.mla.kv_lora_rank} + RoPE key {model.mla.qk_rope_head_dim} ="
            f" {model.mla.latent_dim} values per token per layer",
            kv_lora_rank=model.mla.kv_lora_rank,
            qk_rope_head_dim=model.mla.qk_rope_head_dim,
            q_lora_rank=model.mla.q_lora_rank,
        )

    params = count_params(model)
    kv = ctx.footprint(model, design.tp)
    memory = ctx.plan(model, design.tp, kv, total_params=params.total)
    roofline = None
    if memory is not None and ctx.target is not None:
        roofline = estimate_roofline(
            model, ctx.target, params=params, weight_dtype=request.weight_dtype, kv=kv, plan=memory
        )
    ways_out = flag_unfit(ctx, design, kv, memory, params.total)

    init = init_plan(ctx, model)
    ctx.trace.fire("MHA041", "no biases on Q, K, V, O", qkv_bias=False, o_bias=False)
    hook = TestHook(
        task="induction",
        pattern="A B ... A -> B",
        n_layers=2,
        n_heads=model.n_heads,
        n_kv_heads=model.kv_heads,
        head_dim=model.dim_per_head,
        variant=variant,
        accuracy_threshold=C.TEST_ACCURACY,
        how="train a 2-layer copy of this attention on random token sequences with a repeated segment; "
        "predict the token after the second A (run `mha verify CONFIG`)",
    )
    ctx.trace.fire("MHA050", f"2-layer induction task at >= {C.TEST_ACCURACY:.0%}", n_layers=2)

    rows = alternatives(ctx, model, design.tp, budget)
    reason = variant_reason(ctx, model, kv, memory, rows)
    summary = ModelSummary(
        d_model=model.d_model, n_layers=model.n_layers, n_heads=model.n_heads, n_kv_heads=model.kv_heads,
        head_dim=model.dim_per_head, variant=variant, total_params=params.total, d_ff=model.d_ff,
        vocab_size=model.vocab_size, tied_embeddings=model.tied_embeddings,
        kv_lora_rank=model.mla.kv_lora_rank if model.mla else None,
    )  # fmt: skip
    notes = [reason, "rules fired: " + ", ".join(ctx.trace.ids)]
    if request.variant is not None:
        notes.append(f"{C.EXPLICIT_VARIANT_NOTE}{request.variant}")  # `mha check` honours it (MHA091)
    config = MhaConfig(model=model, deployment=ctx.deployment(design.tp), notes=notes)
    return RecommendResult(
        request=request,
        model=summary,
        variant_reason=reason,
        budget_deviation=(params.total - budget) / budget,
        params=params,
        weight_bytes=weight_bytes(params.total, request.weight_dtype),
        kv=kv,
        memory=memory,
        roofline=roofline,
        fits=memory.fits if memory else None,
        ways_out=ways_out,
        init=init,
        qkv_bias=False,
        o_bias=False,
        testability=hook,
        alternatives=rows,
        trace=ctx.trace.findings,
        rules_fired=ctx.trace.ids,
        config=config,
    )
