"""What ``mha recommend`` takes and returns: the request and the result models."""

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, SerializeAsAny, ValidationError, computed_field, model_validator

from mha_cli.core.cost.latency import StepLatency
from mha_cli.core.deployment import FALLBACK_SEQ_LEN, UTILISATION_FLAGS, check_async_scheduling
from mha_cli.core.dtypes import FP8_DS_MLA, Fp8Variant, default_kv_for_weights, is_engine_default_kv, with_fp8_variant
from mha_cli.core.engine.generations import generation_of, typed_release
from mha_cli.core.engine.plan import EnginePlan
from mha_cli.core.engine.settings import engine_name
from mha_cli.core.errors import BadInputError
from mha_cli.core.kv import KvFootprint
from mha_cli.core.memory import MemoryPlan
from mha_cli.core.params import ParamBreakdown
from mha_cli.core.quantities import parse_param_count
from mha_cli.core.record import Record, empty_list
from mha_cli.core.roofline import Roofline
from mha_cli.core.rules import catalog as C
from mha_cli.core.rules.engine import Finding
from mha_cli.core.schemas import (
    MAX_VOCAB,
    EngineName,
    EngineVersion,
    GenerationId,
    KvDtype,
    MhaConfig,
    ModelSpec,
    TokenCount,
    Variant,
    WeightDtype,
    upper_variant,
)
from mha_cli.core.validation import describe_validation_error
from mha_cli.core.ways import WayOut

Priority = Literal["inference", "training", "balanced"]
PRIORITIES: tuple[Priority, ...] = ("inference", "training", "balanced")

_OPTION_NAMES = {
    "params": "--params", "seq_len": "--seq", "target": "--target", "batch": "--batch", "kv_dtype": "--kv-dtype",
    "kv_fp8_variant": "--kv-dtype", "weight_dtype": "--weight-dtype", "priority": "--priority", "tp": "--tp",
    "vocab_size": "--vocab",
    "d_model": "--d-model", "variant": "--variant", "active_params": "--active-params", "experts": "--experts",
    "top_k": "--top-k", "shared_experts": "--shared-experts", "dense_layers": "--dense-layers", "engine": "--engine",
    "engine_generation": "--engine", "engine_version": "--engine", "gpu_memory_utilization": UTILISATION_FLAGS,
    "max_num_batched_tokens": "--max-num-batched-tokens", "max_num_seqs": "--max-num-seqs",
    "kv_cache_memory_bytes": "--kv-cache-gib", "async_scheduling": "--async-scheduling",
}  # fmt: skip


def _param_count(value: Any) -> Any:
    return parse_param_count(value) if isinstance(value, str) else value


