"""``mha plan SOURCE --target T``: one deployment's TTFT, ITL, end-to-end latency and throughput, with the engine's
memory plan, the roofline bound of each figure and the band the profile carries.

Exit codes: 0 predicted; 2 bad input (an option, a layout the target cannot hold, an engine that would not
start). Pure Python: torch is never imported.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, get_args

import typer

from mha_cli.cli.options import (
    AsyncSchedulingOpt,
    BlockSizeOpt,
    DpOpt,
    ForceOpt,
    ItlOpt,
    JsonOpt,
    KvCacheGibOpt,
    KvDtypeOpt,
    LimitMmOpt,
    MaxBatchedTokensOpt,
    MaxNumSeqsOpt,
    MoeA2aOpt,
    ProfileOpt,
    SourceArg,
    TextOnlyOpt,
    TtftOpt,
    UtilisationOpt,
    WeightDtypeOpt,
    check_latency_targets,
    kv_cache_bytes,
    named,
    named_path,
    one_or_more,
)  # fmt: skip
from mha_cli.cli.output import Output
from mha_cli.cli.release_notice import notice_past_newest_read, refuse_release_without_model, releases_priced
from mha_cli.core.deployment import merge_deployment
from mha_cli.core.engine.per_kind_pages import refuse_per_kind_pages
from mha_cli.core.errors import EXIT_CHECK_FAILED, BadInputError
from mha_cli.core.mm_limits import mm_limits
from mha_cli.core.quantities import format_ms
from mha_cli.core.serve.request_context import context_miss, longest_past_context, longest_request_note
from mha_cli.core.sources import load_source, refuse_gguf_overrides, resolution_note

if TYPE_CHECKING:
    from rich.console import Console

    from mha_cli.cli.app import CommandRegistry
    from mha_cli.core.cost.plan import ServingPlan
    from mha_cli.core.cost.profile import DeviceProfile
    from mha_cli.core.cost.search import SearchResult
    from mha_cli.core.cost.serving import Deployment
    from mha_cli.core.cost.speculative import SpeculativeComparison
    from mha_cli.core.schemas import ModelSpec, MoeA2aBackend, SpeculativeSpec
    from mha_cli.core.serve.replica import ClientSpec, SimulatedServing
    from mha_cli.core.serve.workload import LengthsReplayed
    from mha_cli.core.sources import ModelSource
    from mha_cli.core.targets import ResolvedTarget

MAX_TOKENS = 1 << 24
MAX_CONCURRENCY = 1 << 20


def _count(value: int, what: str, high: int) -> int:
    if not 1 <= value <= high:
        raise BadInputError(f"--{what} {value}: give 1 to {high:,}")
    return value


def plan(
    ctx: typer.Context,
    source: SourceArg,
    target: Annotated[
        str | None,
        typer.Option(
            "--target",
            help="Hardware: an id or alias, a target file (my-gpu.yaml), or N x one (8xh100, 4xmy-gpu.yaml)."
            " Default: our config file's deployment.target (mha recommend --out writes one).",
        ),
    ] = None,
    inter_node_link: Annotated[
        str | None,
        typer.Option(
            "--inter-node-link",
            help="The link between nodes of a multi-node target (2x8xh100): ib-hdr, ib-ndr, ib-xdr, roce-100,"
            " roce-200, roce-400, roce-800 (docs/how-numbers-are-computed.md lists them). Default: the part's reference network"
            " card, one per GPU (InfiniBand NDR for H100).",
            show_default=False,
        ),
    ] = None,
    isl: Annotated[int, typer.Option("--isl", help="Prompt tokens per request.")] = 1024,
    osl: Annotated[int, typer.Option("--osl", help="Output tokens per request.")] = 256,
    max_model_len: Annotated[
        str | None,
        typer.Option(
            "--max-model-len",
            help="The engine's context (vLLM's --max-model-len, SGLang's --context-length), at least --isl + --osl"
            " (the default); above a model's learned positions the launch needs the engine's override, which the"
            " launch note names (VLLM_ALLOW_LONG_MAX_MODEL_LEN=1, SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1): the"
            " engine is sized, checked and launched for"
            " requests of this length (SGLang starts with a pool under it and aborts only prompts past its pool),"
            " and its pool runs the --isl + --osl ones. auto (or -1): what the engine derives from the model's"
            " config; where one request of it does not fit, vLLM 0.14+ lowers it to the longest that does (its"
            " auto-fit, priced so; earlier releases refuse, naming that length as the way out).",
            show_default=False,
        ),
    ] = None,
    concurrency: Annotated[
        int | None,
        typer.Option(
            "--concurrency",
            "--max-concurrency",
            "--users",
            help="Users, each sending its next request when one ends (vllm bench serve's --max-concurrency). Default:"
            " 1 for one deployment; searching, 1, 2, 3, 4, 6, 8, 12, ... users per replica (powers of two and 1.5 x"
            " them) up to the most each layout's KV pool admits, that count included.",
            show_default=False,
        ),
    ] = None,
    tp: Annotated[
        int | None,
        typer.Option(
            "--tp",
            "--tensor-parallel-size",
            callback=one_or_more,
            help="Tensor-parallel degree: pins one deployment (without --tp and --pp, plan searches them).",
            show_default=False,
        ),
    ] = None,
    pp: Annotated[
        int | None,
        typer.Option(
            "--pp",
            "--pipeline-parallel-size",
            callback=one_or_more,
            help="Pipeline stages: pins one deployment (default 1).",
            show_default=False,
        ),
    ] = None,
    dp: DpOpt = None,
    enable_dp_attention: Annotated[
        bool,
        typer.Option(
            "--enable-dp-attention",
            help="SGLang's flag, to paste its line (without --engine, SGLang is priced): --tp then counts every GPU"
            " of the server (SGLang's --tp-size) and --dp its attention ranks, each of tp / dp GPUs (--tp 8 --dp 8:"
            " eight ranks of one GPU).",
        ),
    ] = False,
    moe_a2a_backend: MoeA2aOpt = None,
    rate: Annotated[
        float | None,
        typer.Option(
            "--rate",
            help="Requests per second arriving (open loop), instead of --concurrency users: from 0.001 (one every"
            " 1,000 s) to below 10^9.",
            show_default=False,
        ),
    ] = None,
    expert_parallel: Annotated[
        bool,
        typer.Option(
            "--expert-parallel",
            "--enable-expert-parallel",
            help="MoE: whole experts per GPU (vLLM --enable-expert-parallel) for the deployment --tp/--pp pin;"
            " a search tries both layouts.",
        ),
    ] = False,
    separate_servers: Annotated[
        bool,
        typer.Option(
            "--separate-servers",
            help="MoE: replicas as separate servers behind a load balancer, each holding every expert, not one"
            " server whose data-parallel ranks share them (vLLM's and SGLang's way); a search tries both.",
        ),
    ] = False,
    ttft_ms: TtftOpt = None,
    itl_ms: ItlOpt = None,
    engine: Annotated[
        str | None,
        typer.Option(
            "--engine",
            help="Serving engine: its memory rules size the KV pool, its generation's step-cost constants (fitted on"
            " 2025-26 measurements; a generation without its own, the nearest earlier one's of its engine; else the"
            " default ones) price the times. vllm, sglang, trtllm (the latest generation), engine@version"
            " (sglang@0.4, vllm==0.11), an image (vllm/vllm-openai:v0.11.0, lmsysorg/sglang:v0.5.6-cu129) or a"
            " generation (vllm-v1, trtllm-cpp); an exact release (vllm@0.10.2) writes"
            " the launch line in its flags (else the generation's latest); a release newer than the newest read, of"
            " any engine (vllm@0.99, trtllm@9.9, a major alone as vllm@1), is priced as that newest one, with a"
            " notice. Default: vLLM's latest, its rules and its generation's constants, as --engine vllm.",
            show_default=False,
        ),
    ] = None,
    weight_dtype: WeightDtypeOpt = None,
    kv_dtype: KvDtypeOpt = None,
    gpu_memory_utilization: UtilisationOpt = None,
    max_num_batched_tokens: MaxBatchedTokensOpt = None,
    max_num_seqs: MaxNumSeqsOpt = None,
    block_size: BlockSizeOpt = None,
    kv_cache_gib: KvCacheGibOpt = None,
    limit_mm_per_prompt: LimitMmOpt = None,
    text_only: TextOnlyOpt = False,
    async_scheduling: AsyncSchedulingOpt = None,
    scheduler_recv_interval: Annotated[
        int | None,
        typer.Option(
            "--scheduler-recv-interval",
            min=1,
            help="SGLang's own flag (from 0.5.1): while requests decode, its scheduler takes new ones on every N-th"
            " decode step only, so a request reaching a busy server waits N / 2 steps on average before its prompt"
            " starts. Refused with --dp; a search leaves DP attention out. Default 1: every step.",
            show_default=False,
        ),
    ] = None,
    profile: ProfileOpt = None,
    num_prompts: Annotated[
        int | None,
        typer.Option(
            "--num-prompts",
            help="Requests the simulated benchmark sends (vllm bench serve's --num-prompts). Default: 10 per user,"
            " 200 (5 per prefix with --shared-prefixes) to 10,000, cut to what 200,000 simulated engine steps allow (one per user at least); the search's"
            " confirming runs: the same without the 5-per-prefix floor. The output says the count run. Fewer than the"
            " users never holds them all: refused for a pinned load; a search confirms no point above it.",
            show_default=False,
        ),
    ] = None,
    random_range_ratio: Annotated[
        float,
        typer.Option(
            "--random-range-ratio",
            help="Lengths drawn uniformly from n (1 - r) to n (1 + r) around --isl and --osl, as vllm bench serve's"
            " random dataset draws them.",
        ),
    ] = 0.0,
    burstiness: Annotated[
        float,
        typer.Option("--burstiness", help="With --rate: the gamma shape of arrival gaps (1 Poisson, < 1 burstier)."),
    ] = 1.0,
    lengths_file: Annotated[
        Path | None,
        typer.Option(
            "--lengths-file",
            parser=named_path("--lengths-file"),
            help="(input, output) token counts, one pair a line ('INPUT OUTPUT') or a JSON list, replayed instead of"
            " --isl/--osl draws.",
            show_default=False,
        ),
    ] = None,
    slo_percentile: Annotated[
        float,
        typer.Option(
            "--slo-percentile",
            help="Where --ttft-ms and --itl-ms are read in the simulated distribution: 50, 90, 99, or 0 for the mean.",
        ),
    ] = 99.0,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the simulated lengths and arrivals.")] = 0,
    shared_prefix: Annotated[
        int | None,
        typer.Option(
            "--shared-prefix",
            help="Leading tokens of every prompt that all requests share (a system prompt), part of --isl: once the"
            " first request has computed them the engine's prefix cache serves them, so prefills compute the rest.",
            show_default=False,
        ),
    ] = None,
    shared_prefixes: Annotated[
        int | None,
        typer.Option(
            "--shared-prefixes",
            help="How many different prefixes of --shared-prefix tokens the requests cycle through (conversations,"
            " documents). Once they outgrow the GPU pool's spare blocks the prefix cache keeps none of them; a host"
            " tier (--kv-offload-gib) may. Default 1.",
            show_default=False,
        ),
    ] = None,
    kv_offload_gib: Annotated[
        float | None,
        typer.Option(
            "--kv-offload-gib",
            help="Host memory per GPU for the engine's KV offload tier, in GiB: vLLM --kv-offloading-size (its"
            " figure sums the tp x pp GPUs), SGLang --enable-hierarchical-cache --hicache-size, TensorRT-LLM"
            " host_cache_size. It keeps prefixes the GPU pool evicts; a hit is loaded back over the host link.",
            show_default=False,
        ),
    ] = None,
    prefix_caching: Annotated[
        bool | None,
        typer.Option(
            "--enable-prefix-caching/--no-enable-prefix-caching",
            help="The engine's prefix cache (vLLM's flag; SGLang's radix cache, TensorRT-LLM's block reuse). Default: on,"
            " off in vLLM V0 and TensorRT-LLM's C++ engine, as each of them defaults; for a model with Mamba or"
            " linear-attention layers beside attention vLLM's is on from 0.28.0 (its Mamba 'align' mode: 2 or 3"
            " state pages a request, a shared prefix served in whole blocks from 0.24), opt-in before.",
            show_default=False,
        ),
    ] = None,
    speculative_config: Annotated[
        str | None,
        typer.Option(
            "--speculative-config",
            help='Speculative decoding as vLLM takes it, JSON: \'{"method": "mtp"|"eagle"|"eagle3"|'
            '"draft_model", "model": DRAFT, "num_speculative_tokens": K}\'. The drafter\'s weights and KV join the'
            " memory plan; the plan shows ITL and tokens/s with and without it.",
            show_default=False,
        ),
    ] = None,
    draft: Annotated[
        str | None,
        typer.Option(
            "--draft",
            help="A draft model (preset, config or Hugging Face id) for speculative decoding (method draft_model).",
            show_default=False,
        ),
    ] = None,
    num_speculative_tokens: Annotated[
        int | None,
        typer.Option(
            "--num-speculative-tokens",
            help="k: tokens drafted per target step (default: the MTP layers, else 3). Alone: the model's own MTP"
            " layers.",
            show_default=False,
        ),
    ] = None,
    acceptance_length: Annotated[
        float | None,
        typer.Option(
            "--acceptance-length",
            help="T: mean tokens per target step, 1 to k + 1 (vLLM's 'Mean acceptance length'). Default: a published"
            " figure for the method, named in the output.",
            show_default=False,
        ),
    ] = None,
    fail_if_misses: Annotated[
        bool,
        typer.Option(
            "--fail-if-misses",
            help=f"Exit {EXIT_CHECK_FAILED} when the targets (--ttft-ms, --itl-ms) are missed: the deployment planned"
            " misses one, or a search or --disaggregated finds no pick (or --disaggregated's pick meets them on its"
            " means only, its simulated p99 past one). Needs a target. A client whose requests can run"
            " past the launched context (--lengths-file, --random-range-ratio's draws) misses too, on 'context', naming"
            " the --max-model-len that admits them.",
        ),
    ] = False,
    closed_form: Annotated[
        bool,
        typer.Option(
            "--closed-form",
            help="Skip the simulated serving loop: only the closed-form estimate (quick; no percentiles, no burst).",
        ),
    ] = False,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot",
            parser=named_path("--plot"),
            help="Also draw latency and throughput against concurrency (and the simulated running and queued requests"
            " and KV pool over time) to this PNG.",
            show_default=False,
        ),
    ] = None,
    disaggregated: Annotated[
        bool,
        typer.Option(
            "--disaggregated",
            help="Prefill and decode on separate GPUs: search (prefill workers x layout) and (decode workers x layout)"
            " within the target's GPUs (tp workers, and for MoE models DP attention with the experts spread; a worker"
            " inside a node or over whole nodes), price the KV transfer between them, and compare with aggregated"
            " serving on the same GPUs; launch lines for vLLM's NixlConnector and SGLang's PD disaggregation.",
        ),
    ] = False,
    kv_link: Annotated[
        str | None,
        typer.Option(
            "--kv-link",
            help="With --disaggregated: the link the KV cache moves over (ib-ndr, roce-400, pcie5, ...). Default: the"
            " scale-up link (NVLink) inside a node, the scale-out link across nodes.",
            show_default=False,
        ),
    ] = None,
    force: ForceOpt = False,
    json: JsonOpt = False,
) -> None:
    """Predict TTFT, ITL (time per output token), end-to-end latency and tokens/s of a deployment, or search them.

    With --tp, --pp or --dp: one deployment; replicas = devices / (tp x pp), users spread over them; the engine's memory plan caps the requests each runs at once (the rest wait, in TTFT).

    Without them: every layout of the target's devices at every load it admits, the Pareto front (tokens/s per GPU against per user), the pick that meets --ttft-ms and --itl-ms with the most tokens/s per GPU, and its launch command.

    Times come from the cost model on a device profile: the target's shipped prior, or --profile (a `mha calibrate` measurement).
    """
    from mha_cli.core.cost.latency import priced_generation
    from mha_cli.core.cost.plan import plan_serving
    from mha_cli.core.cost.priors import datasheet_profile, prior_profile
    from mha_cli.core.cost.store import load_profile, profile_stand_in
    from mha_cli.core.targets import resolve_target

    _count(isl, "isl", MAX_TOKENS), _count(osl, "osl", MAX_TOKENS)
    engine_context = _max_model_len(max_model_len, isl + osl)
    if shared_prefix is not None and not 0 <= shared_prefix <= isl:
        raise BadInputError(
            f"--shared-prefix {shared_prefix:,}: give 0 up to --isl ({isl:,}); the prefix is part of the prompt"
        )
    offload_bytes = _offload_bytes(kv_offload_gib, shared_prefixes, shared_prefix)
    if concurrency is not None:
        _count(concurrency, "concurrency", MAX_CONCURRENCY)
    check_latency_targets(ttft_ms, itl_ms)
    if num_prompts is not None and concurrency is not None and rate is None and num_prompts < concurrency:
        raise BadInputError(  # a pinned load: every mode alike (a search's own sweep is judged point by point)
            f"--num-prompts {num_prompts:,} sends fewer requests than the {concurrency:,} users: at most"
            f" {num_prompts:,} would run at once; give at least {concurrency}, or leave --num-prompts out"
        )
    if fail_if_misses and ttft_ms is None and itl_ms is None:
        raise BadInputError("--fail-if-misses judges the targets: add --ttft-ms or --itl-ms")
    if itl_ms is not None and osl == 1:  # the closed form printed a decode step there, the simulated run 0 ms
        raise BadInputError("--itl-ms with --osl 1: one output token has no gap after it: leave --itl-ms out")
    simulated = {"--num-prompts": num_prompts, "--lengths-file": lengths_file,
                 "--random-range-ratio": random_range_ratio if named(ctx, "random_range_ratio") else None,
                 "--slo-percentile": slo_percentile if named(ctx, "slo_percentile") else None,
                 "--burstiness": burstiness if named(ctx, "burstiness") else None, "--seed": seed if named(ctx, "seed") else None,
                 "--shared-prefixes": shared_prefixes, "--kv-offload-gib": kv_offload_gib,
                 "--moe-a2a-backend": moe_a2a_backend}  # fmt: skip
    _check_disaggregated(disaggregated, kv_link, tp=tp, pp=pp, dp=None if dp == 1 else dp, concurrency=concurrency,
                         expert_parallel=expert_parallel, separate_servers=separate_servers, plot=plot,
                         simulated=simulated,
                         speculative=speculative_config or draft or num_speculative_tokens or acceptance_length)  # fmt: skip
    _check_loop_options(closed_form, rate, {flag: simulated[flag] for flag in LOOP_OPTIONS})
    named_percentile = named(ctx, "slo_percentile") and slo_percentile in (0, 50, 90, 99)  # another: refused below
    if named_percentile and ttft_ms is None and itl_ms is None:  # the default, 99, named too (review 263 #10)
        raise BadInputError(
            f"--slo-percentile {slo_percentile:g} says where --ttft-ms and --itl-ms are read: add one, or leave it out"
            " (the simulated table prints the mean, median, p90 and p99)"
        )
    if rate is not None and concurrency is not None:
        raise BadInputError("give --concurrency (users) or --rate (requests per second), not both")
    if rate is not None:
        from mha_cli.core.cost.plan import check_user_rate

        check_user_rate(rate)
    if plot is not None:
        from mha_cli.cli.plot import check_plot_path

        check_plot_path(plot, force=force)
    loaded = load_source(source, weight_dtype=weight_dtype)
    refuse_gguf_overrides(loaded, weight_dtype=weight_dtype, engine=engine)
    if target is None and loaded.deployment is not None:
        target = loaded.deployment.target
    if target is None:
        raise BadInputError(
            f"--target: give the hardware to plan on (an id such as h100, or N x one: 8xh100); {source} names none"
        )
    resolved = with_inter_node_link(resolve_target(target), inter_node_link)
    if enable_dp_attention and engine is None and (loaded.deployment is None or loaded.deployment.engine is None):
        engine = "sglang"  # trial 381 #2: SGLang's flag pasted with its line; vLLM (the default) refuses it
    deployment = merge_deployment(
        loaded.deployment, model=loaded.model, seq_len=isl + osl, target=resolved.spec, weight_dtype=weight_dtype,
        kv_dtype=kv_dtype, engine=engine, gpu_memory_utilization=gpu_memory_utilization,
        max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs,
        block_size=block_size, kv_cache_memory_bytes=kv_cache_bytes(kv_cache_gib), shared_prefix=shared_prefix,
        prefix_caching=prefix_caching, limit_mm_per_prompt=mm_limits(loaded.model, limit_mm_per_prompt, text_only),
        kv_offload_bytes=offload_bytes, shared_prefixes=shared_prefixes, async_scheduling=async_scheduling,
        scheduler_recv_interval=scheduler_recv_interval, max_model_len=engine_context,
    )  # fmt: skip
    auto = max_model_len is not None and max_model_len.strip().lower() in DERIVED_LENGTH
    if auto:
        from mha_cli.core.engine.longer_context import derived_context

        deployment = deployment.model_copy(
            update={"max_model_len": derived_context(loaded.model, deployment, isl + osl)}
        )
    # vLLM 0.14+'s auto-fit where auto was typed (not a file's field); not for --disaggregated, whose lines write one
    # context for both pools (review 386 #2, #6)
    fits_auto = auto and deployment.max_model_len is not None and not disaggregated
    deployment = deployment.model_copy(update={"max_model_len_auto": fits_auto})
    from mha_cli.core.deployment import refuse_float16_refused_family
    from mha_cli.core.engine.generations import generation
    from mha_cli.core.engine.plan import refuse_kv_format_the_engine_lacks, refuse_sparse_mla_gpu
    from mha_cli.core.weight_bytes import refuse_format_without_experts

    refuse_sparse_mla_gpu(deployment, loaded.model)  # before the format: no cache of any format starts there
    refuse_float16_refused_family(deployment, loaded.model)  # vLLM runs it in float32 there: not the bf16 priced
    refuse_kv_format_the_engine_lacks(  # a plan launches what it prices: not a format its engine has not
        deployment,
        f"--kv-dtype {kv_dtype}" if kv_dtype is not None else f"kv_dtype {deployment.kv_dtype}",
        "a plan prices a deployment the engine runs: give a format it has, or `mha kv` for that format's bytes",
        loaded.model,
    )  # fmt: skip
    output = Output(json)
    refuse_release_without_model(  # before the pool's own refusals, in the words `mha kv` uses
        deployment.engine, deployment.engine_version, loaded.model, output, generation_id=deployment.engine_generation
    )
    priced_by = generation(deployment.engine_generation, deployment.engine)
    generation_id = priced_by.id
    refuse_per_kind_pages(loaded.model, generation_id)  # one line, not one per layout
    refuse_format_without_experts(loaded.model, deployment.weight_dtype, resolved.target.vendor)  # likewise
    if offload_bytes is not None:  # a generation without KV offload: one line before anything is priced
        from mha_cli.core.engine.offload import offload_rule, refuse_offload_flag_missing

        offload_rule(generation_id)
        refuse_offload_flag_missing(priced_by, deployment.engine_version)
        if resolved.target.vendor == "CPU":  # vLLM's get_worker: "CPU Offloading is currently only supported on
            raise BadInputError(  # CUDA-alike and XPU GPUs" (core.engine.offload)
                "--kv-offload-gib: a CPU target's KV cache is in host memory already, and vLLM's offload runs on"
                " CUDA and XPU GPUs only: leave it out"
            )
    # `--engine sglang@0.4`: sglang 0.4's memory rules and its step costs; no engine named (by --engine, the config
    # file, or a share's spelling such as --mem-fraction-static: trial 399 #1): vLLM's latest, as its memory, as kv's
    generation = priced_generation(deployment)
    speculative = _speculative(loaded, speculative_config, draft, num_speculative_tokens, acceptance_length)
    if speculative is not None:
        from mha_cli.core.speculative import refuse_method_missing

        refuse_method_missing(speculative, priced_by, deployment.engine_version)
        deployment = deployment.model_copy(update={"speculative": speculative})
    if enable_dp_attention and loaded.model.block.moe is None:  # before its --tp is read (review 301 #7)
        raise BadInputError(
            f"--enable-dp-attention: DP attention spreads routed experts and {loaded.model.name} has none (a"
            " dense model): leave it out (--dp alone starts replicas)"
        )
    if dp == 1 and not enable_dp_attention:  # one server, no DP attention (trial 390 #1, #4)
        from mha_cli.core.dp_attention import without_data_parallel

        dp, deployment = None, without_data_parallel(deployment)
        tp, separate = _one_server(tp, pp or 1, resolved.n_devices, loaded.model)
        separate_servers = separate_servers or separate
    tp = _sglang_attention_tp(enable_dp_attention, tp, dp, pp or 1, resolved.n_devices, deployment.engine)
    if loaded.model.block.moe is None and (dp is not None or deployment.dp):  # vLLM's --data-parallel-size (and
        from mha_cli.core.dp_attention import dense_dp_as_replicas  # SGLang's --dp-size) on a dense model: replicas

        dense_dp = dp if dp is not None else deployment.dp
        tp, dp = dense_dp_as_replicas(loaded.model, dense_dp, tp, resolved.n_devices, pp or 1)
        deployment = deployment.model_copy(update={"dp": None, "expert_parallel": None})  # dp implied it
    if expert_parallel:
        if loaded.model.block.moe is None:
            raise BadInputError(
                f"--expert-parallel spreads routed experts and {loaded.model.name} has none: leave it out"
            )
        deployment = deployment.model_copy(update={"expert_parallel": True})
    if separate_servers:
        if loaded.model.block.moe is None:
            raise BadInputError(
                f"--separate-servers keeps every routed expert on each replica and {loaded.model.name} has none:"
                " leave it out (a dense model's replicas are separate servers already)"
            )
        if tp is not None and tp * (pp or 1) == resolved.n_devices:  # pinned: one server, no replicas
            raise BadInputError(
                f"--separate-servers splits replicas and tp {tp} x pp {pp or 1} takes all {resolved.n_devices} GPUs"
                " of one server: give a smaller --tp (or --pp) for replicas, or leave it out"
            )
        deployment = deployment.model_copy(update={"separate_servers": True})
    if dp is not None and deployment.separate_servers:  # the flag, or a config file's separate_servers
        raise BadInputError(
            "--dp is one server whose ranks share the experts: leave out --separate-servers (or the config file's"
            " separate_servers) or --dp"
        )
    if dp is not None:
        from mha_cli.core.dp_attention import dp_tp

        if deployment.recv_interval > 1:
            from mha_cli.core.serve.recv_interval import DP_ATTENTION_REFUSAL

            raise BadInputError(DP_ATTENTION_REFUSAL)
        tp = dp_tp(dp, tp, resolved.n_devices, pp or 1)
        deployment = deployment.model_copy(update={"expert_parallel": True, "dp": dp})
    if moe_a2a_backend is not None:
        deployment = deployment.model_copy(
            update={"moe_a2a_backend": _a2a_backend(moe_a2a_backend, loaded.model, dp=dp, pinned=tp or pp)}
        )
    device = resolved.target
    weights = deployment.weight_dtype
    if device.id == "cpu":
        from mha_cli.core.cost.store import cpu_profile

        chosen = load_profile(profile, weights) if profile is not None else cpu_profile()
        resolved, ceiling = resolved_cpu(resolved, chosen), chosen.ceiling()
        device = resolved.target
    else:
        chosen = (
            load_profile(profile, weights, release=deployment.engine_version, generation=generation)
            if profile is not None
            else prior_profile(device, weights, generation=generation, release=deployment.engine_version)
        )
        ceiling = datasheet_profile(device, deployment.weight_dtype)
    stand_in = profile_stand_in(chosen, device.id, device.name)
    if stand_in is None and device.id != "cpu" and chosen.kind == "prior" and device.vendor not in ("NVIDIA", "AMD"):
        article = "an" if device.vendor[:1].upper() in "AEIOU" else "a"  # review 405 #11: "an Intel device"
        stand_in = (
            f"the priors were fitted on NVIDIA and AMD GPUs: on {article} {device.vendor} device they are a sketch"
        )
    if stand_in and profile is not None:  # a profile named for another device: said as it runs (trial 343 #6)
        output.notice(stand_in)
    client = None if closed_form else _client(num_prompts, random_range_ratio, burstiness, lengths_file, seed)
    if client is not None and client.lengths and shared_prefix:  # as --shared-prefix past --isl is refused above
        shortest = min(prompt for prompt, _ in client.lengths)
        if shared_prefix > shortest:
            raise BadInputError(
                f"--shared-prefix {shared_prefix:,}: the lengths file has a prompt of {shortest:,} tokens; the prefix"
                f" is part of every prompt: give 0 up to {shortest:,}"
            )
    long_requests = None if client is None else longest_request_note(client, isl, osl, loaded.model, deployment)
    if slo_percentile not in (0, 50, 90, 99):
        raise BadInputError(f"--slo-percentile {slo_percentile:g}: give 50, 90 or 99 (or 0 for the mean)")
    past_read = notice_past_newest_read(deployment.engine, deployment.engine_version, output)
    if disaggregated:
        from mha_cli.cli.render_disaggregated import render_disaggregated
        from mha_cli.core.cost.disaggregated_launch import disaggregated_with_launch

        found = disaggregated_with_launch(
            loaded.model, loaded.served, resolved, deployment, (chosen, ceiling), isl=isl, osl=osl,
            ttft_ms=ttft_ms, itl_ms=itl_ms, rate=rate, link_id=kv_link, simulate=None if closed_form else 1000,
        )  # fmt: skip
        if stand_in:
            found.notes.append(stand_in)
        found.engine_release = deployment.engine_version
        found.priced_as_release, found.priced_rules_release = releases_priced(past_read)
        found.target_alias_note = resolved.alias_note
        _notice_alias(resolved.alias_note, output)
        output.emit(found, render_disaggregated)
        # trial 406 #5: a split read on its means passed a CI gate its simulated p99 missed, where a pinned plan,
        # judged at --slo-percentile 99 (which --disaggregated does not take), fails
        if fail_if_misses and (found.chosen is None or found.p99_past_targets):
            raise typer.Exit(code=EXIT_CHECK_FAILED)
        return
    if tp is None and pp is None:  # --dp has set tp
        from mha_cli.core.cost.search import search_deployments

        found = search_deployments(
            loaded.model, loaded.served, resolved, deployment, (chosen, ceiling), isl=isl, osl=osl,
            concurrency=concurrency, ttft_ms=ttft_ms, itl_ms=itl_ms, rate=rate, client=client,
            slo_percentile=slo_percentile,
        )  # fmt: skip
        if resolved.node_note:
            found.layouts.append(resolved.node_note)
        from mha_cli.core.cost.plan import trained_context_note

        past = trained_context_note(loaded.model, isl + osl)
        if past is not None:
            found.layouts.append(past)
        if stand_in:
            found.layouts.append(stand_in)
        if long_requests:
            found.layouts.append(long_requests)
        longest = None if client is None else longest_past_context(client, isl, osl, deployment)
        if longest is not None and (ttft_ms is not None or itl_ms is not None):  # review 378 #1: as pinned
            missed = [c.model_copy(update={"meets_targets": False, "misses": [*c.misses, context_miss(longest)]})
                      for c in found.candidates]  # fmt: skip
            found = found.model_copy(update={"candidates": missed, "chosen": None, "launch": {}})
        if speculative is not None:
            found.layouts.append(
                f"speculative decoding priced in every candidate: {speculative.method}, k ="
                f" {speculative.num_speculative_tokens}, T = {speculative.acceptance_length:.2f}"
                f" ({speculative.acceptance_source}); plan one with --tp to see it beside plain decoding"
            )
        from mha_cli.core.deployment import mixer_weights_note
        from mha_cli.core.header_weights import header_notes

        if mixer_weights_note(loaded.model) is not None:
            found.layouts.append(mixer_weights_note(loaded.model))
        found.layouts += header_notes(loaded.model, deployment)
        if resolution_note(loaded) is not None:  # plan prints no source line: how an id became the model priced
            found.layouts.append(resolution_note(loaded))
        found.layouts += loaded.read_as  # and what was read where another was there too (review 305 #7)
        found.engine_release = deployment.engine_version
        found.priced_as_release, found.priced_rules_release = releases_priced(past_read)
        found.target_alias_note = resolved.alias_note
        if plot is not None:
            from mha_cli.cli.plan_plot import write_pareto_plot

            write_pareto_plot(plot, found, force=force)
            output.wrote(plot)
        found.lengths_file = replayed_lengths(client, lengths_file)
        output.emit(found, partial(render_search, workload=workload_words(isl, osl, found.lengths_file)))
        _notice_alias(resolved.alias_note, output)
        if fail_if_misses and found.chosen is None:
            raise typer.Exit(code=EXIT_CHECK_FAILED)
        return
    if tp is not None and resolved.n_devices % (tp * (pp or 1)) == 0:  # review 408 #8: a --tp that splits no
        # heads names the largest that does, as kv's (one that does not divide the devices is refused so first)
        from mha_cli.core.fit import with_replicas_hint
        from mha_cli.core.tensor_parallel import heads_split_problem

        problem = heads_split_problem(loaded.model, tp)
        if problem is not None:
            pinned = deployment.model_copy(update={"tp": tp})
            raise with_replicas_hint(BadInputError(problem), loaded.model, pinned, resolved, stages=pp or 1)
    if rate is not None:
        from mha_cli.core.cost.plan import plan_at_rate

        result = plan_at_rate(
            loaded.model, resolved, deployment, chosen, ceiling, isl=isl, osl=osl, rate=rate, tp=tp, pp=pp or 1
        )
    else:
        result = plan_serving(
            loaded.model, resolved, deployment, chosen, ceiling, isl=isl, osl=osl, concurrency=concurrency or 1,
            tp=tp, pp=pp or 1, sweep=plot is not None, ways=True,
        )  # fmt: skip
    if resolution_note(loaded) is not None:  # plan prints no source line: how an id became the model priced
        result.notes.insert(0, resolution_note(loaded))
    result.notes[:0] = loaded.read_as  # and what was read where another was there too (review 305 #7)
    if resolved.node_note:
        result.notes.append(resolved.node_note)
    if stand_in:
        result.notes.append(stand_in)
    if long_requests:
        result.notes.append(long_requests)
    if speculative is not None:
        from mha_cli.core.cost.speculative_plan import compare_speculative

        compared = compare_speculative(
            loaded.model, resolved, deployment, chosen, ceiling, isl=isl, osl=osl, concurrency=result.concurrency,
            tp=tp, pp=pp or 1,
        )  # fmt: skip
        result = result.model_copy(update={"speculative": compared})
    from mha_cli.core.deployment import mixer_weights_note
    from mha_cli.core.header_weights import header_notes

    if mixer_weights_note(loaded.model) is not None:  # the memory plan's weights, and so what fits beside them
        result.notes.append(mixer_weights_note(loaded.model))
    result.notes += header_notes(loaded.model, deployment)
    if client is not None:
        from mha_cli.core.cost.plan import simulate_plan

        result = simulate_plan(
            result, loaded.model, deployment, chosen, client, ttft_ms=ttft_ms, itl_ms=itl_ms,
            slo_percentile=slo_percentile, trace=plot is not None,
        )  # fmt: skip
        replayed = None if result.simulated is None else result.simulated.requests
        if client.lengths is not None and replayed is not None and replayed < len(client.lengths):
            result.notes.append(  # the busiest replica's count: the first pairs, in the file's order
                f"the lengths file holds {len(client.lengths):,} pairs and the busiest replica replayed its first"
                f" {replayed:,} (the file's order, as --num-prompts sets the count): later pairs are not simulated"
            )
    if ttft_ms is not None or itl_ms is not None:
        from mha_cli.core.cost.search import as_candidate

        result = as_candidate(result, ttft_ms, itl_ms)
        longest = None if client is None else longest_past_context(client, isl, osl, deployment)
        if longest is not None and result.simulated is not None:  # trial 377 #2: the launch line refuses them
            refused = context_miss(longest)
            simulated = result.simulated.model_copy(update={"misses": [*result.simulated.misses, refused]})
            result = result.model_copy(
                update={"meets_targets": False, "misses": [*result.misses, refused], "simulated": simulated}
            )
    result.engine_release = deployment.engine_version
    result.priced_as_release, result.priced_rules_release = releases_priced(past_read)
    from mha_cli.core.cost.search import plan_launch

    result.launch, result.launch_note = plan_launch(loaded.served, result, deployment, loaded.model)
    if plot is not None:
        from mha_cli.cli.plan_plot import write_plan_plot

        write_plan_plot(plot, result, force=force)
        output.wrote(plot)
    result.lengths_file = replayed_lengths(client, lengths_file)
    output.emit(result, partial(render_plan, workload=workload_words(isl, osl, result.lengths_file)))
    _notice_alias(resolved.alias_note, output)
    if fail_if_misses and not getattr(result, "meets_targets", True):
        raise typer.Exit(code=EXIT_CHECK_FAILED)


def _notice_alias(alias_note: str | None, output: Output) -> None:
    """``target h100 -> h100-sxm (NVIDIA H100 SXM5 80GB)`` on stderr after the result, as ``kv`` and ``recommend``
    say it (the JSON carries it: ``target_alias_note`` searching, ``memory.alias_note`` for one deployment)."""
    if alias_note:
        output.notice(f"target {alias_note}")


def _one_server(tp: int | None, pp: int, n_devices: int, model: ModelSpec) -> tuple[int | None, bool]:
    """(tp, separate servers) of a line's ``--data-parallel-size 1`` (SGLang's ``--dp-size 1``): one server; over
    every GPU where --tp is not given (as --dp N makes tp follow); where tp x pp GPUs are fewer than the target's,
    an MoE model's replicas are separate servers, each with every expert (the line mha prints for
    ``--separate-servers``, run once per replica); a dense model's are anyway."""
    if tp is None:
        return (n_devices // pp if n_devices % pp == 0 else None), False
    return tp, model.block.moe is not None and tp * pp < n_devices


def _a2a_backend(value: str, model: ModelSpec, *, dp: int | None, pinned: int | None) -> MoeA2aBackend:
    """``--moe-a2a-backend`` checked: a backend name, for an MoE model, with DP attention priced (``--dp``, or a
    search, whose DP attention candidates take it)."""
    from mha_cli.core.schemas import MoeA2aBackend

    if value not in get_args(MoeA2aBackend):
        raise BadInputError(f"--moe-a2a-backend {value!r}: give none (the engines' default) or deepep")
    if model.block.moe is None:
        raise BadInputError(f"--moe-a2a-backend reaches routed experts and {model.name} has none: leave it out")
    if dp is None and pinned:
        raise BadInputError(
            "--moe-a2a-backend is how DP attention reaches the experts: add --dp N (2 or more ranks; --dp 1 is one"
            " server, no DP attention), or leave out --tp and --pp to search"
        )
    return value  # type: ignore[return-value]  # one of get_args(MoeA2aBackend), checked above


LOOP_OPTIONS = ("--num-prompts", "--lengths-file", "--random-range-ratio", "--burstiness", "--seed", "--slo-percentile")
"""The options only the simulated serving loop reads (the client and where targets are read in its distribution)."""


def _check_loop_options(closed_form: bool, rate: float | None, given: dict[str, object]) -> None:
    """One line for a simulated loop's option where no loop reads it: with --closed-form, or --burstiness (the shape
    of --rate's arrival gaps) without --rate."""
    named = [flag for flag, value in given.items() if value is not None]
    if closed_form and named:
        raise BadInputError(
            f"--closed-form skips the simulated serving loop, which alone reads {', '.join(named)}: leave out one or"
            " the other"
        )
    if rate is None and given["--burstiness"] is not None:
        raise BadInputError(
            "--burstiness shapes the gaps between --rate's arrivals: add --rate, or leave it out (--concurrency users"
            " each send their next request when one ends)"
        )


def _check_disaggregated(
    disaggregated: bool, kv_link: str | None, *, tp: int | None, pp: int | None, dp: int | None,
    concurrency: int | None, expert_parallel: bool, separate_servers: bool, plot: Path | None, speculative: object,
    simulated: dict[str, object],
) -> None:  # fmt: skip
    """One line for an option --disaggregated does not price (its plan is closed form: the simulated loop's options do
    not apply), or --kv-link without it."""
    if not disaggregated:
        if kv_link is not None:
            raise BadInputError(
                "--kv-link prices the KV transfer of --disaggregated: add --disaggregated or leave it out"
            )
        return
    if kv_link is not None:  # named before any work, even where no split fits (trial 351 #3)
        from mha_cli.core.links import link

        link(kv_link)
    given = [flag for flag, value in (("--tp", tp), ("--pp", pp), ("--dp", dp), ("--concurrency", concurrency),
                                      ("--plot", plot)) if value is not None]  # fmt: skip
    given += ["--expert-parallel"] if expert_parallel else []
    given += ["--separate-servers"] if separate_servers else []
    given += ["speculative decoding"] if speculative else []
    given += [flag for flag, value in simulated.items() if value is not None]
    if given:
        raise BadInputError(
            f"--disaggregated searches each pool's worker layout (tp, or DP attention with expert parallelism) at its"
            f" goodput (or --rate) in the closed form: leave out {', '.join(given)}"
        )


def _speculative(
    loaded: ModelSource, config: str | None, draft: str | None, k: int | None, acceptance: float | None
) -> SpeculativeSpec | None:
    """The speculative decoding asked for (None: none): ``--speculative-config``'s JSON, its values overridden by
    the simple flags; ``--draft`` alone is a draft model, ``--num-speculative-tokens`` / ``--acceptance-length``
    alone the model's own MTP layers."""
    if config is None and draft is None and k is None and acceptance is None:
        return None
    from mha_cli.core.speculative import MAX_SPECULATIVE_TOKENS, build_spec, has_mtp_layers, parse_speculative_config

    data = {} if config is None else parse_speculative_config(config)
    for flag, value, key in (("--draft", draft, "model"), ("--num-speculative-tokens", k, "num_speculative_tokens"),
                             ("--acceptance-length", acceptance, "acceptance_length")):  # fmt: skip
        if value is not None and key in data and data[key] != value:
            raise BadInputError(
                f"{flag} {value} and --speculative-config's {key} {data[key]!r} disagree: give the value once"
            )
    # each value as typed (a flag, else the JSON's key), checked before the method: what was asked is named (trial
    # 330 #9, review 331 #2)
    k_name = "--num-speculative-tokens" if k is not None else "--speculative-config's num_speculative_tokens"
    t_name = "--acceptance-length" if acceptance is not None else "--speculative-config's acceptance_length"
    k = k if k is not None else data.get("num_speculative_tokens")  # type: ignore[assignment]
    acceptance = acceptance if acceptance is not None else data.get("acceptance_length")  # type: ignore[assignment]
    if k is not None and (isinstance(k, bool) or not isinstance(k, int)):
        raise BadInputError(f"num_speculative_tokens {k!r}: give a whole number of draft tokens")
    if acceptance is not None and (isinstance(acceptance, bool) or not isinstance(acceptance, int | float)):
        raise BadInputError(f"acceptance_length {acceptance!r}: give the mean tokens per target step (a number)")
    if k is not None and not 1 <= k <= MAX_SPECULATIVE_TOKENS:
        raise BadInputError(f"{k_name} {k}: give 1 to {MAX_SPECULATIVE_TOKENS}")
    if acceptance is not None and not acceptance >= 1:
        raise BadInputError(f"{t_name} {acceptance:g}: give the mean tokens per target step, 1 or more")
    method = data.get("method", None if draft or data.get("model") else "mtp")
    if method == "mtp" and "method" not in data and not has_mtp_layers(loaded):
        asked = k_name if k is not None else t_name if acceptance is not None else "--speculative-config"
        raise BadInputError(
            f"{asked} without a method or --draft prices the model's own MTP layers, and {loaded.model.name} has"
            ' none: give --draft MODEL, or --speculative-config \'{"method": "eagle3"}\''
        )
    model = draft if draft is not None else data.get("model")
    if model is not None and not isinstance(model, str):
        raise BadInputError('--speculative-config: "model" must be a string (a preset, config or Hugging Face id)')
    return build_spec(
        loaded.model, origin=loaded.origin, kind=loaded.kind, method=method, draft=model,
        num_speculative_tokens=k, acceptance_length=None if acceptance is None else float(acceptance),
    )  # fmt: skip


MAX_OFFLOAD_GIB = 1 << 20


def _offload_bytes(gib: float | None, prefixes: int | None, shared_prefix: int | None) -> int | None:
    """``--kv-offload-gib`` in bytes (None: not asked), ``--shared-prefixes`` checked beside it: one line each."""
    if prefixes is not None:
        _count(prefixes, "shared-prefixes", MAX_CONCURRENCY)
        if not shared_prefix:  # 0 typed is none too (trial 330 #8: "give --shared-prefix too" where it was given)
            raise BadInputError(
                "--shared-prefixes counts prefixes of --shared-prefix tokens: give --shared-prefix N, 1 or more"
            )
    if gib is None:
        return None
    if not 0 < gib <= MAX_OFFLOAD_GIB:
        raise BadInputError(f"--kv-offload-gib {gib:g}: give host memory per GPU in GiB, above 0 and at most 1 PiB")
    return int(gib * 2**30)


def _started_longer(max_model_len: int, request_tokens: int) -> str:
    """`` (the engine started at max_model_len N)`` where --max-model-len is longer than the requests, else ''."""
    return "" if max_model_len == request_tokens else f" (the engine started at max_model_len {max_model_len:,})"


def _sglang_attention_tp(
    enable_dp_attention: bool, tp: int | None, dp: int | None, pp: int, n_devices: int, engine: str | None
) -> int | None:
    """The tp of each DP-attention rank for SGLang's ``--tp T --dp D --enable-dp-attention`` (T counts every GPU of
    the server's ``pp`` stages' each: ``n_devices`` / pp): T / D; without the flag, ``tp`` as given (each rank's, as
    vLLM's --tensor-parallel-size)."""
    if not enable_dp_attention:
        return tp
    if engine == "vllm":
        raise BadInputError(
            "--enable-dp-attention is SGLang's flag: for vllm, give --dp and each rank's --tp (vLLM's"
            " --data-parallel-size with --tensor-parallel-size), or --engine sglang"
        )
    if engine not in (None, "sglang"):  # TensorRT-LLM's enable_attention_dp is not priced (core.dp_attention)
        raise BadInputError(
            f"--enable-dp-attention is SGLang's flag, and mha prices DP attention for vLLM and SGLang only, not"
            f" {engine}: use --engine sglang, or leave it out"
        )
    if dp is None:
        raise BadInputError("--enable-dp-attention runs --dp attention ranks: give --dp (SGLang's --dp-size)")
    if tp is None:
        return None
    if tp * pp != n_devices:
        raise BadInputError(
            f"--enable-dp-attention: --tp counts every GPU of the server, as SGLang's --tp-size: give --tp"
            f" {n_devices // pp} for the {n_devices} GPU(s){f' in {pp} stages' if pp > 1 else ''}, not {tp}"
        )
    if tp % dp:
        raise BadInputError(
            f"--enable-dp-attention: --tp {tp} counts every GPU of the server, as SGLang's --tp-size, and must be a"
            f" multiple of --dp {dp}"
        )
    return tp // dp


DERIVED_LENGTH = ("auto", "-1")
"""--max-model-len values asking for the engine's own length from the model's config (vLLM's ``auto`` and -1)."""


def _max_model_len(max_model_len: str | None, context: int) -> int | None:
    """The engine's context --max-model-len asks for, read as vLLM reads it (8k is 8,000), at least ``context``
    (--isl + --osl: the engine refuses a longer request); None: the default, ``context`` (``auto`` and -1: what the
    engine derives from the model's config, ``core.engine.longer_context.derived_context``, once it is loaded)."""
    from mha_cli.core.quantities import parse_vllm_int

    if max_model_len is None or max_model_len.strip().lower() in DERIVED_LENGTH:
        return None
    try:
        tokens = parse_vllm_int(max_model_len)  # as vLLM reads it: 8k is 8,000
    except BadInputError as exc:
        raise BadInputError(f"--max-model-len: {exc.message}") from None
    read = "" if max_model_len.strip() == str(tokens) else f" ({tokens:,} tokens as vLLM reads it)"
    if tokens < context:
        raise BadInputError(
            f"--max-model-len {max_model_len}{read}: the engine refuses requests longer than it, and --isl + --osl is"
            f" {context:,}: give at least {context}, or shorter --isl and --osl"
        )
    return None if tokens == context else tokens


def _client(
    num_prompts: int | None, range_ratio: float, burstiness: float, lengths_file: Path | None, seed: int
) -> ClientSpec:
    """The simulated benchmark client from ``plan``'s options (checked here: one line each)."""
    from mha_cli.core.serve.replica import MAX_PROMPTS, ClientSpec
    from mha_cli.core.serve.workload import read_lengths

    if num_prompts is not None:
        _count(num_prompts, "num-prompts", MAX_PROMPTS)
    if not 0 <= range_ratio < 1:
        raise BadInputError(f"--random-range-ratio {range_ratio:g}: give a value in [0, 1)")
    if not 0 < burstiness <= 1e3:
        raise BadInputError(f"--burstiness {burstiness:g}: give a gamma shape greater than 0 (1: Poisson)")
    if lengths_file is not None and range_ratio > 0:  # the file's lengths are replayed as they are
        raise BadInputError(
            f"--random-range-ratio {range_ratio:g} draws lengths around --isl and --osl; --lengths-file replays its"
            " own: give one of them"
        )
    lengths = None if lengths_file is None else read_lengths(lengths_file)
    return ClientSpec(num_prompts=num_prompts, range_ratio=range_ratio, burstiness=burstiness, lengths=lengths,
                      seed=seed)  # fmt: skip


def with_inter_node_link(resolved: ResolvedTarget, link_id: str | None) -> ResolvedTarget:
    """``resolved`` with ``--inter-node-link`` (a ``core.links`` id) between its nodes; refused on one node, where it
    would price nothing."""
    if link_id is None:
        return resolved
    from mha_cli.core.links import network_link, node_devices

    chosen = network_link(link_id)
    if resolved.n_nodes == 1:  # the way out: two whole nodes of the part's reference server (8 H100s each)
        part = resolved.target.id
        raise BadInputError(
            f"--inter-node-link {chosen.id}: {resolved.spec} is one node, so nothing crosses it; give nodes x devices"
            f" per node (--target 2x{node_devices(part)}x{part})"
        )
    return resolved.model_copy(update={"inter_node_link": chosen.id})


def resolved_cpu(resolved: ResolvedTarget, profile: DeviceProfile) -> ResolvedTarget:
    """The cpu target with its roofline rates from ``profile`` (its peaks)."""
    from mha_cli.core.targets import this_cpu

    row = this_cpu(profile.weight_bandwidth.peak / 1e9, profile.matmul.peak / 1e12)
    return resolved.model_copy(update={"target": row})


def replayed_lengths(client: ClientSpec | None, lengths_file: Path | None) -> LengthsReplayed | None:
    """The lengths file the simulated loop replays, summed up (the JSON's ``lengths_file``); None without one."""
    if client is None or client.lengths is None or lengths_file is None:
        return None
    from mha_cli.core.serve.workload import lengths_replayed

    return lengths_replayed(lengths_file, client.lengths)


def workload_words(isl: int, osl: int, replayed: LengthsReplayed | None) -> str:
    """The header's lengths: ``1,024 in / 256 out``, or, where the simulated loop replays a lengths file, the mean of
    the file's pairs beside the --isl and --osl the closed form prices (trial 302 #8: the header said 1,024 in / 256
    out over a file of 2,000- and 3,000-token prompts); a run that replays only its first pairs says so in a note."""
    if replayed is None:
        return f"{isl:,} in / {osl:,} out"
    from mha_cli.core.errors import shown_path

    return (
        f"requests of {shown_path(Path(replayed.path))} (its {replayed.pairs:,} pairs average"
        f" {replayed.mean_isl:,.0f} in / {replayed.mean_osl:,.0f} out; the closed form at {isl:,} in / {osl:,} out)"
    )


def render_plan(console: Console, result: ServingPlan, workload: str | None = None) -> None:
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    from mha_cli.core.quantities import format_bytes

    p = result
    d = p.deployment
    load = (
        f"{p.concurrency:,} user(s) ({p.running_per_replica:,} running per {d.share})"
        if p.rate_rps is None  # an open loop has no users: its rate, and the requests in flight it keeps
        else f"{p.rate_rps:g} req/s ({p.running_per_replica:,} running per {d.share} in the steady state)"
    )
    console.print(
        f"[bold]{escape(result.model_name)}[/bold] on {d.gpus} x {escape(result.target_id)}: {d.describe()};"
        f" {result.engine}; {escape(workload or f'{p.isl:,} in / {p.osl:,} out')}, {load}"
    )
    if result.memory.experts_per_device is not None:
        console.print(f"experts: each device holds {escape(result.memory.experts_per_device)}")
    if p.simulated is not None:
        render_simulation(console, p.simulated, p)
    table = Table(
        title="closed-form estimate (quick bound: steady state, no burst, no percentiles)" if p.simulated else None,
        title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1),
    )  # fmt: skip
    for column in ("", "predicted", "band", "roofline bound"):
        table.add_column(column, justify="left" if not column else "right")
    rows = [
        ("TTFT", p.ttft_ms, p.uncertainty.ttft_ms, p.bounds.ttft_ms),
        ("ITL (per output token)", p.itl_ms, p.uncertainty.itl_ms, p.bounds.itl_ms),
        ("end to end", p.e2e_ms, None, p.bounds.e2e_ms),
    ]
    for label, value, band, bound in rows:
        shown = (
            ""
            if band is None
            else f"{band[0]:,.1f}-{band[1]:,.1f}"
            if band[1] is not None
            else f"{band[0]:,.1f} or more"
        )
        # --rate past what it serves: a request's wait grows with its place in the queue (the figure: once admitted)
        waits = p.saturated and label in ("TTFT", "end to end")
        table.add_row(label, "grows" if waits else f"{value:,.1f} ms", "" if waits else shown, f"{bound:,.1f} ms")
    table.add_row(
        "output tokens/s, all GPUs", f"{p.output_tokens_per_s:,.0f}", "", f"{p.bounds.output_tokens_per_s:,.0f}"
    )
    table.add_row("output tokens/s per GPU", f"{p.output_tokens_per_s_per_gpu:,.0f}", "", "")
    table.add_row("tokens/s per user", f"{p.tokens_per_s_per_user:,.1f}", "", "")
    console.print(table)
    if p.simulated is None:  # the closed form's verdict on the targets (a simulated run prints its own)
        for miss in getattr(p, "misses", []):
            console.print(f"[red]misses: {escape(miss)}[/red]")
    if p.saturated:
        console.print(
            f"[dim]TTFT and end to end grow with a request's place in the queue; once admitted:"
            f" {p.ttft_ms:,.1f} ms and {p.e2e_ms:,.1f} ms (JSON ttft_ms, e2e_ms)[/dim]"
        )
    step = p.decode_step
    console.print(
        f"decode step {step.seconds * 1e3:.2f} ms: operations bound by their bytes {step.memory_s * 1e3:.2f}, by their"
        f" FLOPs {step.compute_s * 1e3:.2f}, collectives {step.collective_s * 1e3:.2f}, fixed"
        f" {step.overhead_s * 1e3:.2f} ({step.kernels:.0f} kernels)"
        f"; prefill {p.prefill_ms:.1f} ms in {p.prefill_chunk_steps} chunk step(s)"
        + (
            f"; front end {p.front_end_ms:.1f} ms a request ({p.front_end_ms / p.ttft_ms:.0%} of the TTFT: API"
            " server, process hops, the first token's way back)"
            if p.front_end_ms
            else ""
        )
    )
    engine = result.memory.engine
    pool = (
        f"{engine.kv_tokens:,} KV tokens per device"
        if engine.kv_bytes_per_token_per_rank
        else "no KV tokens (fixed states only, whatever a request's length)"
    )
    limiting = (
        ""
        if not p.stages
        else f" (stage {min(p.stages, key=lambda stage: stage.limiting_key()).stage}, the one that admits fewest; each stage below)"
    )
    console.print(
        f"engine{limiting}: {pool}, {engine.admitted_per_replica} request(s) of {p.isl + p.osl:,} tokens at"
        f" once per {p.deployment.share}{_started_longer(engine.max_model_len, p.isl + p.osl)}"
    )
    host = None if p.offload is None else p.offload.host
    if host is not None:
        console.print(
            f"host pool: {host.host_tokens:,} KV tokens per device ({host.host_bytes_per_rank / 2**30:,.1f} GiB in"
            f" {host.host_blocks:,} blocks of {host.block_tokens}), beside the GPU's {host.gpu_tokens:,};"
            f" {escape(' '.join(host.flags))}"
        )
    for stage in p.stages:  # pipeline stages: each one's weights and pool on one of its GPUs
        console.print(
            f"  {escape(stage.describe())}: weights {format_bytes(stage.weight_bytes_per_device)} per GPU,"
            f" {stage.kv_tokens_per_device:,} KV tokens, {stage.admitted_per_replica} request(s) at once"
        )
    if p.speculative is not None:
        render_speculative(console, p.speculative, p.concurrency)
    console.print(f"[dim]profile {escape(p.profile.name)} ({p.profile.kind}): {escape(p.uncertainty.how)}[/dim]")
    for note in p.notes:
        console.print(f"[dim]note: {escape(note)}[/dim]")
    for engine_name, line in p.launch.items():  # whole on one line, to copy: the terminal wraps it, not rich
        console.print(f"{engine_name}: {escape(line)}", soft_wrap=True)
    if p.launch_note:
        console.print(f"[dim]launch note: {escape(p.launch_note)}[/dim]")


