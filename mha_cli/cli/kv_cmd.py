"""``mha kv SOURCE``: the KV-cache calculator."""

from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from mha_cli.cli.options import (
    AsyncSchedulingOpt,
    BlockSizeOpt,
    DpOpt,
    ForceOpt,
    JsonOpt,
    KvCacheGibOpt,
    KvDtypeOpt,
    LimitMmOpt,
    MaxBatchedTokensOpt,
    MaxNumSeqsOpt,
    MlaCacheOpt,
    PlotOpt,
    PrefixCachingOpt,
    PricingEngineOpt,
    ProfileOpt,
    SourceArg,
    SourceBatchOpt,
    SourceSeqOpt,
    StateConventionOpt,
    TargetOpt,
    TextOnlyOpt,
    TpOpt,
    UtilisationOpt,
    WeightDtypeOpt,
    kv_cache_bytes,
)  # fmt: skip
from mha_cli.cli.output import Output
from mha_cli.cli.release_notice import notice_past_newest_read, refuse_release_without_model
from mha_cli.cli.typed_spellings import spellings_typed
from mha_cli.core.deployment import merge_deployment, refuse_file_tp, refuse_plan_flags_without_target
from mha_cli.core.dp_attention import dense_dp_as_replicas
from mha_cli.core.errors import EXIT_CHECK_FAILED, BadInputError
from mha_cli.core.kv_report import KvReport, build_kv_report
from mha_cli.core.mm_limits import mm_limits
from mha_cli.core.sources import load_source, refuse_gguf_overrides
from mha_cli.core.targets import resolve_target

FailIfNoFitOpt = Annotated[
    bool, typer.Option("--fail-if-no-fit", help=f"Exit {EXIT_CHECK_FAILED} when the batch does not fit the target.")
]

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from mha_cli.cli.app import CommandRegistry
    from mha_cli.core.recommend import RecommendResult
    from mha_cli.core.schemas import DeploymentSpec, ModelSpec


def kv(
    ctx: typer.Context,
    source: SourceArg,
    seq: SourceSeqOpt = None,
    batch: SourceBatchOpt = None,
    kv_dtype: KvDtypeOpt = None,
    tp: TpOpt = None,
    pp: Annotated[
        int | None,
        typer.Option(
            "--pp",
            "--pipeline-parallel-size",
            show_default=False,
            help="Pipeline stages: kv prices every layer on each rank, so only 1 is taken; mha plan --pp prices stages.",
        ),
    ] = None,  # refused past 1 with the command that prices it (trial 300 #5: --pp was offered --tp)
    dp: DpOpt = None,
    block_size: BlockSizeOpt = None,
    target: TargetOpt = None,
    weight_dtype: WeightDtypeOpt = None,
    mla_cache: MlaCacheOpt = None,
    state_convention: StateConventionOpt = None,
    engine: PricingEngineOpt = None,
    gpu_memory_utilization: UtilisationOpt = None,
    max_num_batched_tokens: MaxBatchedTokensOpt = None,
    max_num_seqs: MaxNumSeqsOpt = None,
    kv_cache_gib: KvCacheGibOpt = None,
    limit_mm_per_prompt: LimitMmOpt = None,
    text_only: TextOnlyOpt = False,
    async_scheduling: AsyncSchedulingOpt = None,
    prefix_caching: PrefixCachingOpt = None,
    fail_if_no_fit: FailIfNoFitOpt = False,
    profile: ProfileOpt = None,
    plot: PlotOpt = None,
    force: ForceOpt = False,
    json: JsonOpt = False,
) -> None:
    """Price the KV cache of a model: per token, per sequence, per batch, per rank, on a target."""
    if pp is not None and pp != 1:
        raise BadInputError(
            f"--pp {pp}: mha kv prices every layer's cache on each tp rank, without pipeline stages; `mha plan SOURCE"
            f" --target ... --pp {pp}` prices each stage's layers and memory"
        )
    if plot is not None:
        from mha_cli.cli.plot import check_plot_path

        check_plot_path(plot, force=force)
    loaded = load_source(source, weight_dtype=weight_dtype)
    refuse_gguf_overrides(loaded, weight_dtype=weight_dtype, engine=engine)
    file_target = loaded.deployment.target if loaded.deployment is not None else None
    refuse_file_tp(loaded.origin, loaded.deployment, loaded.model, tp, target or file_target)
    one_server = dp == 1  # the engines' default, on every line plan prints: one server (trial 390 #1), whose
    dp = None if one_server else dp  # replicas on the rest of the target are separate servers (review 391 #5)
    devices = resolve_target(target or file_target).n_devices if (target or file_target) and dp else None
    tp, dp = dense_dp_as_replicas(loaded.model, dp, tp, devices)
    deployment = merge_deployment(
        loaded.deployment,
        model=loaded.model, seq_len=seq, batch=batch, kv_dtype=kv_dtype, tp=tp, dp=dp, block_size=block_size,
        target=target, weight_dtype=weight_dtype, mla_cache=mla_cache, state_convention=state_convention,
        engine=engine,
        gpu_memory_utilization=gpu_memory_utilization, max_num_batched_tokens=max_num_batched_tokens,
        max_num_seqs=max_num_seqs, kv_cache_memory_bytes=kv_cache_bytes(kv_cache_gib),
        limit_mm_per_prompt=mm_limits(loaded.model, limit_mm_per_prompt, text_only), async_scheduling=async_scheduling,
        prefix_caching=prefix_caching,
    )  # fmt: skip
    if one_server:  # a config file's dp overridden too (review 393 #1)
        from mha_cli.core.dp_attention import without_data_parallel

        one = without_data_parallel(deployment)
        deployment = one.model_copy(update={"separate_servers": loaded.model.block.moe is not None})
    refuse_plan_flags_without_target(
        deployment, spellings_typed(), gpu_memory_utilization=gpu_memory_utilization, max_num_batched_tokens=max_num_batched_tokens,
        max_num_seqs=max_num_seqs, kv_cache_gib=kv_cache_gib, async_scheduling=async_scheduling,
        prefix_caching=prefix_caching, fail_if_no_fit=fail_if_no_fit,
    )  # fmt: skip
    out = Output(json)
    refuse_release_without_model(
        deployment.engine, deployment.engine_version, loaded.model, out, generation_id=deployment.engine_generation
    )
    device = None if deployment.target is None else resolve_target(deployment.target).target
    if device is not None:  # the way out names the target's vendor's formats (trial 402 #8)
        from mha_cli.core.weight_bytes import refuse_format_without_experts

        refuse_format_without_experts(loaded.model, deployment.weight_dtype or "bf16", device.vendor)
    report = build_kv_report(loaded, deployment)
    if profile is not None:
        report = with_profile(report, report.model, report.deployment, profile)
    if plot is not None:
        from mha_cli.cli.plot import invoked_command, write_plot
        from mha_cli.core.plot_data import kv_against_context, memory_against_batch

        panels = [kv_against_context(loaded.model, report.deployment)]
        panels += filter(None, [memory_against_batch(loaded.model, report.deployment)])
        write_plot(plot, panels, title=invoked_command(ctx), force=force)
        out.wrote(plot)
    if report.memory and report.memory.alias_note:
        out.notice(f"target {report.memory.alias_note}")
    notice_past_newest_read(report.deployment.engine, report.deployment.engine_version, out)
    out.emit(report, render_kv_report)
    if fail_if_no_fit and report.memory is not None and not report.memory.fits:
        raise typer.Exit(code=EXIT_CHECK_FAILED)


