"""The recommender: parameter budget + context + target -> an attention design, with its reasons.

A pipeline of stages, each handing the next a value and citing the rules of ``core.rules.catalog`` it applies:

1. ``width``: width and depth together, from the budget (MHA001-MHA005, MHA010, MHA011; MoE budgets MHA007);
   a budget no width can meet is refused with the range that works (``budget``: MHA093, MHA094);
2. ``tradeoff``: every attention candidate at that width (MHA, GQA at each KV-head count, MQA, MLA) solved for
   depth, placed at the smallest tensor-parallel degree that fits (MHA024) and priced on the target; the pick
   is the lowest quality risk that meets the priority's goal (MHA020-MHA022, MHA027, under MHA091/MHA092);
3. the memory plan and roofline of the pick, flagged when they do not fit (MHA025, MHA026, ``core.fit``); the
   MLA latent (MHA030);
4. ``explain``: initialisation (MHA040), biases (MHA041), the testability hook (MHA050), the alternatives and
   the variant's reason.

Every KV figure comes from ``kv_footprint``, every parameter count from ``count_params``.
"""

from __future__ import annotations

from mha_cli.core.cost.latency import latency_or_none
from mha_cli.core.errors import MhaError
from mha_cli.core.fit import flag_fit, with_layout_ways
from mha_cli.core.kv import KvFootprint
from mha_cli.core.memory import LayoutError, MemoryPlan, tp_spans_nodes_note
from mha_cli.core.params import count_params
from mha_cli.core.quantities import format_bytes
from mha_cli.core.recommend.context import Context
from mha_cli.core.recommend.explain import alternatives, init_plan, variant_reason
from mha_cli.core.recommend.hf_config import layer_types
from mha_cli.core.recommend.moe import MoeBudget
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
from mha_cli.core.recommend.rope_base import BASE_FLOOR, RopeBase, rope_base
from mha_cli.core.recommend.shape import build_model, head_dim_for, ideal_depth, mlp_width, vocab_for
from mha_cli.core.recommend.tradeoff import Option, trade_off
from mha_cli.core.recommend.width import choose_shape, node_split_warning
from mha_cli.core.roofline import estimate_roofline
from mha_cli.core.rules import catalog as C
from mha_cli.core.rules.engine import counted
from mha_cli.core.schemas import MhaConfig, ModelSpec
from mha_cli.core.targets import bf16_notes, resolve_target
from mha_cli.core.ways import FLAG_FIELDS, Verdict, WayOut, accepted, flag_updates, settle, split_way
from mha_cli.core.weight_bytes import model_weight_bytes

__all__ = [
    "PRIORITIES", "Alternative", "InitPlan", "ModelSummary", "Priority", "RecommendRequest", "RecommendResult",
    "TestHook", "build_model", "head_dim_for", "hook_command", "ideal_depth", "mlp_width", "recommend",
]  # fmt: skip

HOOK_CONFIG_PLACEHOLDER = "CONFIG"


def hook_command(config_path: str | None = None) -> str:
    """MHA050: the command that trains the 2-layer copy on induction and checks the threshold, the path quoted for a
    shell where it needs it (a space: trial 334 #11)."""
    if config_path is None:
        return f"mha verify {HOOK_CONFIG_PLACEHOLDER} --hook"
    import shlex  # only with --out: not on every run's start-up

    return f"mha verify {shlex.quote(config_path)} --hook"


def flag_unfit(ctx: Context, chosen: Option, kv: KvFootprint, plan: MemoryPlan | None, total_params: int) -> list[str]:
    """rule MHA025 (the weights) or rule MHA026 (the cache): a plan that does not fit is flagged with the ways out
    (``core.fit.flag_fit``); a cache that does not fit also offers priority inference when the rules were not free
    to shrink it."""
    if plan is None or ctx.target is None:
        return []
    r = ctx.request
    ways = flag_fit(ctx.trace, chosen.model, ctx.target, ctx.deployment(chosen.tp), plan, kv, total_params)
    if not plan.fits and plan.weights_fit and r.priority != "inference" and r.variant is None:
        ways.append("--priority inference (lets the rules shrink the cache: fewer KV heads, MLA)")
    return ways


REQUEST_FLAGS: dict[str, tuple[str, type]] = {**FLAG_FIELDS, "--priority": ("priority", str)}
"""The request field each flag a way out names sets: the deployment's (same names on the request) and the priority."""


def pasted(request: RecommendRequest, words: list[str]) -> RecommendRequest:
    """``request`` with the flags of a way out set, as the options would set them."""
    return request.model_copy(update=flag_updates(words, REQUEST_FLAGS))


