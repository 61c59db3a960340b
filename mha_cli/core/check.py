"""``mha check``: the configurator's rules run as a linter over an existing design.

The design is a preset, one of our config files or a Hugging Face config.json. The context the
rules judge it at ("the stated context") is ``--seq``, else ``deployment.default_seq_len``: the
config file's ``deployment.seq_len``, the model's trained context (``context_length``, from a
config.json's ``max_position_embeddings``), else 8,192 -- the same context ``mha kv`` prices.
A finding of severity ``hard`` breaks a hard rule: the command exits 1 (with ``strict``, a warning too).
A config file whose notes record an explicit request (``explicit: variant MHA``, written by
``mha recommend --variant MHA --out``) has asked for that variant: MHA091 is then a warning.
"""

from __future__ import annotations

from typing import Any

from pydantic import computed_field

from mha_cli.core.deployment import (
    FALLBACK_SEQ_LEN,
    PLAN_FLAGS,
    deployment_warnings,
    merge_deployment,
    refuse_file_tp,
    refuse_plan_flags_without_target,
    state_convention_note,
)
from mha_cli.core.engine.plan import EnginePlan
from mha_cli.core.engine_warnings import engine_warnings
from mha_cli.core.fit import deployment_judge, flag_fit, price_deployment
from mha_cli.core.header_weights import header_notes
from mha_cli.core.kv import KvFootprint, footprint_for
from mha_cli.core.memory import MemoryPlan
from mha_cli.core.mm_limits import mm_limits
from mha_cli.core.quantities import format_bytes, format_count
from mha_cli.core.record import Record
from mha_cli.core.rules import catalog as C
from mha_cli.core.rules.engine import Finding, Trace
from mha_cli.core.schemas import DeploymentSpec, ModelSpec
from mha_cli.core.sources import ModelSource, load_source, refuse_gguf_overrides
from mha_cli.core.targets import resolve_target
from mha_cli.core.tensor_parallel import tp_splits_evenly
from mha_cli.core.variants import VariantOption, variant_options
from mha_cli.core.weight_bytes import WeightSource, weights_source

USUAL_HEAD_DIMS = (64, 128, 256)


class CheckResult(Record):
    """The findings of ``mha check``, by rule id; ``passed`` is False when a hard rule is broken (or, with
    ``strict``, any warning fires)."""

    source: str
    """Where the model was read: a preset's name as given, or the file's path (for a Hugging Face id, its
    config.json in the local Hugging Face cache; the id is ``model.name``)."""
    source_kind: str
    """``preset``, ``config`` (our config file), ``hf-config`` (a Hugging Face config.json or model folder),
    ``hf-cache`` (a Hugging Face id, its config.json from the local cache), ``hf-shipped`` (a Hugging Face id not
    cached, the published config.json mha ships for it: ``core.shipped_configs``) or ``gguf`` (a GGUF file)."""
    assumptions: list[str]
    """Defaults the importer assumed for fields a config.json leaves out, where the weights come from when the
    checkpoint's safetensors headers price them (a total that disagrees with the config's count named), and the
    allocation a fixed state or an indexer key is priced by."""
    model: ModelSpec
    """The design as read (the config file's ``model`` section; ``mha schema`` describes it)."""
    deployment: DeploymentSpec
    """The deployment judged: the file's, with the options given on the command line."""
    context_from: str
    """Where the context length the rules used came from."""
    deployment_warnings: list[str]
    """Warnings outside the rules, as ``mha kv`` prints them: a context beyond the trained one, a bf16 plan on a
    target without bf16 (``deployment.deployment_warnings``), and what the engine refuses of the deployment (a KV
    format it lacks, a context past the length it derives: ``core.engine_warnings``); counted in ``warnings``."""
    explicit_variant: str | None
    """The variant the config file's notes say was asked for explicitly (``explicit: variant X``), if any."""
    total_params: int
    """Parameters of the whole model."""
    weight_bytes: int
    """Bytes of those weights in the deployment's weight format (scales included)."""
    kv: KvFootprint
    """The KV cache at the judged context and batch, as ``mha kv --json`` gives it."""
    memory: MemoryPlan | None
    """The memory plan on ``--target`` (as ``mha kv --json``'s ``memory``); None without a target."""
    findings: list[Finding]
    """Every rule that fired on the design, in the order it fired."""
    rules_fired: list[str]
    """The fired rules' ids, in the same order."""
    errors: int
    """Findings of severity hard."""
    warnings: int
    """Findings of severity warning plus ``deployment_warnings``: every warning the report prints."""
    strict: bool
    """Whether warnings fail the check too (``--strict``)."""
    passed: bool
    """False when a hard rule is broken (or, with ``strict``, any warning fired): the exit code is then 1."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def weights_from(self) -> WeightSource:
        """Where ``weight_bytes`` comes from: ``checkpoint headers`` (the model folder's safetensors headers,
        ``deployment.checkpoint_headers``) or ``config`` (the weight inventory)."""
        return weights_source(self.deployment, self.deployment.weight_dtype)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def engine(self) -> EnginePlan | None:
        """The serving engine's plan on one rank of one replica (``memory.engine``); None without a target."""
        return self.memory.engine if self.memory is not None else None


