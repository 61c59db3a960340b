"""vLLM's KV pool in blocks: pages per layer, the hybrid allocator's groups, tokens and maximum concurrency.

The rules, from vLLM V1 (``v1/core/kv_cache_utils.py`` and ``v1/kv_cache_interface.py``, 0.10-0.11):

- A page is one block of ``block_size`` tokens of one layer on one rank: 2 x block x KV heads x head_dim x bytes
  (MLA: block x (latent + RoPE key) x bytes, no factor 2).
- Layers are grouped by kind (full attention, or a sliding window). With one kind, all layers form one group.
  With several (Gemma 2/3, gpt-oss), the group size is the smallest kind's layer count and each kind fills
  ceil(count / group size) groups, the last padded with empty slots (Gemma-3-27B: 10 full + 52 sliding layers ->
  7 groups of 10, 8 slots wasted). Chunked local attention (Llama 4) turns the hybrid allocator off: every layer
  is then priced as full attention.
- num_blocks = available // (page x group size): every group draws its blocks from one shared pool.
- "GPU KV cache size: N tokens" is num_blocks // groups x block_size: the tokens one request could hold in every
  group at once, not what each layer's own kind would allow.
- "Maximum concurrency for L tokens per request" is num_blocks / (blocks one request needs, summed over the
  groups): ceil(L / block) for a full group, ceil(min(window - 1 + max_num_batched_tokens, L) / block) + 1 for a
  sliding one. With a window smaller than a step's tokens the window saves little.
- At start-up vLLM refuses a pool that cannot hold one request of max_model_len: the bytes it needs are each
  layer's blocks for one request (``request_bytes``), and it names the longest length that would fit.
"""

from typing import Literal

from mha_cli.core.record import Record
from mha_cli.core.schemas import ModelSpec

PageKind = Literal["full", "sliding"]


class KvGroup(Record):
    """One of vLLM's KV cache groups: layers of one kind sharing a block table."""

    kind: PageKind
    window: int | None
    n_layers: int
    """Layers of the model in this group (the last group of a kind may hold fewer than the group size)."""
    blocks_per_request: int
    """Blocks one request of max_model_len tokens takes in this group."""


class PagedPool(Record):
    """The block pool of one rank as vLLM sizes it."""

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


def layer_kinds_for_vllm(model: ModelSpec) -> tuple[dict[tuple[PageKind, int | None], int], bool]:
    """(the layers that cache tokens by page kind and window, in the order their first layer comes; whether the
    hybrid allocator keeps kinds apart)."""
    kinds = model.token_layer_kinds()
    hybrid = "chunked" not in kinds
    pages: dict[tuple[PageKind, int | None], int] = {}
    for kind, count in kinds.items():
        page: tuple[PageKind, int | None] = (
            ("sliding", model.sliding_window) if kind == "local" and hybrid else ("full", None)
        )
        pages[page] = pages.get(page, 0) + count
    return pages, hybrid


def _blocks_for(kind: PageKind, window: int | None, *, max_model_len: int, step_tokens: int, block: int) -> int:
    if kind == "full" or window is None:
        return -(-max_model_len // block)
    return -(-min(window - 1 + step_tokens, max_model_len) // block) + 1


def paged_pool(
    model: ModelSpec,
    *,
    available_bytes: int,
    bytes_per_token_per_layer: int,
    block_size: int,
    max_model_len: int,
    max_num_batched_tokens: int,
) -> PagedPool:
    """vLLM's blocks, tokens and maximum concurrency for ``available_bytes`` on one rank (see the module rules)."""
    counts, hybrid = layer_kinds_for_vllm(model)
    n_layers = sum(counts.values())
    page = block_size * bytes_per_token_per_layer
    group_size = min(counts.values()) if len(counts) > 1 else n_layers
    groups: list[KvGroup] = []
    for (kind, window), count in counts.items():
        blocks = _blocks_for(
            kind, window, max_model_len=max_model_len, step_tokens=max_num_batched_tokens, block=block_size
        )
        n_groups = -(-count // group_size)
        for g in range(n_groups):
            in_group = min(group_size, count - g * group_size)
            groups.append(KvGroup(kind=kind, window=window, n_layers=in_group, blocks_per_request=blocks))
    padding = len(groups) * group_size - n_layers
    blocks = max(0, available_bytes) // (page * group_size) if page and group_size else 0
    per_request = sum(group.blocks_per_request for group in groups)
    return PagedPool(
        page_bytes=page, layers_per_group=group_size, padding_layers=padding, groups=groups, hybrid_allocator=hybrid,
        kv_blocks=blocks, kv_tokens=blocks // len(groups) * block_size if groups else 0,
        blocks_per_request=per_request, max_concurrency=blocks / per_request if per_request else 0.0,
    )  # fmt: skip


def request_bytes(
    model: ModelSpec,
    *,
    max_model_len: int,
    bytes_per_token_per_layer: int,
    block_size: int,
    max_num_batched_tokens: int,
) -> int:
    """Bytes one request of ``max_model_len`` tokens needs on a rank, summed layer by layer (vLLM's
    ``check_enough_kv_cache_memory``: each layer's ``max_memory_usage_bytes``)."""
    layers, _ = layer_kinds_for_vllm(model)
    page = block_size * bytes_per_token_per_layer
    return page * sum(
        count
        * _blocks_for(kind, window, max_model_len=max_model_len, step_tokens=max_num_batched_tokens, block=block_size)
        for (kind, window), count in layers.items()
    )


def longest_request(
    model: ModelSpec,
    *,
    available_bytes: int,
    bytes_per_token_per_layer: int,
    block_size: int,
    max_num_batched_tokens: int,
    max_model_len: int,
) -> int:
    """The longest max_model_len (at most ``max_model_len``) one request of which fits ``available_bytes``; 0 if none
    (vLLM's ``estimate_max_model_len``, a binary search over the same bytes)."""

    def fits(length: int) -> bool:
        needed = request_bytes(
            model, max_model_len=length, bytes_per_token_per_layer=bytes_per_token_per_layer, block_size=block_size,
            max_num_batched_tokens=max_num_batched_tokens,
        )  # fmt: skip
        return needed <= available_bytes

    low, high = 0, max_model_len + 1  # fits(low) holds by convention, fits(high) is never asked
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low
