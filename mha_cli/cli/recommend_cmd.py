"""``mha recommend``: a parameter budget, a context and a target in; an attention design out.

``--out FILE --format hf`` writes a transformers config.json instead of our YAML config.

Exit codes: 0 with a design (a plan that does not fit the target is flagged, not an error);
1 with ``--fail-if-no-fit`` when it does not fit; 2 for bad input (nothing is written).
"""

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from mha_cli.cli.options import (
    AsyncSchedulingOpt,
    BatchOpt,
    ForceOpt,
    JsonOpt,
    KvCacheGibOpt,
    KvDtypeOpt,
    MaxBatchedTokensOpt,
    MaxNumSeqsOpt,
    PlotOpt,
    PricingEngineOpt,
    ProfileOpt,
    RecommendItlOpt,
    SeqOpt,
    TargetOpt,
    TtftOpt,
    UtilisationOpt,
    WeightDtypeOpt,
    check_latency_targets,
    kv_cache_bytes,
    named_path,
    one_or_more,
)  # fmt: skip
from mha_cli.cli.output import Output
from mha_cli.cli.release_notice import notice_past_newest_read, refuse_release_without_model
from mha_cli.core.config_io import config_text, write_text_atomic
from mha_cli.core.errors import EXIT_CHECK_FAILED, BadInputError, refuse_standard_stream
from mha_cli.core.recommend import RecommendRequest, RecommendResult, recommend
from mha_cli.core.recommend.hf_config import HF_NOTES_KEY, hf_config

OUT_FORMATS = ("mha", "hf")

if TYPE_CHECKING:
    from rich.console import Console

    from mha_cli.cli.app import CommandRegistry
    from mha_cli.core.schemas import MhaConfig

TpOpt = Annotated[
    int | None,
    typer.Option(
        "--tp",
        "--tensor-parallel-size",
        callback=one_or_more,
        help="Design for this tensor-parallel degree (heads must split over it). Default: the smallest degree of"
        " --target at which weights and batch fit, data-parallel replicas on the other devices; the architecture"
        " then does not depend on the device count.",
        show_default=False,
    ),
]
ParamsOpt = Annotated[
    str, typer.Option("--params", help="Parameter budget: 7B, 350M, 1.5T (decimal).", show_default=False)
]
PriorityOpt = Annotated[
    str,
    typer.Option(
        "--priority",
        help="balanced: lowest-risk attention with a cache at most 8 KV heads' (a group of 8 query heads a KV head where n_heads / 8 is more); inference: the same, and the batch"
        " must fit --target (fewer KV heads or MLA if needed); training: quality first, MHA up to 16 heads at up"
        " to 32K tokens.",
    ),
]
VocabOpt = Annotated[
    int | None, typer.Option("--vocab", help="Vocabulary size (default: 50,257 under 1B, 128,256 from 1B).")
]
DModelOpt = Annotated[
    int | None,
    typer.Option(
        "--d-model",
        help="Fix the width (a multiple of 64; of 128 from 2048 for 128-wide heads); depth then fills the budget,"
        " refused outside the aspect-ratio band of public designs.",
    ),
]
VariantOpt = Annotated[
    str | None,
    typer.Option(
        "--variant", help="Ask for MHA, GQA, MQA or MLA instead of letting the rules choose.", show_default=False
    ),
]
OutOpt = Annotated[
    Path | None,
    typer.Option(
        "--out",
        parser=named_path("--out"),
        help="Write the design as a config file (.yaml/.yml: YAML, .json: JSON) that `mha kv` and `mha verify` read"
        " (with --format hf: a transformers config.json).",
    ),
]
FormatOpt = Annotated[
    str,
    typer.Option(
        "--format",
        help="--out format: mha (our YAML config) or hf (a transformers config.json: llama, ministral with sliding windows, qwen3_moe or deepseek_v3).",
    ),
]
ActiveParamsOpt = Annotated[
    str | None,
    typer.Option(
        "--active-params",
        help="MoE: parameters one token uses (e.g. 3B); --params is then the total, every expert counted.",
        show_default=False,
    ),
]
ExpertsOpt = Annotated[
    int | None,
    typer.Option("--experts", help="MoE: routed experts per layer (default: the number that fills the total)."),
]
TopKOpt = Annotated[
    int | None,
    typer.Option(
        "--top-k", help="MoE: routed experts per token, 1 to 32 (default 8; a quarter of --experts below 64)."
    ),
]
SharedExpertsOpt = Annotated[
    int | None,
    typer.Option(
        "--shared-experts",
        help="MoE: experts every token uses besides the routed ones, each as wide as a routed expert (default 0,"
        " as Qwen3-MoE; DeepSeek-V3, Kimi-K2 and GLM-4.5 use 1).",
    ),
]
DenseLayersOpt = Annotated[
    int | None,
    typer.Option(
        "--dense-layers",
        help="MoE: leading layers with a dense MLP instead of experts (default 0; DeepSeek-V3 3, Kimi-K2 1).",
    ),
]
FailIfNoFitOpt = Annotated[
    bool,
    typer.Option("--fail-if-no-fit", help=f"Exit {EXIT_CHECK_FAILED} when the plan does not fit the target."),
]