def _stated_context(source: ModelSource, seq: str | int | None) -> str:
    """Where the context comes from: the same order as ``deployment.default_seq_len`` (the one ``mha kv`` uses)."""
    if seq is not None:
        return "--seq"
    if source.deployment is not None and "seq_len" in source.deployment.model_fields_set:
        return "the file's deployment.seq_len"
    if source.model.context_length:
        origin = {
            "hf-config": "config.json",
            "hf-cache": "config.json",
            "hf-shipped": "config.json",
            "preset": "the preset",
        }.get(source.kind, "the model's context_length")
        return f"the model's trained context, from {origin}"
    return f"the default ({FALLBACK_SEQ_LEN:,})"


def _explicit_variant(source: ModelSource) -> str | None:
    """The variant a config file's notes record as explicitly requested, e.g. ``explicit: variant MHA``."""
    for note in source.notes:
        if note.startswith(C.EXPLICIT_VARIANT_NOTE):
            return note.removeprefix(C.EXPLICIT_VARIANT_NOTE).strip().upper()
    return None


def check_design(source_name: str, *, strict: bool = False, **overrides: Any) -> CheckResult:
    """Lint ``source_name`` under its deployment with ``overrides`` (seq_len, target, batch, ...) applied;
    ``strict`` makes warnings fail the check too."""
    source = load_source(source_name, weight_dtype=overrides.get("weight_dtype"))
    refuse_gguf_overrides(source, weight_dtype=overrides.get("weight_dtype"), engine=overrides.get("engine"))
    return check_source(source, strict=strict, **overrides)


def lint_warnings(model: ModelSpec, deployment: DeploymentSpec) -> list[str]:
    """The lint rules' warnings ``mha check`` gives ``model`` under ``deployment``, one line each (the fit and the
    warnings outside the rules ``mha recommend`` judges itself): what recommend says of its own design, so that
    ``check --strict`` on the file it writes holds no surprise (trial 355 #1: MHA060 failed every 128K design, and
    recommend said nothing)."""
    source = ModelSource(kind="config", origin="the recommended design", model=model, deployment=deployment)
    checked = check_source(source)
    lint = [f for f in checked.findings if f.severity == "warning" and f.topic == "lint"]  # the fit recommend judges
    return [f"check warns {f.id} {f.name}: {f.message}" for f in lint]


