"""Options shared by several commands, defined once (after the ``hf`` CLI)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object instead of tables.")]
SOURCE_HELP = (
    "A preset (mha presets), a Hugging Face id (org/name or org/name@revision: its config.json from the local Hugging"
    " Face cache, else the preset for it), a model folder or its config.json, or our config file (mha recommend --out)."
)
SourceArg = Annotated[str, typer.Argument(help=SOURCE_HELP, show_default=False)]


def _vllm_max_model_len(ctx: typer.Context, param: typer.CallbackParam, value: str | None) -> str | None:
    """``--max-model-len`` read as vLLM reads it (``core.quantities.parse_vllm_int``: ``8k`` is 8,000, ``8K`` 8,192),
    passed on as a whole number, ``auto`` or -1 as the option left out; ``--seq`` as typed (``8k`` = 8,192). A value
    vLLM would refuse: one line."""
    from mha_cli.cli.output import print_error
    from mha_cli.cli.typed_spellings import typed_spelling
    from mha_cli.core.errors import BadInputError, MhaError, shown
    from mha_cli.core.quantities import parse_vllm_int
    from mha_cli.core.schemas import MAX_TOKENS

    if value is None or typed_spelling(ctx, param) != "--max-model-len":
        return value
    if value.strip().lower() in ("auto", "-1"):  # vLLM's human_readable_int_or_auto: the length it derives
        return None  # the default: the config file's, else the model's trained context
    try:
        tokens = parse_vllm_int(value)
        if tokens > MAX_TOKENS:  # said here, as typed: the range check after would name --seq (trial 326 #4)
            raise BadInputError(f"must be at most {MAX_TOKENS:,} tokens (got {shown(value)} = {tokens:,})")
    except MhaError as exc:  # as a command's own refusal (``cli.app.guarded``): one line, its exit code
        print_error(f"--max-model-len: {exc.message}")
        raise typer.Exit(code=exc.exit_code) from None
    return str(tokens)


SEQ_HELP = "Tokens per sequence: 8192, 8k (= 8192), 128K; as vLLM's --max-model-len, 8k is 8,000 and 8K 8,192."
SeqOpt = Annotated[
    str | None,
    typer.Option(
        "--seq",
        "--max-model-len",
        help=SEQ_HELP,
        show_default=False,
        callback=_vllm_max_model_len,
    ),
]
BatchOpt = Annotated[int | None, typer.Option("--batch", help="Concurrent sequences.", show_default=False)]

# For commands that read a SOURCE (preset, config file, config.json): where the defaults come from.
SourceSeqOpt = Annotated[
    str | None,
    typer.Option(
        "--seq",
        "--max-model-len",
        help=f"{SEQ_HELP} Default: the config file's, else the model's trained context (max_position_embeddings), else"
        " 8192.",
        show_default=False,
        callback=_vllm_max_model_len,
    ),
]
SourceBatchOpt = Annotated[
    int | None,
    typer.Option("--batch", help="Concurrent sequences. Default: the config file's, else 1.", show_default=False),
]


def _known_kv_dtype(ctx: typer.Context, param: typer.CallbackParam, value: str | None) -> str | None:
    """Refuse an unknown KV cache format in one line that names the option as typed (``--kv-cache-dtype``) and the
    values it takes; the value itself passes on as typed (``fp8_e5m2`` keeps its encoding: ``core.schemas``)."""
    from mha_cli.cli.output import print_error
    from mha_cli.cli.typed_spellings import typed_spelling
    from mha_cli.core.dtypes import normalise_dtype_name
    from mha_cli.core.errors import MhaError

    if value is not None:
        try:
            normalise_dtype_name(value, kv=True)
        except MhaError as exc:  # as a command's own refusal (``cli.app.guarded``): one line, its exit code
            print_error(f"{typed_spelling(ctx, param)}: {exc.message}")
            raise typer.Exit(code=exc.exit_code) from None
    return value


KvDtypeOpt = Annotated[
    str | None,
    typer.Option(
        "--kv-dtype",
        "--kv-cache-dtype",
        callback=_known_kv_dtype,
        help="KV cache format: fp32, fp16, bf16, fp8 (plain), fp8_ds_mla (DeepSeek sparse-MLA layout, sparse MLA only),"
        " nvfp4 (vLLM 0.21.0+ on B200/B300, 0.32 also on Ampere, Ada, Hopper and RTX Blackwell; not MLA), int8, int4. vLLM's values too: fp8_e4m3 and fp8_e5m2 are priced as fp8 (a byte a value), the launch lines asking"
        " for the encoding named (e4m3 is vLLM's plain fp8, written so); auto, vLLM's default, is the same as leaving it out: the model's dtype (bf16; fp16 for a float16 checkpoint; fp32 with --weight-dtype fp32), or the fp8"
        " cache a ModelOpt checkpoint declares where the engine's release runs it; auto also sets aside a config file's kv_dtype.",
        show_default=False,
    ),
]


def _known_weight_dtype(ctx: typer.Context, param: typer.CallbackParam, value: str | None) -> str | None:
    """Refuse a weight format unknown by name (or a vLLM method not priced) in one line that names the option as
    typed; the value passes on as typed, the model-dependent checks later. Typed as vLLM's ``--quantization``
    (pasted), it passes on marked (``PastedQuantization``): on a quantised checkpoint vLLM reads it as the
    checkpoint's own method, which may be one no format prices (compressed-tensors, modelopt, bitsandbytes)."""
    from mha_cli.cli.output import print_error
    from mha_cli.cli.typed_spellings import typed_spelling
    from mha_cli.core.errors import MhaError
    from mha_cli.core.vllm_quantization import PastedQuantization, vllm_quantization_refusal
    from mha_cli.core.weight_formats import normalise_weight_format

    if value is None:
        return None
    pasted = typed_spelling(ctx, param) == "--quantization"
    if pasted and vllm_quantization_refusal(value) is not None:  # a method no format prices: the checkpoint's own,
        return PastedQuantization(value)  # or refused, once it is read (``core.vllm_quantization.pasted_format``)
    try:
        normalise_weight_format(value)
    except MhaError as exc:  # as a command's own refusal (``cli.app.guarded``): one line, its exit code
        print_error(f"{typed_spelling(ctx, param)}: {exc.message}")
        raise typer.Exit(code=exc.exit_code) from None
    return PastedQuantization(value) if pasted else value