def recommend_command(
    ctx: typer.Context,
    params: ParamsOpt,
    seq: SeqOpt = None,
    target: TargetOpt = None,
    batch: BatchOpt = None,
    kv_dtype: KvDtypeOpt = None,
    weight_dtype: WeightDtypeOpt = None,
    priority: PriorityOpt = "balanced",
    tp: TpOpt = None,
    vocab: VocabOpt = None,
    d_model: DModelOpt = None,
    variant: VariantOpt = None,
    active_params: ActiveParamsOpt = None,
    experts: ExpertsOpt = None,
    top_k: TopKOpt = None,
    shared_experts: SharedExpertsOpt = None,
    dense_layers: DenseLayersOpt = None,
    engine: PricingEngineOpt = None,
    gpu_memory_utilization: UtilisationOpt = None,
    max_num_batched_tokens: MaxBatchedTokensOpt = None,
    max_num_seqs: MaxNumSeqsOpt = None,
    kv_cache_gib: KvCacheGibOpt = None,
    async_scheduling: AsyncSchedulingOpt = None,
    out: OutOpt = None,
    format: FormatOpt = "mha",
    force: ForceOpt = False,
    fail_if_no_fit: FailIfNoFitOpt = False,
    ttft_ms: TtftOpt = None,
    itl_ms: RecommendItlOpt = None,
    profile: ProfileOpt = None,
    plot: PlotOpt = None,
    explain: Annotated[
        bool,
        typer.Option(
            "--explain",
            help="The full report: parameter, cache, memory and roofline tables, every alternative's"
            " row and the rule trace (the default is a short summary; --json is always whole).",
        ),
    ] = False,
    json: JsonOpt = False,
) -> None:
    """Recommend attention for a parameter budget: variant, heads, KV cache, memory plan (--explain: rule trace)."""
    if (ttft_ms is not None or itl_ms is not None) and target is None:
        raise BadInputError("--ttft-ms and --itl-ms search deployments on a target: add --target (e.g. 8xh100)")
    if fail_if_no_fit and target is None:  # nothing fits or fails without a device: it passed every time
        raise BadInputError("--fail-if-no-fit judges the memory plan on a device: add --target (e.g. h100)")
    check_latency_targets(ttft_ms, itl_ms)
    if plot is not None:
        from mha_cli.cli.plot import check_plot_path

        check_plot_path(plot, force=force)
    if format not in OUT_FORMATS:
        raise BadInputError(f"--format {format!r} is not one of {', '.join(OUT_FORMATS)}")
    if format != "mha" and out is None:
        raise BadInputError(f"--format {format} says how --out writes the design: give --out FILE (nothing is written"
                            " without it)")  # fmt: skip
    if out is not None:  # before any work, the .yaml/.json check too (review 336 #12)
        refuse_standard_stream(out, "--out", ".yaml or .json", "--json prints the recommendation")
    if format == "hf" and out is not None and out.suffix.lower() != ".json":
        raise BadInputError(f"--format hf writes a transformers config.json: give --out a .json path, not {out.name!r}")
    from mha_cli.core.engine.share_spelling import engine_with_share

    engine = engine_with_share(engine, gpu_memory_utilization)  # SGLang's name prices SGLang (review 391 #6)
    request = build_request(
        params=params, seq=seq, target=target, batch=batch, kv_dtype=kv_dtype, weight_dtype=weight_dtype,
        priority=priority, tp=tp, vocab=vocab, d_model=d_model, variant=variant, active_params=active_params,
        experts=experts, top_k=top_k, shared_experts=shared_experts, dense_layers=dense_layers, engine=engine,
        gpu_memory_utilization=gpu_memory_utilization, max_num_batched_tokens=max_num_batched_tokens,
        max_num_seqs=max_num_seqs, kv_cache_memory_bytes=kv_cache_bytes(kv_cache_gib), async_scheduling=async_scheduling,
    )  # fmt: skip
    result = recommend(request, config_path=None if out is None else str(out))
    unpriced = engine_options_without_target(
        target, out=out, format=format, engine=engine, gpu_memory_utilization=gpu_memory_utilization,
        max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs, kv_cache_gib=kv_cache_gib,
        async_scheduling=async_scheduling,
    )  # fmt: skip
    if unpriced is not None:
        result = result.model_copy(update={"warnings": [*result.warnings, unpriced]})
    from mha_cli.core.check import lint_warnings

    linted = lint_warnings(result.config.model, result.config.deployment)
    if linted:  # what `mha check` on the file written will warn (its --strict fails on them)
        result = result.model_copy(update={"warnings": [*result.warnings, *linted]})
    if profile is not None:
        from mha_cli.cli.kv_cmd import with_profile

        result = with_profile(result, result.config.model, result.config.deployment, profile)
    if ttft_ms is not None or itl_ms is not None:
        from mha_cli.core.recommend.serving import search_design
        from mha_cli.core.served_model import PLACEHOLDER, ServedModel

        if out is not None and format == "hf" and out.name == "config.json":  # the folder the engines read it from
            served = ServedModel(model=str(out.parent), named_by="folder")
        else:  # the engines read DIR/config.json: a file of another name is no model folder
            written = f" ({out.name} is written, not config.json)" if out is not None and format == "hf" else ""
            served = ServedModel(model=PLACEHOLDER, named_by="placeholder", note=f"replace {PLACEHOLDER} with a folder"
                                 f" holding the design's config.json{written} (`--out DIR/config.json --format hf`"
                                 " writes one)")  # fmt: skip

        result = result.model_copy(update={"deployment_search": search_design(result, served, ttft_ms, itl_ms)})
    output = Output(json)
    from mha_cli.core.engine.generations import typed_release

    typed = typed_release(engine)
    deployment = result.config.deployment
    refuse_release_without_model(
        deployment.engine, typed, result.config.model, output, generation_id=deployment.engine_generation, designed=True
    )
    if out is not None:
        if format == "hf":
            import json as json_module  # only for --format hf

            written_hf = hf_config(result.config.model, max_position_embeddings=request.seq_len)
            if (
                result.config.notes
            ):  # the YAML's notes (check reads an explicit --variant back): a key transformers keeps
                written_hf[HF_NOTES_KEY] = list(result.config.notes)
            text = json_module.dumps(written_hf, indent=2)
            write_text_atomic(out, text + "\n", force=force)
        else:
            header = "written by: " + command_line(
                params=params, seq=seq, target=target, batch=batch, kv_dtype=kv_dtype, weight_dtype=weight_dtype,
                priority=priority, tp=tp, vocab=vocab, d_model=d_model, variant=variant,
                active_params=active_params, experts=experts, top_k=top_k, shared_experts=shared_experts,
                dense_layers=dense_layers, engine=engine, gpu_memory_utilization=gpu_memory_utilization, max_num_batched_tokens=max_num_batched_tokens,
                max_num_seqs=max_num_seqs, kv_cache_gib=kv_cache_gib, async_scheduling=async_scheduling, out=out,
            )  # fmt: skip
            write_text_atomic(out, config_text(written_config(result.config, out), out, header=header), force=force)
        output.wrote(out)
    if plot is not None:
        from mha_cli.cli.plot import invoked_command, write_plot
        from mha_cli.core.plot_data import alternatives_against_context, memory_against_batch

        design, deployment = result.config.model, result.config.deployment
        panels = [alternatives_against_context(deployment, result.alternatives)]
        panels += filter(None, [memory_against_batch(design, deployment)])
        write_plot(plot, panels, title=invoked_command(ctx), force=force)
        output.wrote(plot)
    if result.memory is not None and result.memory.alias_note:  # after the write: no notice before an error
        output.notice(f"target {result.memory.alias_note}")
    notice_past_newest_read(result.config.deployment.engine, typed, output)
    output.emit(result, functools.partial(render_recommendation, explain=explain))
    if fail_if_no_fit and result.fits is False:
        raise typer.Exit(code=EXIT_CHECK_FAILED)