def check_source(source: ModelSource, *, strict: bool = False, **overrides: Any) -> CheckResult:
    """``check_design`` of a source already loaded; ``mm_limits_typed`` and ``text_only`` (``mha kv``'s
    ``--limit-mm-per-prompt`` and ``--text-only``: trial 366 #9) set the deployment's limits per modality."""
    seq, spellings = overrides.pop("seq_len", None), overrides.pop("spellings", None)  # spellings: as typed
    typed, text_only = overrides.pop("mm_limits_typed", None), overrides.pop("text_only", False)
    if typed is not None or text_only:
        overrides["limit_mm_per_prompt"] = mm_limits(source.model, typed, text_only)
    context_from = _stated_context(source, seq)
    deployment = merge_deployment(source.deployment, model=source.model, seq_len=seq, **overrides)
    refuse_file_tp(source.origin, source.deployment, source.model, overrides.get("tp"), deployment.target, heads=False)
    refuse_plan_flags_without_target(deployment, spellings, **{k: v for k, v in overrides.items() if k in PLAN_FLAGS})
    model = source.model
    devices, deployment = _implied_tp(model, deployment)
    explicit = _explicit_variant(source)
    trace = Trace()
    priced = price_deployment(model, deployment, unsplit_fallback=True)  # a broken split: priced unsplit
    kv, memory, weights = priced.kv, priced.memory, priced.weight_bytes

    if not model.attention_free:  # the attention-geometry rules: an attention-free model has no heads to judge
        _check_tp(trace, model, priced.tp_asked, devices)
        _check_head_dim(trace, model)
        _check_rotary_width(trace, model)
        options = variant_options(model)
        _check_long_context_mha(trace, model, deployment, kv, options, requested=explicit == "MHA")
        _check_small_mla(trace, model, priced.params.total)
        _check_kv_vs_weights(trace, model, deployment, kv, weights, options)
        _check_group(trace, model)
        _check_mla_latent(trace, model)
        _check_bias(trace, model)
    if memory is not None and priced.target is not None:  # rule MHA025 / rule MHA026, with recommend's ways out
        judge = deployment_judge(model, deployment)  # the ways out named: those that fit when pasted
        flag_fit(trace, model, priced.target, priced.deployment, memory, kv, priced.params.total, judge=judge)

    errors = len(trace.by_severity("hard"))
    outside_rules = deployment_warnings(model, deployment) + engine_warnings(model, priced.deployment, memory)
    warnings = len(trace.by_severity("warning")) + len(outside_rules)
    convention = state_convention_note(model, deployment)
    return CheckResult(
        source=source.origin, source_kind=source.kind, model=model,
        assumptions=[*source.assumptions, *header_notes(model, deployment), *([convention] if convention else [])],
        deployment=priced.deployment, context_from=context_from,
        deployment_warnings=outside_rules, explicit_variant=explicit,
        total_params=priced.params.total, weight_bytes=weights, kv=kv, memory=memory, findings=trace.findings,
        rules_fired=trace.ids, errors=errors, warnings=warnings, strict=strict,
        passed=errors == 0 and not (strict and warnings),
    )  # fmt: skip


def _implied_tp(model: ModelSpec, deployment: DeploymentSpec) -> tuple[int | None, DeploymentSpec]:
    """Without a tp asked (nor DP attention), a target whose device count does not split ``model``'s heads is judged
    at the largest degree that divides its devices and does (tp 1 where none above 1 does), the others replicas:
    (that device count, the deployment at that degree); (None, ``deployment``) otherwise. ``mha kv`` refuses the
    same deployment instead, naming that degree (``core.fit``'s replicas hint): it prices what it is given."""
    if deployment.tp is not None or deployment.dp is not None or deployment.target is None or model.attention_free:
        return None, deployment
    devices = resolve_target(deployment.target).n_devices
    heads, kv_heads = model.attention.n_heads, model.attention.n_kv_heads
    if devices == 1 or tp_splits_evenly(heads, kv_heads, devices):
        return None, deployment
    tp = max(t for t in range(1, devices) if devices % t == 0 and tp_splits_evenly(heads, kv_heads, t))
    return devices, deployment.model_copy(update={"tp": tp})


def _check_tp(trace: Trace, model: ModelSpec, tp: int, devices: int | None = None) -> None:
    """MHA024: heads split evenly over the tensor-parallel ranks; ``devices``: the target's device count that does
    not split them, where no tp was asked (``_implied_tp``; ``tp`` is then the degree judged): a warning."""
    if devices is not None:
        trace.fire(
            "MHA024",
            f"the target's {devices} devices do not split n_heads {model.attention.n_heads} / n_kv_heads"
            f" {model.attention.n_kv_heads} evenly at tp {devices}: judged at tp {tp} with {devices // tp} replicas"
            f" (--tp {tp}); --tp {devices} cannot serve this model",
            severity="warning", tp=tp, n_heads=model.attention.n_heads, n_kv_heads=model.attention.n_kv_heads,
        )  # fmt: skip
        return
    if tp_splits_evenly(model.attention.n_heads, model.attention.n_kv_heads, tp):
        return
    trace.fire(
        "MHA024",
        f"tp {tp} does not split n_heads {model.attention.n_heads} / n_kv_heads {model.attention.n_kv_heads} evenly:"
        " use a tp that divides n_heads and divides or is a multiple of n_kv_heads",
        tp=tp,
        n_heads=model.attention.n_heads,
        n_kv_heads=model.attention.n_kv_heads,
    )