WeightDtypeOpt = Annotated[
    str | None,
    typer.Option(
        "--weight-dtype",
        "--quantization",
        callback=_known_weight_dtype,
        help="Weight format for the memory plan: bf16, fp8, int4, ... vLLM's --quantization names for the formats"
        " priced: fp8, awq, gptq, mxfp4; on a quantised checkpoint, --quantization with its own method (fp8,"
        " compressed-tensors, modelopt, ...) keeps it as stored, and another is refused, as vLLM refuses it (gpt-oss's"
        " MXFP4 checkpoint keeps MXFP4 whatever it names, as vLLM does).",
        show_default=False,
    ),
]


def one_or_more(ctx: typer.Context, param: typer.CallbackParam, value: int | None) -> int | None:
    """Refuse a parallel size below 1 (``--tensor-parallel-size=-1`` pasted) in one line naming the option as typed."""
    from mha_cli.cli.output import print_error
    from mha_cli.cli.typed_spellings import typed_spelling
    from mha_cli.core.errors import EXIT_BAD_INPUT

    if value is not None and value < 1:
        print_error(f"{typed_spelling(ctx, param)} {value}: give 1 or more")
        raise typer.Exit(code=EXIT_BAD_INPUT)
    return value


TpOpt = Annotated[
    int | None,
    typer.Option(
        "--tp",
        "--tensor-parallel-size",
        callback=one_or_more,
        help="Tensor-parallel degree (default: the target's device count). Below it, the target's other devices are"
        " used too: a dense model as GPUs / tp replicas, an MoE model as DP attention over GPUs / tp ranks of tp"
        " (its experts over every GPU, as --dp); name a target of tp devices (2xh100) for one server of tp.",
        show_default=False,
    ),
]
CheckTpOpt = Annotated[
    int | None,
    typer.Option(
        "--tp",
        "--tensor-parallel-size",
        callback=one_or_more,
        help="Tensor-parallel degree (default: the target's device count; where that does not split the heads, the"
        " largest degree that divides the devices and does, replicas on the rest: MHA024 warns).",
        show_default=False,
    ),
]
DpOpt = Annotated[
    int | None,
    typer.Option(
        "--dp",
        "--data-parallel-size",
        "--dp-size",
        "--attn-dp-size",
        help="MoE: DP attention over this many data-parallel ranks (SGLang --attn-dp-size, before 0.5.22 --dp with"
        " --enable-dp-attention; vLLM"
        " --data-parallel-size with --enable-expert-parallel): each rank runs attention for its own requests and"
        " caches only them, the routed experts whole over all GPUs, every rank's tokens gathered to them (the"
        " engines' default; plan's --moe-a2a-backend deepep: DeepEP's all-to-all); tp = GPUs / dp unless --tp is"
        " given. plan, a dense model: dp plain replicas (vLLM's --data-parallel-size). 1, the engines' default that every"
        " launch line writes: one server, no DP attention (plan: where its tp x pp GPUs are fewer than the target's,"
        " an MoE model's replicas are separate servers).",
        show_default=False,
    ),
]
MoeA2aOpt = Annotated[
    str | None,
    typer.Option(
        "--moe-a2a-backend",
        help="MoE, DP attention: how each rank's tokens reach the experts. none (the engines' default: every rank's"
        " tokens all-gathered to all before each MoE layer, the sums reduce-scattered back; vLLM's"
        " allgather_reducescatter) or deepep (DeepEP's all-to-all: each token sent only to its experts' GPUs; SGLang"
        " --moe-a2a-backend deepep, vLLM --all2all-backend deepep_low_latency).",
        show_default=False,
    ),
]