def _rerun(request: RecommendRequest, words: list[str]) -> Verdict:
    """A way out as a user pasting it gets it: the recommender run again with its flags (it may place or shape the
    design anew: the smallest tp that fits, another attention under --priority inference); passes when the plan
    fits, else carries the ways out from there."""
    try:
        again = recommend(pasted(request, words), price_ways=False)
    except MhaError as exc:
        return Verdict(False, f"refused: {exc.message}", None, [])
    label = next((a.label for a in again.alternatives if a.is_recommended), again.model.variant)
    plan = again.memory
    if plan is None:
        return Verdict(False, "no target to price it on", None, [])
    layout = f"tp {plan.tp}" + (f" x {plan.replicas} replicas" if plan.replicas > 1 else "")
    figure = (
        f"{label} at {layout}: {counted(plan.max_sequences, 'sequence')} of {again.request.seq_len:,} tokens at once;"
        f" weights {format_bytes(plan.weight_bytes_per_device)} per device"
    )
    return Verdict(bool(again.fits), figure, plan.max_sequences, [way.text for way in again.ways_out])


def _context(request: RecommendRequest) -> Context:
    """``Context.of``; a --tp the target's devices refuse names the ways out that the recommender accepts."""
    try:
        return Context.of(request)
    except LayoutError as exc:
        assert request.tp is not None and request.target is not None
        judge = accepted(lambda words: recommend(pasted(request, words), price_ways=False))
        raise with_layout_ways(exc, resolve_target(request.target), request.tp, judge) from None


def _sixteen_bits_for_the_target(request: RecommendRequest) -> RecommendRequest:
    """``request`` with its bf16 defaults (weights, cache) made fp16 on a target without bf16 (V100, T4): the same
    bytes, and a design --out writes that the device runs; a bf16 asked for stays, and is warned of (``_warnings``)."""
    if request.target is None:
        return request
    if resolve_target(request.target).target.bf16_native:
        return request
    update = {name: "fp16" for name in ("weight_dtype", "kv_dtype")
              if name not in request.model_fields_set and getattr(request, name) == "bf16"}  # fmt: skip
    return request.model_copy(update=update) if update else request


def _warnings(ctx: Context, request: RecommendRequest, tp: int, model: ModelSpec) -> list[str]:
    """What the short report prints above the design: bf16 on a target without it, tp spanning the target's nodes,
    a KV format the engine has no cache of (int8, int4 on vLLM: the figures are that format's bytes, not a deployment
    it runs); also among the memory plan's notes, which only --explain and --json show."""
    if ctx.target is None:
        return []
    from mha_cli.core.engine.plan import deployment_kv_format_note

    found = bf16_notes(ctx.target.target, weight_dtype=request.weight_dtype, kv_dtype=request.kv_dtype)
    spans = tp_spans_nodes_note(tp, ctx.target)
    no_such_cache = deployment_kv_format_note(ctx.deployment(tp), model)  # FA2's head_dim 64 and sinks
    return [*found, *(note for note in (spans, no_such_cache) if note is not None)]


def summarise(model: ModelSpec, total: int, active: int) -> ModelSummary:
    mla, moe = model.attention.mla, model.block.moe
    return ModelSummary(
        d_model=model.d_model, n_layers=model.n_layers, n_heads=model.attention.n_heads,
        n_kv_heads=None if mla else model.attention.n_kv_heads, head_dim=None if mla else model.attention.head_dim,
        variant=model.attention.variant or "GQA", total_params=total, active_params=active, d_ff=model.block.d_ff,
        vocab_size=model.embeddings.vocab_size, tied_embeddings=model.embeddings.tied,
        kv_lora_rank=mla.kv_lora_rank if mla else None, qk_rope_head_dim=mla.qk_rope_head_dim if mla else None,
        layer_types=layer_types(model),
        sliding_window=model.layers.sliding_window,
        experts=moe.n_experts if moe else None, top_k=moe.n_active_experts if moe else None,
        d_ff_expert=moe.d_ff_expert if moe else None,
        shared_experts=moe.n_shared_experts if moe else None, dense_layers=moe.n_dense_layers if moe else None,
    )  # fmt: skip


def _with_rope_base(model: ModelSpec, seq_len: int) -> tuple[ModelSpec, RopeBase | None]:
    """``model`` with MHA042's RoPE base for ``seq_len`` (``core.recommend.rope_base``); an MLA design, which the
    bound does not cover, keeps the floor (None)."""
    if model.attention.mla is not None or model.attention.rope is None:
        return model, None
    base = rope_base(seq_len, model.attention.head_dim)
    rope = model.attention.rope.model_copy(update={"theta": base.theta})
    return model.model_copy(update={"attention": model.attention.model_copy(update={"rope": rope})}), base


def _rope_base_words(model: ModelSpec, base: RopeBase | None, seq_len: int) -> str:
    """MHA042's trace line: the base and the bound's row it was read at."""
    theta = f"RoPE base theta {model.rotary.theta:,.0f}" if model.rotary is not None else "no RoPE"
    if base is None:
        return f"{theta} (MLA: the bound counts rotated query-key dimensions; MLA's similarity runs through unrotated ones)"
    row = (
        f"the table's last row: a {seq_len:,}-token context needs at least this" if base.beyond_table
        else f"the table's row for {seq_len:,}"
    )  # fmt: skip
    return (
        f"{theta}: from {BASE_FLOOR:,.0f} up, the first of 1, 2, 5 x 10^k whose {model.attention.head_dim} rotated dimensions"
        f" keep attention's preference for similar keys at every distance up to {base.row_tokens:,} tokens (Men et"
        f" al. 2024), {row}"
    )