def _check_head_dim(trace: Trace, model: ModelSpec) -> None:
    """MHA090 (hard) and MHA061 (warning)."""
    widths = (
        [model.attention.head_dim]
        if model.attention.mla is None
        else [model.attention.mla.qk_head_dim, model.attention.mla.v_head_dim]
    )
    smallest = min(widths)
    mla = model.attention.mla
    if smallest < C.HEAD_DIM_FLOOR and mla is not None:  # the head count stays: its heads' own widths are too small
        narrow = [
            (field, kind, width)
            for field, kind, width in (
                ("mla.qk_nope_head_dim + mla.qk_rope_head_dim", "query/key", mla.qk_head_dim),
                ("mla.v_head_dim", "value", mla.v_head_dim),
            )
            if width < C.HEAD_DIM_FLOOR
        ]  # each width below the floor named (review 325 #18)
        fields = " and ".join(f"{field} {width}" for field, _, width in narrow)
        kinds = " and ".join(kind for _, kind, _ in narrow)
        trace.fire(
            "MHA090",
            f"{fields} < {C.HEAD_DIM_FLOOR}: widen the heads' {kinds} width{'s' if len(narrow) > 1 else ''} to at"
            f" least {C.HEAD_DIM_FLOOR} (DeepSeek-V3: 128 + 64 query/key, 128 value)",
            head_dim=smallest,
        )
    elif smallest < C.HEAD_DIM_FLOOR:
        trace.fire(
            "MHA090",
            f"head_dim {smallest} < {C.HEAD_DIM_FLOOR}: "
            f"{_wider_heads(model.attention.width, model.attention.n_kv_heads, model.attention.n_heads, smallest)}",
            head_dim=smallest,
        )
    elif model.attention.mla is None and (smallest not in USUAL_HEAD_DIMS or smallest > C.HEAD_DIM_CEILING):
        if smallest == C.HEAD_DIM_FLOOR and model.d_model < C.NARROW_MODEL_D_MODEL:  # MHA010's own choice there
            return
        trace.fire("MHA061", f"head_dim {smallest} is not 64, 128 or 256", head_dim=smallest)