def _target_named(value: str | None) -> str | None:
    """Refuse an empty ``--target`` (``--target "$GPU"`` with it unset) in one line: left as it was, it priced no
    target and exited 0, as if the option were not there."""
    from mha_cli.cli.output import print_error
    from mha_cli.core.errors import EXIT_BAD_INPUT

    if value is not None and not value.strip():
        print_error("--target is empty: give an id or alias (`mha targets`), a target file or N x one (8xh100)")
        raise typer.Exit(code=EXIT_BAD_INPUT)
    return value


TargetOpt = Annotated[
    str | None,
    typer.Option(
        "--target",
        help="Hardware: an id or alias (a100, h100, 4090), a target file (my-gpu.yaml: `mha targets --schema`), or"
        " N x one (8xh100, 4xmy-gpu.yaml).",
        show_default=False,
        callback=_target_named,
    ),
]
BlockSizeOpt = Annotated[
    int | None,
    typer.Option(
        "--block-size",
        "--page-size",
        help="Paged cache block size in tokens (vLLM's --block-size, default 16; SGLang's --page-size).",
        show_default=False,
    ),
]
MlaCacheOpt = Annotated[
    str | None,
    typer.Option(
        "--mla-cache",
        help="MLA only: absorbed (cache the latent, default) or naive (per-head K/V).",
        show_default=False,
    ),
]
StateConventionOpt = Annotated[
    str | None,
    typer.Option(
        "--state-convention",
        help="Fixed-state and indexer layers: engine (as vLLM allocates them, default) or transformers (its caches)."
        " Sliding and chunked layers hold their whole window under both (transformers' sliding cache keeps one token"
        " less).",
        show_default=False,
    ),
]
EngineOpt = Annotated[
    str | None,
    typer.Option(
        "--engine",
        help="Serving engine whose memory rules size the KV pool: vllm (default), sglang, trtllm; its latest"
        " generation modelled, or the one a version picks (vllm@0.10, vllm==0.11.0, sglang@0.4.6, trtllm@0.8, or an"
        " image: vllm/vllm-openai:v0.11.0, lmsysorg/sglang:v0.5.6-cu129). A release newer than the newest read, of"
        " any engine (vllm@0.99, trtllm@9.9, a major alone as vllm@1), is"
        " priced as that newest release, with a notice.",
        show_default=False,
    ),
]
PricingEngineOpt = Annotated[
    str | None,
    typer.Option(
        "--engine",
        help="Serving engine whose memory rules size the KV pool and whose generation's step costs price the latency"
        " (as in `mha plan`): vllm (default), sglang, trtllm; its latest generation modelled, or the one a version"
        " picks (vllm@0.10, vllm==0.11.0, sglang@0.4.6, trtllm@0.8, or an image: vllm/vllm-openai:v0.11.0). A"
        " release newer than the newest read, of any"
        " engine (vllm@0.99, trtllm@9.9, a major alone as vllm@1), is priced as that newest release, with a notice.",
        show_default=False,
    ),
]
KvCacheGibOpt = Annotated[
    float | None,
    typer.Option(
        "--kv-cache-gib",
        help="vLLM: the KV pool per GPU (or on the CPU) in GiB, set outright as --kv-cache-memory-bytes or"
        " VLLM_CPU_KVCACHE_SPACE sets it, instead of derived from the memory utilisation (vLLM 0.10.2 or later;"
        " its CPU backend 0.4.1 or later).",
        show_default=False,
    ),
]