class RecommendRequest(Record):
    """The skill's inputs; ``RecommendRequest.parse`` turns a bad value into one ``BadInputError`` line."""

    params: Annotated[int, BeforeValidator(_param_count), Field(gt=0)]
    """Parameter budget (total parameters); strings such as ``7B`` are parsed."""
    seq_len: TokenCount = FALLBACK_SEQ_LEN
    """Target context: tokens per sequence the cache must hold (``8k`` parses)."""
    target: str | None = None
    """Hardware target id or alias (``a100``, ``8xh100``)."""
    batch: Annotated[int, Field(gt=0, le=1 << 20)] = 1
    """Concurrent sequences."""
    kv_dtype: KvDtype = "bf16"
    kv_fp8_variant: Annotated[Fp8Variant, Field(exclude_if=lambda value: value == "e4m3")] = "e4m3"
    """An fp8 cache's encoding, from ``kv_dtype`` as typed (``DeploymentSpec.kv_fp8_variant``)."""
    weight_dtype: WeightDtype = "bf16"
    priority: Priority = "balanced"
    tp: Annotated[int, Field(gt=0, le=4096)] | None = None
    """Tensor-parallel degree; default: the target's device count."""
    vocab_size: Annotated[int, Field(gt=0, le=MAX_VOCAB)] | None = None
    d_model: Annotated[int, Field(gt=0, le=1 << 20)] | None = None
    """Fixes the width, at most the model schema's bound on widths (2^20) before any shape is tried (the heads'
    divisors are searched); the schema's other bounds apply when the design is built."""
    variant: Annotated[Variant, BeforeValidator(upper_variant)] | None = None
    """An explicit request; ``None`` lets the rules choose."""
    active_params: Annotated[int, BeforeValidator(_param_count), Field(gt=0)] | None = None
    """MoE: parameters one token uses (``params`` is then the total, every expert counted); None for dense."""
    experts: Annotated[int, Field(ge=2, le=C.MOE_MAX_EXPERTS)] | None = None
    """MoE: routed experts per layer; default: the number that fills the total."""
    top_k: Annotated[int, Field(ge=1, le=1 << 10)] | None = None
    """MoE: routed experts per token; default 8 (a quarter of the experts below 64)."""
    shared_experts: Annotated[int, Field(ge=0, le=16)] | None = None
    """MoE: experts every token uses besides the routed ones, each as wide as a routed expert; default 0."""
    dense_layers: Annotated[int, Field(ge=0, le=64)] | None = None
    """MoE: leading layers with a dense MLP (DeepSeek's first_k_dense_replace); default 0."""
    engine: Annotated[EngineName, BeforeValidator(engine_name)] | None = None
    """Serving engine whose memory rules plan the deployment (``DeploymentSpec.engine``)."""
    engine_generation: GenerationId | None = None
    """The engine's generation (``--engine vllm@0.10``; ``DeploymentSpec.engine_generation``); None: its latest."""
    engine_version: EngineVersion | None = None
    """The release typed (``--engine sglang@0.5.2`` -> ``0.5.2``; ``DeploymentSpec.engine_version``), whose rules
    price the deployment where its generation covers it; None: the generation's latest."""
    gpu_memory_utilization: Annotated[float, Field(gt=0, le=1)] | None = None
    max_num_batched_tokens: Annotated[int, Field(gt=0, le=1 << 34)] | None = None
    """The engine step (``DeploymentSpec.max_num_batched_tokens``, bounded alike: a token count)."""
    max_num_seqs: Annotated[int, Field(gt=0, le=1 << 20)] | None = None
    kv_cache_memory_bytes: Annotated[int, Field(gt=0, le=1 << 50)] | None = None
    """vLLM's pool set outright, per rank in bytes (``--kv-cache-gib``; ``DeploymentSpec.kv_cache_memory_bytes``)."""
    async_scheduling: bool | None = None
    """vLLM's async scheduling as set (``--async-scheduling`` / ``--no-async-scheduling``;
    ``DeploymentSpec.async_scheduling``); None: the release's default."""

    @model_validator(mode="before")
    @classmethod
    def _fp8_variant_from_kv_dtype(cls, fields: Any) -> Any:
        """The fp8 encoding ``kv_dtype`` names (``fp8_e5m2``), kept before the name is read as its format (fp8)."""
        return with_fp8_variant(fields)

    @model_validator(mode="before")
    @classmethod
    def _cache_follows_fp32_weights(cls, fields: Any) -> Any:
        """fp32 weights run vLLM's and SGLang's default cache in fp32 (``core.engine.plan.fp32_cache_note``): the
        cache priced when none is asked (review 363 #1: a bf16 cache was priced and refused as not starting)."""
        if not isinstance(fields, dict) or not (
            fields.get("kv_dtype") is None or is_engine_default_kv(fields["kv_dtype"])
        ):
            return fields
        follows = default_kv_for_weights(engine_name(fields.get("engine")), str(fields.get("weight_dtype") or "bf16"))
        return fields if follows is None else {**fields, "kv_dtype": follows}  # 364 #1: auto beside fp32 too

    @model_validator(mode="before")
    @classmethod
    def _engine_and_generation(cls, fields: Any) -> Any:
        """``engine="vllm@0.10.2"`` sets the engine, the generation the version picks (refused as ``--engine``
        when no generation covers it) and the release typed (as ``core.deployment.merge_deployment``)."""
        if isinstance(fields, dict) and fields.get("engine") is not None and fields.get("engine_generation") is None:
            chosen, typed = generation_of(fields["engine"]), typed_release(fields["engine"])
            fields = {**fields, "engine": chosen.engine, "engine_generation": chosen.id}
            fields.update({} if typed is None else {"engine_version": typed})
        return fields

    @model_validator(mode="after")
    def _no_sparse_mla_cache(self) -> "RecommendRequest":
        """``fp8_ds_mla`` is sparse MLA's cache (``core.kv.check_kv_dtype_fits``), and recommend designs none: said
        before any variant is priced, where the first one priced (MHA) named itself as the problem."""
        if self.kv_dtype == FP8_DS_MLA:
            raise ValueError(
                "fp8_ds_mla is sparse MLA's cache (models with DeepSeek-V3.2's indexer); recommend designs dense"
                " attention and dense MLA: use --kv-dtype fp8"
            )
        if self.kv_dtype == "nvfp4" and self.variant == "MLA":
            raise ValueError(
                "nvfp4 is vLLM's fp4 cache for K and V heads, which it refuses with MLA: use --kv-dtype fp8"
            )
        return self

    @classmethod
    def parse(cls, **fields: Any) -> "RecommendRequest":
        """Validate ``fields`` (``None`` means the default); every problem is one line naming the option."""
        try:
            request = cls.model_validate({key: value for key, value in fields.items() if value is not None})
        except ValidationError as exc:
            raise BadInputError(describe_validation_error(exc, _OPTION_NAMES)) from exc
        if request.async_scheduling is not None:  # vLLM's, from 0.10.0: refused as `mha kv` refuses it
            check_async_scheduling(request.model_dump())
        return request