def written_config(config: "MhaConfig", out: Path) -> "MhaConfig":
    """``config`` as ``out`` records it: a target file named from ``out``'s own folder (``core.sources`` reads it
    from there), so the design reads the same from any folder."""
    from mha_cli.core.targets import rebase_target_file

    deployment = config.deployment
    if deployment is None or deployment.target is None:
        return config
    rebased = rebase_target_file(deployment.target, Path.cwd(), out.parent if str(out.parent) else Path("."))
    if rebased == deployment.target:
        return config
    return config.model_copy(update={"deployment": deployment.model_copy(update={"target": rebased})})


def engine_options_without_target(
    target: str | None, *, out: Path | None, format: str, engine: str | None, **options: object
) -> str | None:
    """A warning naming the engine options given without ``--target``: no memory plan prices them; mha's own config
    file (``--out`` in the mha format) records them for ``mha kv`` / ``mha plan`` with a target, a transformers
    config.json does not. None: nothing given, or a target. (``--fail-if-no-fit`` is refused before: nothing fits or
    fails without a device.)"""
    from mha_cli.cli.typed_spellings import spellings_typed
    from mha_cli.core.deployment import plan_flags_given

    typed = spellings_typed()  # review 408 #8: as typed; --engine only where typed, not set by a share's name
    named_engine = engine is not None and (not typed or "engine" in typed)
    given = (["--engine"] if named_engine else []) + plan_flags_given(typed, **options)
    if target is not None or not given:
        return None
    if out is not None and format == "mha":
        where = "the written design records them for"
    elif out is not None:
        where = f"the {format} config written does not record them; they apply with --target, or in mha's own file to"
    else:
        where = "they apply with --target, or through --out to"
    return f"{', '.join(given)}: no --target, so no memory plan prices them here; {where} `mha kv` and `mha plan`"