def kv_cache_bytes(gib: float | None) -> int | None:
    """``--kv-cache-gib`` in bytes (refused unless above 0 and at most 1 PiB)."""
    from mha_cli.core.errors import BadInputError

    if gib is None:
        return None
    from mha_cli.core.ways import gib_as_bytes

    if not 0 < gib <= 1 << 20:
        raise BadInputError(
            f"--kv-cache-gib {gib:g}: give the pool in GiB, greater than 0 and at most 1,048,576 (1 PiB)"
        )
    return gib_as_bytes(gib)


def _engine_share(ctx: typer.Context, param: typer.CallbackParam, value: float | None) -> float | None:
    """The share as typed, marked with its spelling where that is one engine's own (``core.engine.share_spelling``:
    SGLang's name picks SGLang where no --engine is given, and is refused beside another engine)."""
    from mha_cli.cli.typed_spellings import typed_spelling
    from mha_cli.core.engine.share_spelling import ENGINE_OF_SPELLING, EngineShare

    spelling = typed_spelling(ctx, param)
    return EngineShare(value, spelling) if value is not None and spelling in ENGINE_OF_SPELLING else value


UtilisationOpt = Annotated[
    float | None,
    typer.Option(
        "--gpu-memory-utilization",
        "--mem-fraction-static",
        "--free-gpu-memory-fraction",
        callback=_engine_share,
        help="The engine's share of device memory (0-1]: vLLM gpu_memory_utilization (default 0.9), SGLang"
        " mem_fraction_static (default from the GPU size), TRT-LLM free_gpu_memory_fraction (default 0.9). Typed"
        " under SGLang's or TRT-LLM's name without --engine, it prices that engine; beside another --engine, it is"
        " refused.",
        show_default=False,
    ),
]
MaxBatchedTokensOpt = Annotated[
    int | None,
    typer.Option(
        "--max-num-batched-tokens",
        "--chunked-prefill-size",
        help="Tokens of one engine step (sizes vLLM's profiling run). Default: the engine's for this GPU.",
        show_default=False,
    ),
]
MaxNumSeqsOpt = Annotated[
    int | None,
    typer.Option(
        "--max-num-seqs",
        help="Sequences of one engine step (a DP-attention rank's; SGLang's --max-running-requests counts every"
        " rank's). Default: the engine's for this GPU.",
        show_default=False,
    ),
]
LimitMmOpt = Annotated[
    str | None,
    typer.Option(
        "--limit-mm-per-prompt",
        help="vLLM's --limit-mm-per-prompt: most images or videos per prompt (image=2,video=0 or"
        " '{\"image\": 2}'); sizes the vision encoder's profiling run. Default: vLLM's 999 each.",
        show_default=False,
    ),
]
TextOnlyOpt = Annotated[
    bool,
    typer.Option(
        "--text-only",
        "--language-model-only",
        help="Serve a multimodal model for text only (every --limit-mm-per-prompt 0): no encoder profiling, and"
        " vLLM (0.32) does not load the vision tower.",
    ),
]
AsyncSchedulingOpt = Annotated[
    bool | None,
    typer.Option(
        "--async-scheduling/--no-async-scheduling",
        help="vLLM's async scheduling (its own flags, from 0.10.0; on by default from 0.14.0; refused with --pp > 1"
        " in 0.10.0-0.14.x). From 0.26.0 a sliding window reserves blocks for the steps in flight: 2 at pp 1 with it"
        " on, 1 off; with pipeline stages the stage count (+1 on Model Runner V2). Default: the release's.",
        show_default=False,
    ),
]