class ModelSummary(Record):
    """The recommended geometry; the key names are stable for scripts."""

    d_model: int
    n_layers: int
    n_heads: int
    n_kv_heads: int | None
    """KV heads; None for MLA, which caches one shared latent (``kv_lora_rank`` + ``qk_rope_head_dim``)."""
    head_dim: int | None
    """Width of one query/key head; None for MLA (see ``qk_nope_head_dim`` in the config's mla block)."""
    variant: Variant
    total_params: int
    active_params: int
    """Parameters one token multiplies by (``ParamBreakdown.active``): the total less the routed experts it skips
    and the lookup tables (the input embedding when untied)."""
    d_ff: int
    vocab_size: int
    tied_embeddings: bool
    kv_lora_rank: int | None = None
    """MLA only: width of the cached latent."""
    qk_rope_head_dim: int | None = None
    """MLA only: width of the decoupled RoPE key cached beside the latent."""
    layer_types: list[str] = Field(default_factory=empty_list)
    """One entry per layer, transformers' names: ``full_attention`` or ``sliding_attention`` (MHA028)."""
    sliding_window: int | None = None
    """Tokens a sliding-window layer caches; None when every layer is global."""
    experts: int | None = None
    """MoE only: routed experts per layer (None for dense designs)."""
    top_k: int | None = None
    """MoE only: routed experts per token (None for dense designs)."""
    d_ff_expert: int | None = None
    """MoE only: hidden width of one routed expert."""
    shared_experts: int | None = None
    """MoE only: experts every token uses besides the routed ones, each ``d_ff_expert`` wide."""
    dense_layers: int | None = None
    """MoE only: leading layers with a dense MLP of ``d_ff`` instead of experts."""


class InitPlan(Record):
    """Initialisation of the attention projections: scheme and standard deviations."""

    scheme: str
    std: dict[str, float]
    """Standard deviation of the normal each projection's weights are drawn from, by projection."""


class TestHook(Record):
    """A synthetic task a 2-layer version of the design should solve, and the command that runs it."""

    task: str
    pattern: str
    n_layers: int
    n_heads: int
    n_kv_heads: int | None
    """None for MLA (one shared latent)."""
    head_dim: int | None
    variant: Variant
    accuracy_threshold: float
    how: str
    command: str
    """The command that trains the 2-layer copy and checks the threshold (`mha verify CONFIG --hook`)."""