def _wider_heads(width: int, kv_heads: int, n_heads: int, head_dim: int) -> str:
    """MHA090's advice for an attention ``width`` (``n_heads`` x ``head_dim``) read by ``kv_heads`` KV heads: heads
    at least ``HEAD_DIM_FLOOR`` wide that keep the width, a count the KV heads divide first. Without a group (MHA)
    the cache stays, so 64, 128 or 32 first where one divides the width, else the narrowest even, else any, divisor
    above the floor; a grouped design (GQA, MQA) keeps a group where a width allows, at the narrowest head (the
    cheapest cache), says what its wider KV heads cost and, where fewer KV heads hold the cache as it is, offers
    that too (trial 303 #1: 48 wide was told "0 heads of 64", 224 wide "3 heads of 64"; review 305 #6: 7 heads over 2
    KV heads, and "widen d_model" to a model whose head_dim the config sets; trial 400 #3 and review 401 #4: 8 heads
    of 16 over 2 KV heads were told 2 heads of 64, an MHA of 4x the cache, unsaid)."""
    divisors = [d for d in range(C.HEAD_DIM_FLOOR, width + 1) if width % d == 0]
    if not divisors:  # narrower than the floor: no head of that width can hold it
        return (
            f"the attention is {width} wide in all, under one head of {C.HEAD_DIM_FLOOR}: widen its heads (head_dim, or"
            " d_model where head_dim follows from it)"
        )
    grouped = kv_heads < n_heads
    if grouped:  # the cache grows with the head: the narrowest even first, keeping a group where a width allows
        ordered = sorted(divisors, key=lambda d: (d % 2, d))
        shared = [d for d in ordered if (width // d) % kv_heads == 0]
        shared = [d for d in shared if width // d > kv_heads] + [d for d in shared if width // d <= kv_heads]
    else:  # RoPE rotates an even width (MHA095): even first
        ordered = [d for d in (64, 128, C.HEAD_DIM_FLOOR) if d in divisors]
        ordered += [d for d in divisors if d % 2 == 0] + divisors
        shared = [d for d in ordered if (width // d) % kv_heads == 0]
    dim = (shared or ordered)[0]
    heads = width // dim
    kv = f" over the {kv_heads} KV heads" if shared and kv_heads > 1 else f", with KV heads that divide {heads}"
    if shared and kv_heads == 1:
        kv = ""
    advice = f"e.g. {heads} head{'s' if heads > 1 else ''} of {dim}{kv}, the same {width} wide"
    if shared and grouped:
        owned = f"{kv_heads} KV head{'s' if kv_heads > 1 else ''} of {dim}"
        advice += f"; the KV cache {dim / head_dim:.3g}x: {owned}{', an MHA' if heads == kv_heads else ''}"
        advice += _same_cache(width, kv_heads * head_dim, ordered, (dim, kv_heads))
    return f"use fewer, wider heads ({advice})"


def _same_cache(width: int, kv_width: int, ordered: list[int], given: tuple[int, int]) -> str:
    """``; or 6 heads of 32 over 2 KV heads, which keeps the cache``: the first head width of ``ordered`` whose
    fewer KV heads (``kv_width`` / it) keep the KV width and a group, unless that is ``given`` (head width, KV
    heads); empty when none does."""
    for dim in ordered:
        kv, heads = kv_width // dim, width // dim
        if kv >= 1 and kv * dim == kv_width and heads % kv == 0 and heads > kv and (dim, kv) != given:
            over = f"{kv} KV head{'s' if kv > 1 else ''}"
            return f"; or {heads} heads of {dim} over {over}, which keeps the cache"
    return ""


def _check_rotary_width(trace: Trace, model: ModelSpec) -> None:
    """MHA095 (hard): an odd rotated width, which ``mha verify`` refuses to build (``core.rotary_width``)."""
    from mha_cli.core.rotary_width import odd_rotary_width

    found = odd_rotary_width(model)
    if found is not None:
        trace.fire("MHA095", found[0], width=found[1])


def _option(options: list[VariantOption], variant: str) -> VariantOption | None:
    return next((o for o in options if o.variant == variant), None)


def _check_long_context_mha(
    trace: Trace,
    model: ModelSpec,
    deployment: DeploymentSpec,
    kv: KvFootprint,
    options: list[VariantOption],
    *,
    requested: bool,
) -> None:
    """MHA091: wide MHA whose global layers hold more than the long-context threshold breaks a hard rule (a model
    whose every layer is windowed never does); the message prices the way out. A file that records an explicit
    request for MHA has asked for it: the same priced finding, as a warning."""
    seq = deployment.seq_len
    if not (
        model.attention.variant == "MHA"
        and model.attention.n_heads > C.MHA_LONG_CONTEXT_MAX_HEADS
        and _most_tokens_held(kv, seq) > C.MHA_LONG_CONTEXT_TOKENS
    ):
        return
    own = kv.bytes_per_sequence
    offer = ""
    gqa = _option(options, "GQA")
    if gqa is not None:
        offer = f"; {gqa.label} would cache {format_bytes(footprint_for(gqa.model, deployment, 1).bytes_per_sequence)}"
    kept = f"; kept: the file records `{C.EXPLICIT_VARIANT_NOTE}MHA`" if requested else ""
    trace.fire(
        "MHA091",
        f"MHA with {model.attention.n_heads} heads at {seq:,} tokens caches {format_bytes(own)} per sequence{offer}{kept}",
        severity="warning" if requested else None,
        n_heads=model.attention.n_heads,
        seq_len=seq,
        bytes_per_sequence=own,
        requested=requested,
    )


def _most_tokens_held(kv: KvFootprint, seq: int) -> int:
    """The most tokens a full-context layer holds for a sequence of ``seq`` tokens: a global layer, or a local or
    chunked one whose window or chunk is as long as the context, which holds it whole (trial 379 #2: every layer
    local with a 1,000,000-token window cached what all-global MHA does and passed MHA091); 0 without one (a shorter
    window never counts, as the rule says: review 380 #2)."""
    held = [kv.tokens_held_global if kv.n_global_layers else 0]
    if kv.n_local_layers and (kv.sliding_window or 0) >= seq:
        held.append(kv.tokens_held_local or 0)
    if kv.token_layers_by_kind.get("chunked") and (kv.attention_chunk or 0) >= seq:
        held.append(kv.tokens_held_chunked or 0)
    return max(held)


def _check_small_mla(trace: Trace, model: ModelSpec, total: int) -> None:
    """MHA092: MLA under 1B; the file states MLA, which counts as asking for it: a warning."""
    if model.attention.mla is not None and total < C.MLA_MIN_PARAMS:
        trace.fire(
            "MHA092",
            f"MLA at {format_count(total)} parameters (< {C.MLA_MIN_PARAMS / 1e9:g}B): allowed because the file asks"
            " for it, but GQA would be simpler at this size",
            severity="warning",
            total_params=total,
        )


def _check_kv_vs_weights(
    trace: Trace,
    model: ModelSpec,
    deployment: DeploymentSpec,
    kv: KvFootprint,
    weights: int,
    options: list[VariantOption],
) -> None:
    """MHA060: one sequence's cache outweighs the model; priced against a smaller GQA and MLA at the same shape, those
    that cache less (an MLA larger than a GQA-2 was offered as the way out: trial 362 #4)."""
    if kv.bytes_per_sequence <= weights:
        return
    offers = []
    gqa = _option(options, "GQA")
    if gqa is not None and model.attention.mla is None and gqa.n_kv_heads < model.attention.n_kv_heads:
        offers.append(gqa)
    mla = _option(options, "MLA")
    if mla is not None and model.attention.mla is None:
        offers.append(mla)
    cached = [(o.label, footprint_for(o.model, deployment, 1).bytes_per_sequence) for o in offers]
    priced = [f"{label} {format_bytes(size)}" for label, size in cached if size < kv.bytes_per_sequence]  # trial 362 #4
    offer = f" (same shape: {', '.join(priced)})" if priced else ""
    trace.fire(
        "MHA060",
        f"one {deployment.seq_len:,}-token sequence caches {format_bytes(kv.bytes_per_sequence)},"
        f" {kv.bytes_per_sequence / weights:.1f}x the weights{offer}",
        bytes_per_sequence=kv.bytes_per_sequence,
        weight_bytes=weights,
    )


def _check_group(trace: Trace, model: ModelSpec) -> None:
    """MHA062: GQA groups wider than 8, and MQA's one group of more than 8 (trial 355 #2: GQA-2 of 32 heads warned,
    MQA of 32 or 128 passed, though it is the far end of the same trend)."""
    variant = model.attention.variant
    if variant in ("GQA", "MQA") and model.attention.q_per_kv > C.MAX_QUALITY_GROUP:
        one = " (MQA: every query head shares the one)" if variant == "MQA" else ""
        trace.fire(
            "MHA062",
            f"{model.attention.q_per_kv} query heads per KV head (> {C.MAX_QUALITY_GROUP}){one}",
            q_per_kv=model.attention.q_per_kv,
        )


def _check_mla_latent(trace: Trace, model: ModelSpec) -> None:
    """MHA064: an MLA latent that compresses nothing (as wide as d_model, or its cache as the heads' own K and V)."""
    mla = model.attention.mla
    if mla is None:
        return
    heads_kv = model.attention.n_heads * (mla.qk_head_dim + mla.v_head_dim)
    if mla.kv_lora_rank >= model.d_model or mla.latent_dim >= heads_kv:
        trace.fire(
            "MHA064",
            f"kv_lora_rank {mla.kv_lora_rank:,} (cached with the RoPE key: {mla.latent_dim:,} a token a layer)"
            f" against d_model {model.d_model:,} and the heads' own K and V, {heads_kv:,}: the latent compresses"
            " nothing; narrow it (DeepSeek-V3: 512 against 7,168) or use GQA",
            kv_lora_rank=mla.kv_lora_rank, d_model=model.d_model, heads_kv_width=heads_kv,
        )  # fmt: skip


def _check_bias(trace: Trace, model: ModelSpec) -> None:
    """MHA063: projection biases."""
    if model.attention.qkv_bias or model.attention.o_bias:
        trace.fire(
            "MHA063",
            f"projection biases: qkv {model.attention.qkv_bias}, o {model.attention.o_bias}",
            qkv_bias=model.attention.qkv_bias,
            o_bias=model.attention.o_bias,
        )