MOE_MARKS = (
    "dpa / dpg: DP attention, experts whole over every GPU, reached by all-to-all (DeepEP) / by all-gather and"
    " reduce-scatter; dpw / dps: attention ranks sharing the experts whole / split by width, gathered; ep: expert"
    " parallelism within a replica; sep: separate servers, each with every expert (--separate-servers)"
)
"""What the Pareto table's MoE marks after tp x pp x dp mean (``_moe_mark``)."""


def _moe_mark(d: Deployment) -> str:
    """The mark of an MoE layout in the Pareto table (``MOE_MARKS``); DP-attention layouts that spread the experts
    whole and by width both read "dpa" before, and the width-split ones carried no mark at all; "dpa" was said to be
    all-to-all where the layout priced and launched all-gather (newuser trial 242)."""
    if d.dp_attention:
        return " dpa" if d.moe_a2a_backend == "deepep" else " dpg"
    if d.shares_experts:
        return " dpw" if d.expert_parallel else " dps"
    if d.separate_servers:
        return " sep ep" if d.expert_parallel else " sep"
    return " ep" if d.expert_parallel else ""


def render_speculative(console: Console, spec: SpeculativeComparison, users: int) -> None:
    """Speculative decoding beside plain decoding (closed form): at the plan's load, and where it stops paying."""
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    table = Table(
        title=f"speculative decoding ({spec.method}, k = {spec.num_speculative_tokens}, T ="
        f" {spec.acceptance_length:.2f} tokens per target step) against plain decoding, {users} user(s)",
        title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1),
    )  # fmt: skip
    for column in ("", "speculative", "plain"):
        table.add_column(column, justify="left" if not column else "right")
    table.add_row("ITL (per output token)", f"{spec.itl_ms:,.2f} ms", f"{spec.itl_ms_without:,.2f} ms")
    table.add_row(
        "output tokens/s, all GPUs", f"{spec.output_tokens_per_s:,.0f}", f"{spec.output_tokens_per_s_without:,.0f}"
    )
    table.add_row("KV tokens per device", f"{spec.kv_tokens_per_device:,}", f"{spec.kv_tokens_per_device_without:,}")
    table.add_row("drafter weights per device", f"{spec.drafter_weight_bytes_per_device / 2**30:,.2f} GiB", "")
    console.print(table)
    verdict = f"{spec.speedup:.2f}x the per-token speed" + ("" if spec.pays else ", fewer tokens/s: it loses here")
    top = spec.curve[-1].concurrency if spec.curve else users
    where = (
        f"it stops paying from {spec.loses_from:,} users (tokens/s below plain decoding's)"
        if spec.loses_from is not None
        else f"it pays at every load up to {top:,} users"
    )
    console.print(f"speculative: {verdict}; {where}")
    console.print(f"[dim]acceptance length: {escape(spec.acceptance_source)}[/dim]")