R = TypeVar("R", bound="KvReport | RecommendResult")


def with_profile(result: R, model: "ModelSpec", deployment: "DeploymentSpec", profile: str) -> R:
    """``result`` with its latency on ``--profile`` instead of the target's prior (kv and recommend)."""
    from mha_cli.core.cost.latency import latency_or_none, priced_generation
    from mha_cli.core.cost.store import load_profile, profile_stand_in

    generation = priced_generation(deployment)  # as engine_prior's
    chosen = load_profile(profile, deployment.weight_dtype, release=deployment.engine_version, generation=generation)
    if result.memory is None:
        raise BadInputError("--profile prices the latency on a target: add --target")
    stand_in = profile_stand_in(
        chosen, result.memory.target_id, result.memory.target_name
    )  # among the warnings, as plan says it (review 346 #5)
    return result.model_copy(update={
        "latency": latency_or_none(model, result.memory, deployment, chosen),
        "warnings": [*result.warnings, *([stand_in] if stand_in else [])],
    })  # fmt: skip


def _not_said_below(report: KvReport) -> list[str]:
    """The warnings the engine's block below does not print itself (its refusal or a note: review 364 #11 found the
    refusal printed three times); the JSON keeps them all."""
    engine = report.memory.engine if report.memory is not None else None
    if engine is None:
        return report.warnings
    refusal = engine.refusal or None
    return [
        line for line in report.warnings
        if line not in engine.notes and not (refusal and (line.startswith(refusal) or line.endswith(refusal)))
    ]  # fmt: skip