class Alternative(Record):
    """One candidate of the trade-off step: the chosen width under another attention, solved for depth and priced."""

    label: str
    variant: Variant
    n_kv_heads: int | None
    """KV heads; None for MLA."""
    kv_lora_rank: int | None = None
    """MLA only: the cached latent's width."""
    qk_rope_head_dim: int | None = None
    """MLA only: the decoupled RoPE key cached beside the latent."""
    n_layers: int
    """Depth at which this candidate spends the budget."""
    tp: int
    """The smallest tensor-parallel degree at which it fits the target (or --tp)."""
    is_recommended: bool
    bytes_per_token: int
    bytes_per_sequence: int
    """One sequence of seq_len tokens, the whole model (``kv_footprint``'s figure)."""
    kv_bytes_per_device: int
    """The cache one device holds: its rank's share of its replica's sequences (the plan's figure); without a
    target, the whole batch on one device."""
    max_sequences: int | None
    """Sequences of seq_len that fit beside the weights on the target, over all replicas (None without one)."""
    pool_sequences: int | None = None
    """Where the engine's max_num_seqs caps ``max_sequences``: the sequences of seq_len its KV pool holds, over all
    replicas (vLLM's "Maximum concurrency", whole; trial 400 #2: GQA-2 and MQA both read 256); None: no cap."""
    fits: bool | None
    total_params: int
    quality_risk: str
    quality_source: str
    """The paper the quality-risk label comes from."""
    verdict: str
    """What the trade-off step decided about it: chosen, excluded (rule), does not fit, higher risk, ..."""
    layer_pattern: str | None = None
    """A local:global window pattern (MHA028), e.g. ``5:1 w1024``: 5 layers caching at most 1,024 tokens per global
    layer; None: every layer global."""
    kv_bytes_at_seq: int = 0
    """One sequence of seq_len tokens, every layer its own tokens (windows applied): ``bytes_per_sequence``."""
    note: str
    model: ModelSpec | None = Field(default=None, exclude=True, repr=False)
    """The candidate the trade-off step priced, whole (not in the JSON, whose fields above describe it): what
    ``--plot`` draws its curve from; None in a result read back from JSON."""


class RecommendResult(Record):
    """Everything ``mha recommend`` reports; ``model``, ``kv.bytes_per_token`` and ``rules_fired`` are stable."""

    request: RecommendRequest
    model: ModelSummary
    variant_reason: str
    """One sentence tying the variant to the KV-cache limits."""
    budget_deviation: float
    """(total_params - budget) / budget."""
    params: ParamBreakdown
    weight_bytes: int
    kv: KvFootprint
    memory: MemoryPlan | None
    roofline: Roofline | None
    latency: StepLatency | None = None
    """The cost model's decode step and prefill on the target's prior, beside the roofline (``core.cost.latency``)."""
    deployment_search: SerializeAsAny[Record] | None = None
    """With --ttft-ms / --itl-ms: ``mha plan``'s search for the recommended design on the target (a
    ``core.cost.search.SearchResult``, serialised as one; typed as a plain record so that a recommendation without
    targets never imports the search)."""
    fits: bool | None
    """Whether weights and the batch's cache fit the target; None without a target."""
    ways_out: list[WayOut]
    """When the plan does not fit: the changes that make it fit, each run through the recommender again before it
    is kept (``core.ways.settle``; pairs when no single change does), or one ``none: ...`` entry."""
    warnings: list[str] = Field(default_factory=empty_list)
    """Warnings about the plan outside the rules: a bf16 plan on a target without bf16 (V100, T4), tp spanning nodes."""
    """What would make a plan that does not fit fit (flags as the options parse them)."""
    init: InitPlan
    qkv_bias: bool
    o_bias: bool
    testability: TestHook
    alternatives: list[Alternative]
    trace: list[Finding]
    rules_fired: list[str]
    config: MhaConfig
    """The config file ``--out`` writes."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def engine(self) -> EnginePlan | None:
        """The serving engine's plan on one rank of one replica (``memory.engine``); None without a target."""
        return self.memory.engine if self.memory is not None else None