def render_simulation(console: Console, sim: SimulatedServing, plan: ServingPlan) -> None:
    """The simulated benchmark run: vllm bench serve's table (mean, median, p90, p99) and what the loop did."""
    from rich import box
    from rich.table import Table

    share = plan.deployment.share  # a replica, or one server's attention rank
    load = (
        f"{sim.users_per_replica} user(s) in a closed loop" if sim.users_per_replica is not None
        else f"{sim.rate_per_replica:g} req/s arriving"
    )  # fmt: skip
    table = Table(
        title=f"simulated serving loop ({sim.engine} scheduler; busiest of {sim.replicas} {share}(s): {load},"
        f" {sim.requests:,} requests)",
        title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1),
    )  # fmt: skip
    for column in ("ms", "mean", "median", "p90", "p99"):
        table.add_column(column, justify="left" if column == "ms" else "right")
    for label, stats in (("TTFT", sim.ttft_ms), ("TPOT", sim.tpot_ms), ("ITL", sim.itl_ms), ("end to end", sim.e2e_ms)):
        table.add_row(label, *(f"{value:,.1f}" for value in (stats.mean, stats.median, stats.p90, stats.p99)))
    console.print(table)
    output = sim.deployment_output_tokens_per_s
    console.print(
        f"output {_figure(output, 0)} tokens/s over all {share}s ({_figure(output / plan.deployment.gpus, 0)} per GPU);"
        f" {_figure(sim.request_throughput, 2)} req/s per {share} over {sim.duration_s:,.1f} s; at most"
        f" {sim.max_running} running and {sim.max_waiting} queued; {sim.preemptions} preemption(s)"
        + (
            f"; prefix cache hit rate {sim.prefix_cache_hit_rate:.1%}"
            if sim.prefix_cache_hit_rate or sim.looked_up
            else ""
        )
        + (f" ({sim.host_hit_rate:.1%} of prompt tokens loaded from the host)" if sim.host_hit_rate else "")
    )
    if plan.speculative is not None:
        console.print(
            f"[dim]speculative decoding: ITL is the gap between streamed chunks (about {plan.speculative.acceptance_length:.2f}"
            " tokens each, as vllm bench serve measures it); TPOT is per token[/dim]"
        )
    if sim.goodput_rps is not None:
        console.print(f"goodput {_figure(sim.goodput_rps, 2)} req/s within the targets (all replicas)")
    if sim.saturated:
        console.print("[bold red]saturated[/bold red]: the queue grew through the run; the rate exceeds what it serves")
    for miss in sim.misses:
        console.print(f"[red]misses: {miss}[/red]")