def render_kv_report(console: "Console", report: KvReport) -> None:
    from rich.markup import escape

    from mha_cli.cli.render import (
        bytes_cell,
        count_cell,
        kv_table,
        model_table,
        print_assumptions,
        print_engine_plan,
    )  # fmt: skip

    title = f"{escape(report.model.name)}  [dim]({report.source_kind}: {escape(report.source)})[/dim]"
    console.print(model_table(report.model, title))
    print_assumptions(console, report.assumptions)
    print_assumptions(console, _not_said_below(report), title="warning")
    console.print()
    memory = report.memory
    if memory is None:
        console.print(kv_table(report.kv))
    else:
        shares = (memory.replicas, memory.sequences_per_replica)
        console.print(kv_table(report.kv, *shares, dp_attention=memory.dp_attention, engine=memory.engine))
    headers = report.deployment.checkpoint_headers
    differ = report.weights_from != "config" and headers is not None and headers.total_bytes != headers.config_bytes
    joined = " (the config's count); " if differ else " = "  # the headers' bytes are not the parameters' own
    weights = f"{count_cell(report.params.total)} parameters{joined}{bytes_cell(report.weight_bytes)} in {report.deployment.weight_dtype}"
    if report.params.vision_tower:  # core.vision_tower: the encoder and projector, priced unquantised
        weights += f" (the vision tower and projector: {count_cell(report.params.vision_tower)}, not quantised)"
    if report.deployment.weight_scheme is not None:
        weights += f" ({report.deployment.weight_scheme.method}, tensor by tensor as the checkpoint stores them)"
    headers = report.deployment.checkpoint_headers
    if headers is not None and headers.format == report.deployment.weight_dtype:
        weights += f" (from {headers.files} checkpoint header{'s' if headers.files != 1 else ''})"
    console.print(f"[bold]weights[/bold]  {weights}")
    if report.memory is not None:
        console.print()
        print_engine_plan(console, report.memory)
        if not report.memory.fits:
            ways = "; ".join(w.text for w in report.ways_out)  # each way that fits, or the one "none: ..." line
            lead = "ways out (each checked): " if any(w.fits for w in report.ways_out) else ""
            console.print("[bold red]does not fit[/bold red]" + escape(f"; {lead}{ways}" if ways else ""))
    latency = report.latency
    if latency is not None and report.memory is not None:
        from mha_cli.cli.render_latency import latency_line

        memory = report.memory
        admitted = memory.engine.admitted_per_replica
        console.print(latency_line(latency, memory.sequences_per_replica, report.deployment.seq_len, admitted))
    if report.variants:  # none for an attention-free model: no K/V heads to project
        console.print()
        print_variants(console, report)


def print_variants(console: "Console", report: KvReport) -> None:
    """The variants table; on a terminal too narrow for its notes beside the figures (rich would cut both), the
    notes below it, one line each; too narrow for the figures themselves, a paragraph a variant: no figure or note
    is ever cut."""
    from rich.measure import Measurement

    from mha_cli.cli.render import print_table, size_cell

    figures = variants_table(report, with_notes=False)
    widest = Measurement.get(console, console.options.update(max_width=10_000), figures).maximum  # not clamped
    if widest + NOTE_WIDTH <= console.width:
        print_table(console, variants_table(report))
        return
    if widest <= console.width:
        print_table(console, figures)
        for row in report.variants:
            if row.note:
                console.print(f"{row.label}: {row.note}", style="dim", justify="left")
        return
    console.print("Same shape, other projections")  # a narrow terminal: each variant's figures as words
    for row in report.variants:
        heads = (
            "a latent"
            if row.variant == "MLA"
            else f"{row.n_kv_heads} KV head{'s' if (row.n_kv_heads or 0) > 1 else ''}"
        )
        seqs = f", {row.max_sequences:,} max seqs" if report.memory is not None else ""
        note = f"; {row.note}" if row.note else ""
        console.print(
            f"{row.label}{' *' if row.is_current else ''}: {heads}, {row.bytes_per_token:,} B / token,"
            f" {size_cell(row.total_bytes)} total, {row.fraction_of_mha:.3f} of MHA{seqs}{note}"
        )
    console.print(f"[dim]{figures.caption}[/dim]")


NOTE_WIDTH = 2 + 14
"""The note column beside the figures: its padding and the last figure's, and its longest word (``(DeepSeek-V2``)."""


def variants_table(report: KvReport, *, with_notes: bool = True) -> "Table":
    from rich import box
    from rich.table import Table

    from mha_cli.cli.render import size_cell

    table = Table(title="Same shape, other projections", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("variant", no_wrap=True)
    for column in ("KV heads", "B / token", "total", "vs MHA") + (("max seqs",) if report.memory is not None else ()):
        # a figure is measured whole, never cut; a size ("244.0 MiB") may wrap at its space
        table.add_column(column, justify="right", no_wrap=column != "total")
    if with_notes:
        table.add_column("note", style="dim", min_width=14)  # the longest word of a note: "(DeepSeek-V2"
    for row in report.variants:
        cells = [
            f"{row.label}{' *' if row.is_current else ''}",
            "latent" if row.variant == "MLA" else str(row.n_kv_heads),
            f"{row.bytes_per_token:,}",
            size_cell(row.total_bytes),
            f"{row.fraction_of_mha:.3f}",
        ]
        if report.memory is not None:
            cells.append(f"{row.max_sequences:,}")
        if with_notes:
            cells.append(row.note)
        table.add_row(*cells, style="bold" if row.is_current else None)
    table.caption = (
        "* this model; B / token: bytes per token; total: the whole batch's cache on one tp rank"
        " (total_bytes; under replicas or --dp a device holds its share: the memory plan)"
    )
    return table


def register(registry: "CommandRegistry") -> None:
    registry.add("kv", kv)