PrefixCachingOpt = Annotated[
    bool | None,
    typer.Option(
        "--enable-prefix-caching/--no-enable-prefix-caching",
        help="The engine's prefix cache (vLLM's flags; SGLang's --disable-radix-cache, which sizes a hybrid's state"
        " pool). On vLLM it changes the plan of a model with Mamba or linear-attention layers beside attention:"
        " on (by default from 0.28.0) a request holds 2 state pages in each state group (the Mamba 'align' mode;"
        " a prefill checkpoint adds one, Mamba-2 from 0.32, Gated DeltaNet on Hopper from 0.33), off 1; 0.10-0.11.0"
        " turn it off; the Mamba families' 'all' mode (0.11.1-0.27, asked) and an attention-free model's are refused."
        " Default: the release's.",
        show_default=False,
    ),
]


def named_path(option: str) -> Callable[[str], Path]:
    """A parser for the output path of ``option`` that refuses an empty one (``--out-dir "$DIR"`` with it unset) in
    one line (exit 2): typer reads "" as the folder '.', the working folder."""

    def parse(value: str) -> Path:
        from mha_cli.cli.output import print_error
        from mha_cli.core.errors import EXIT_BAD_INPUT

        if isinstance(value, str) and not value.strip():
            print_error(f"{option} is empty: give a path")
            raise typer.Exit(code=EXIT_BAD_INPUT)
        return Path(value)

    return parse


ForceOpt = Annotated[bool, typer.Option("--force", help="Overwrite an existing output file.")]
PlotOpt = Annotated[
    Path | None,
    typer.Option(
        "--plot",
        parser=named_path("--plot"),
        help="Also draw the KV cache against the context (kv: MHA/GQA/MQA/MLA of this shape; recommend: every row of"
        " its alternatives) and, with --target, memory against the batch, to this PNG (replaced only with --force).",
        show_default=False,
    ),
]
ProfileOpt = Annotated[
    str | None,
    typer.Option(
        "--profile",
        help="Device profile the predicted times use: a name `mha calibrate` wrote, a profile file, or a target's"
        " shipped prior (h200-prior). Default: verify uses this device's newest calibration (on a GPU, else its"
        " prior); plan uses the target's prior.",
        show_default=False,
    ),
]
TtftOpt = Annotated[
    float | None,
    typer.Option("--ttft-ms", help="TTFT target (ms) a deployment must meet.", show_default=False),
]
RecommendItlOpt = Annotated[
    float | None,
    typer.Option(
        "--itl-ms",
        help="ITL target (ms between output tokens) the serving search judges at p99 of the simulated run's gaps.",
        show_default=False,
    ),
]
ItlOpt = Annotated[
    float | None,
    typer.Option(
        "--itl-ms",
        help="ITL target (ms between output tokens) a deployment must meet at --slo-percentile of the gaps; the"
        " goodput counts each request's TPOT against it (vllm bench serve --goodput tpot). Under speculative decoding,"
        " read on TPOT (a step streams several tokens at once, so the gap between chunks is not a token's time).",
        show_default=False,
    ),
]


def check_latency_targets(ttft_ms: float | None, itl_ms: float | None) -> None:
    """Refuse a --ttft-ms or --itl-ms that is not a time in milliseconds."""
    from mha_cli.core.errors import BadInputError

    for name, value in (("ttft-ms", ttft_ms), ("itl-ms", itl_ms)):
        if value is not None and not 0 < value < 1e9:
            raise BadInputError(f"--{name} {value:g}: give a time in milliseconds, greater than 0 and below 10^9")


def named(ctx: typer.Context, parameter: str) -> bool:
    """Whether the command's option ``parameter`` (its Python name: ``seed``) was given on the command line or in its
    environment variable, not left at its default: ``--seed 0`` is named though 0 is the default."""
    source = ctx.get_parameter_source(parameter)
    return source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT")