def _miss_name(miss: str) -> str:
    """``ttft`` of ``ttft 812 ms > 500 ms``, ``p99 ttft`` of the simulated ``p99 ttft 1,062 ms > 1000 ms``."""
    words = miss.split()
    return " ".join(words[:2]) if len(words) > 1 and words[1] in ("ttft", "itl") else words[0].rstrip(":")


def _meets_cell(result: SearchResult, index: int, simulating: bool) -> str:
    """The front table's verdict: the simulated loop's where it ruled the point out, else the candidate's own (a
    closed-form pass the search did not simulate said so when it simulated others: ``simulating``)."""
    c = result.candidates[index]
    if c.ruled_out_by is not None:  # the search's own ruling (``Candidate.ruled_out_by``), as the JSON carries it
        run = result.candidates[c.ruled_out_by]
        return f"no: {', '.join(_miss_name(miss) for miss in run.misses)} at {run.concurrency:,}"
    if not c.meets_targets:
        return "no: " + ", ".join(_miss_name(miss) for miss in c.misses)
    return "yes, not simulated" if simulating and c.simulated is None else "yes"


def _off_the_front(result: SearchResult, chosen: int) -> str:
    """Why the pick is off the front, point by point faster than it: a closed-form miss, a simulated run that ruled
    the point out (named), or a closed-form pass in a layout the search did not simulate (named)."""
    from mha_cli.core.cost.search import load_words, throughput_first

    pick = throughput_first(result.candidates[chosen])  # a tie on tokens/s per GPU goes to tokens/s per user
    faster = [i for i in result.pareto if throughput_first(result.candidates[i]) > pick]
    reasons = []
    if any(not result.candidates[i].meets_targets for i in faster):
        reasons.append("a faster point misses a target")
    for ruled in sorted({r for i in faster if (r := result.candidates[i].ruled_out_by) is not None}):
        run = result.candidates[ruled]
        reasons.append(
            f"{run.deployment.describe()} {load_words(run)} missed {'; '.join(run.misses)} in the simulated"
            f" loop, so its faster points with more {'in flight' if run.rate_rps is not None else 'users'} do too"
        )
    unsimulated = {
        result.candidates[i].deployment.describe(): None
        for i in faster
        if result.candidates[i].meets_targets and result.candidates[i].simulated is None
        and result.candidates[i].ruled_out_by is None
    }  # fmt: skip
    if unsimulated:
        reasons.append(
            f"{' and '.join(unsimulated)} meet the targets in the closed form but were not simulated (the search"
            " bisects each layout's users, skipping those below a simulated pass; a run past the simulator's step"
            " budget keeps the closed form's verdict)"
        )
    return "; ".join(reasons)