def build_request(
    *,
    params: str,
    seq: str | None,
    target: str | None,
    batch: int | None,
    kv_dtype: str | None,
    weight_dtype: str | None,
    priority: str,
    tp: int | None,
    vocab: int | None,
    d_model: int | None,
    variant: str | None,
    active_params: str | None = None,
    experts: int | None = None,
    top_k: int | None = None,
    shared_experts: int | None = None,
    dense_layers: int | None = None,
    engine: str | None = None,
    gpu_memory_utilization: float | None = None,
    max_num_batched_tokens: int | None = None,
    max_num_seqs: int | None = None,
    kv_cache_memory_bytes: int | None = None,
    async_scheduling: bool | None = None,
) -> RecommendRequest:
    """The request from the options; ``RecommendRequest.parse`` rejects a bad value with one line."""
    return RecommendRequest.parse(
        params=params, seq_len=seq, target=target, batch=batch, kv_dtype=kv_dtype, weight_dtype=weight_dtype,
        priority=priority, tp=tp, vocab_size=vocab, d_model=d_model, variant=variant, active_params=active_params,
        experts=experts, top_k=top_k, shared_experts=shared_experts, dense_layers=dense_layers, engine=engine,
        gpu_memory_utilization=gpu_memory_utilization, max_num_batched_tokens=max_num_batched_tokens,
        max_num_seqs=max_num_seqs, kv_cache_memory_bytes=kv_cache_memory_bytes, async_scheduling=async_scheduling,
    )  # fmt: skip


def command_line(**options: object) -> str:
    """The ``mha recommend`` command that reproduces a result, for the header of ``--out`` (a switch set as its word:
    ``--async-scheduling`` or ``--no-async-scheduling``)."""
    import shlex  # only with --out: not on every run's start-up

    words = ["mha", "recommend"]
    for name, value in options.items():
        if value is None or (name == "priority" and value == "balanced"):
            continue
        flag = name.replace("_", "-")
        if isinstance(value, bool):
            words.append(f"--{flag}" if value else f"--no-{flag}")
            continue
        words += [f"--{flag}", _printable(str(value))]
    return shlex.join(words)


def _printable(text: str) -> str:
    """``text`` as the option parsers read it, in characters a YAML comment may hold: whitespace runs (control
    characters such as U+001F among them, which the parsers strip) become one space, anything else unprintable
    its escape."""
    text = " ".join(text.split())
    return text if text.isprintable() else text.encode("unicode_escape").decode("ascii")


def render_recommendation(console: "Console", result: RecommendResult, *, explain: bool = True) -> None:
    """The full report, or with ``explain=False`` the short one; a deployment search after either."""
    from mha_cli.cli import render_recommend

    (render_recommend.render_recommendation if explain else render_recommend.render_summary)(console, result)
    if result.deployment_search is not None:
        from mha_cli.cli.plan_cmd import render_search

        console.print()
        render_search(console, result.deployment_search)


def register(registry: "CommandRegistry") -> None:
    registry.add("recommend", recommend_command)