def recommend(request: RecommendRequest, *, config_path: str | None = None, price_ways: bool = True) -> RecommendResult:
    """Run the skill on ``request``: see the module docstring for the stages. ``config_path`` is where the
    config will be written (named in the testability hook's command); ``price_ways``: run the recommender again
    with each way out's flags and keep those that fit (``core.ways.settle``; off in those runs themselves)."""
    request = _sixteen_bits_for_the_target(request)
    ctx = _context(request)
    moe = MoeBudget.of(request)
    if moe is None and request.weight_dtype is not None:  # review 403 #7: named "recommended", NVIDIA's way out
        from mha_cli.core.weight_bytes import refuse_experts_only_format

        vendor = None if ctx.target is None else ctx.target.target.vendor
        refuse_experts_only_format("the dense design (--active-params makes an MoE)", request.weight_dtype, vendor)
    vocab, tied = vocab_for(moe.total if moe else request.params, request.vocab_size)

    shape = choose_shape(ctx, vocab, tied, moe)
    chosen, rows = trade_off(ctx, shape)
    model, base = _with_rope_base(chosen.model, request.seq_len)
    if model.attention.mla is not None:
        ctx.trace.fire(
            "MHA030",
            f"latent {model.attention.mla.kv_lora_rank} + RoPE key {model.attention.mla.qk_rope_head_dim} ="
            f" {model.attention.mla.latent_dim} values per token per layer",
            kv_lora_rank=model.attention.mla.kv_lora_rank,
            qk_rope_head_dim=model.attention.mla.qk_rope_head_dim,
            q_lora_rank=model.attention.mla.q_lora_rank,
        )

    params = count_params(model)
    kv, memory = chosen.kv, chosen.plan
    roofline = None
    if memory is not None and ctx.target is not None:
        roofline = estimate_roofline(
            model, ctx.target, params=params, weight_dtype=request.weight_dtype, kv=kv, plan=memory
        )
    latency = None if roofline is None or memory is None else latency_or_none(model, memory, ctx.deployment(chosen.tp))
    ways = flag_unfit(ctx, chosen, kv, memory, params.total)
    ways_out = settle(ways, lambda words: _rerun(request, words), REQUEST_FLAGS) if price_ways else [
        WayOut(text=text, change=split_way(text)[0], fits=False, figure="not run again (a nested run)") for text in ways
    ]  # fmt: skip

    init = init_plan(ctx, model)
    ctx.trace.fire("MHA041", "no biases on Q, K, V, O", qkv_bias=False, o_bias=False)
    if model.rotary is not None:  # every design's (build_model sets it)
        ctx.trace.fire(
            "MHA042", _rope_base_words(model, base, request.seq_len), rope_theta=model.rotary.theta,
            bound_context=None if base is None else base.row_tokens,
        )  # fmt: skip
    command = hook_command(config_path)
    hook = TestHook(
        task="induction",
        pattern="A B ... A -> B",
        n_layers=2,
        n_heads=model.attention.n_heads,
        n_kv_heads=None if model.attention.mla else model.attention.n_kv_heads,
        head_dim=None if model.attention.mla else model.attention.head_dim,
        variant=chosen.variant,
        accuracy_threshold=C.TEST_ACCURACY,
        how="train a 2-layer copy of this attention on random token sequences with a repeated segment; "
        f"predict the token after the second A (run `{command}`)",
        command=command,
    )
    ctx.trace.fire(
        "MHA050", f"2-layer induction task at >= {C.TEST_ACCURACY:.0%}: `{command}`", n_layers=2, command=command
    )

    table = alternatives(ctx, rows)
    reason = variant_reason(ctx, model, kv, memory, table)
    summary = summarise(model, params.total, params.active)
    notes = [reason, "rules fired: " + ", ".join(ctx.trace.ids)]
    if request.variant is not None:
        notes.append(f"{C.EXPLICIT_VARIANT_NOTE}{request.variant}")  # `mha check` honours it (MHA091)
    config = MhaConfig(model=ctx.written(model), deployment=ctx.deployment(chosen.tp), notes=notes)
    return RecommendResult(
        request=request,
        model=summary,
        variant_reason=reason,
        budget_deviation=(params.total - request.params) / request.params,
        params=params,
        weight_bytes=model_weight_bytes(model, request.weight_dtype),
        kv=kv,
        memory=memory,
        roofline=roofline,
        latency=latency,
        fits=memory.fits if memory else None,
        ways_out=ways_out,
        warnings=_warnings(ctx, request, chosen.tp, chosen.model)
        + node_split_warning(shape, request.d_model, request.tp),
        init=init,
        qkv_bias=False,
        o_bias=False,
        testability=hook,
        alternatives=table,
        trace=ctx.trace.findings,
        rules_fired=ctx.trace.ids,
        config=config,
    )