def render_search(console: Console, result: SearchResult, workload: str | None = None) -> None:
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    from mha_cli.core.cost.search import load_words
    from mha_cli.core.rules.engine import counted

    targets = []
    if result.ttft_ms is not None:
        targets.append(f"TTFT <= {format_ms(result.ttft_ms)} ms")
    if result.itl_ms is not None:
        targets.append(f"ITL <= {format_ms(result.itl_ms)} ms")
    console.print(
        f"[bold]{escape(result.model_name)}[/bold] on {escape(result.target)}:"
        f" {escape(workload or f'{result.isl:,} in / {result.osl:,} out')};"
        f" {counted(len(result.candidates), 'candidate')}; targets: {', '.join(targets) or 'none'}"
    )
    for line in result.layouts:
        console.print(f"[dim]  {escape(line)}[/dim]")
    table = Table(title="Pareto front (tokens/s per GPU against per user)", title_justify="left", box=box.SIMPLE_HEAD)
    rated = any(c.rate_rps is not None for c in result.candidates)  # under --rate: Little's law's, not users
    load = "in flight" if rated else "users"
    for column in ("", "tp x pp x dp", load, "TTFT ms", "ITL ms", "tok/s/GPU", "tok/s/user", "meets"):
        table.add_column(column, justify="left" if column in ("", "tp x pp x dp", "meets") else "right",
                         no_wrap=column == "tp x pp x dp")  # fmt: skip
    simulating = any(c.simulated is not None for c in result.candidates)
    for index in result.pareto:
        c = result.candidates[index]
        d = c.deployment
        mark = "*" if index == result.chosen else ""
        meets = _meets_cell(result, index, simulating)
        table.add_row(mark, f"{d.tp} x {d.pp} x {d.replicas}{_moe_mark(d)}", f"{c.concurrency:,}", f"{c.ttft_ms:,.0f}",
                      f"{c.itl_ms:,.1f}", f"{c.output_tokens_per_s_per_gpu:,.0f}", f"{c.tokens_per_s_per_user:,.1f}",
                      escape(meets))  # fmt: skip
    captions = []
    if any(_moe_mark(result.candidates[i].deployment) for i in result.pareto):
        captions.append(MOE_MARKS)
    if simulating:
        captions.append(
            "meets: the simulated loop's verdict where it ran, else the closed form's; 'at N': the layout's simulated"
            " run at N users, fewer than this point's, missed (more users wait longer)"
        )
    table.caption = "; ".join(captions) or None
    console.print(table)
    if result.chosen is not None:
        c = result.candidates[result.chosen]
        chosen_front = (
            "" if result.chosen in result.pareto else f" (not on the front: {_off_the_front(result, result.chosen)})"
        )
        console.print(
            f"[bold]pick[/bold] (*): {c.deployment.describe()} {load_words(c)}: {c.output_tokens_per_s_per_gpu:,.0f}"
            f" tokens/s per GPU{chosen_front}"
        )
        if c.simulated is not None:
            sim = c.simulated
            label = "mean" if sim.slo_percentile == 0 else f"p{sim.slo_percentile:g}"
            per_token = ("TPOT", sim.tpot_ms) if sim.itl_read_as_tpot else ("ITL", sim.itl_ms)  # the figure judged
            console.print(
                f"  simulated ({sim.requests:,} requests{_busiest(sim.replicas)}): {label} TTFT"
                f" {sim.ttft_ms.at(sim.slo_percentile):,.0f} ms,"
                f" {label} {per_token[0]} {per_token[1].at(sim.slo_percentile):,.1f} ms,"
                f" {sim.deployment_output_tokens_per_s / c.deployment.gpus:,.0f} tokens/s per GPU"
                + (f", prefix cache hit rate {sim.prefix_cache_hit_rate:.1%}" if sim.looked_up else "")
            )
        if result.ttft_ms is None and result.itl_ms is None:  # trial 407 #4: a 49 s p99 TTFT picked unremarked
            console.print(
                "  [yellow]no --ttft-ms or --itl-ms: the pick is the most tokens/s per GPU at any latency; give them"
                " to bound its TTFT and ITL[/yellow]"
            )
        if c.offload is not None:  # the pick's prefix regime (trial 323 #6: a search named none)
            console.print(f"  [dim]{escape(c.offload.note)}[/dim]")
        for engine, line in result.launch.items():  # whole on one line, to copy: the terminal wraps it, not rich
            console.print(f"  {engine}: {escape(line)}", soft_wrap=True)
        if result.launch_note:
            console.print(f"  [dim]note: {escape(result.launch_note)}[/dim]")
    else:
        console.print("[bold red]no deployment meets the targets[/bold red]")
        if result.nearest_miss is not None:
            c = result.candidates[result.nearest_miss]
            d = c.deployment
            console.print(f"  nearest: {d.describe()} {load_words(c)} misses {escape('; '.join(c.misses))}")
        for way in result.ways_out:  # each searched again: a pick (fits), or the none: line
            console.print(f"  - {escape(way.text)}" + (f": {escape(way.figure)}" if way.fits else ""))
    if result.candidates:  # trial 404 #2: the search printed no band at all
        shown = result.candidates[result.chosen if result.chosen is not None else 0]
        console.print(
            f"[dim]profile {escape(shown.profile.name)} ({shown.profile.kind}): {escape(shown.uncertainty.how)}; read on"
            " the closed form's TTFT and ITL, the simulated percentiles are as uncertain[/dim]"
        )


def register(registry: CommandRegistry) -> None:
    registry.add("plan", plan)


def _busiest(replicas: int) -> str:
    """`` on the busiest of N replicas``: where the simulated requests are one replica's (trial 264: the search's
    count did not say so, and pasting it as --num-prompts, which counts them all, ran another load)."""
    return f" on the busiest of {replicas} replicas" if replicas > 1 else ""


def _figure(value: float, places: int) -> str:
    """``value`` at ``places`` decimals, or at 3 significant digits where those would round it to 0 (trial 372 #4: at
    --rate 0.001 every request met its targets and the goodput read 0.00 req/s)."""
    if value and abs(value) < 0.5 * 10**-places:
        return f"{value:.3g}"
    return f"{value:,.{places}f}"
