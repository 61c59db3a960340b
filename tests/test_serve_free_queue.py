"""Several shared prefixes in vLLM's free block queue (``core.serve.free_queue``): the simulator's prefix hits equal
an independent block-by-block model of vLLM V1's block pool, and the LRU over whole prefixes it replaced must lose.

The reference below keeps every block: a free queue in order (new blocks from its head, evicting the cached block
taken; a finished request's blocks back at its tail, its last block first; a hit's blocks out of the middle), a map
from block content to the block caching it, and, with a host tier, an LRU of blocks as vLLM's offloading connector
keeps it (0.21.0 ``offloading/scheduler.py``: the host looked up from the GPU hit on, every stored block of the
request touched, every full block from its hit on stored). Requests run one at a time, so no scheduler is needed to
know what vLLM does."""

from __future__ import annotations

from collections import OrderedDict

import pytest

from mha_cli.core.serve import simulate as simulate_module
from mha_cli.core.serve.simulate import EngineLimits, simulate
from mha_cli.core.serve.workload import Workload


class OneMillisecond:
    pp = 1

    def seconds(self, decodes: int, context: int, chunks: list[tuple[int, int]]) -> float:
        return 1e-3

    def decode_seconds(self, rows: int, context: int) -> float:
        return 1e-3


def _contents(request: int, groups: int, prefix_blocks: int):
    """Block index -> what request ``request``'s block there holds: its prefix's, shared, then its own."""

    def content(index: int) -> tuple:
        return ("prefix", request % groups, index) if index < prefix_blocks else ("own", request, index)

    return content


def block_pool_hits(
    *, blocks: int, block: int, prompt: int, output: int, prefix: int, groups: int, count: int, host_blocks: int = 0
) -> tuple[float, float]:
    """(GPU and host hit tokens, host hit tokens) over the prompt tokens looked up, request i carrying prefix
    i mod ``groups``, one request at a time."""
    queue: OrderedDict[int, None] = OrderedDict((b, None) for b in range(blocks))
    content_of: dict[int, tuple] = {}  # block -> what it caches
    block_of: dict[tuple, int] = {}  # content -> the block caching it
    host: OrderedDict[tuple, None] = OrderedDict()
    hit_tokens = host_tokens = looked_up = 0
    prefix_blocks = prefix // block
    for request in range(count):
        content = _contents(request, groups, prefix_blocks)
        most = (prompt - 1) // block  # a hit leaves the prompt's last token to compute
        on_gpu: list[int] = []
        while len(on_gpu) < most and content(len(on_gpu)) in block_of:
            on_gpu.append(block_of[content(len(on_gpu))])
        loaded = 0
        while len(on_gpu) + loaded < most and content(len(on_gpu) + loaded) in host:
            loaded += 1
        for index in range(-(-(prompt + output - 1) // block)):  # the connector touches the request's stored blocks
            if content(index) in host:
                host.move_to_end(content(index))
        for taken in on_gpu:
            queue.pop(taken, None)  # touched: out of the queue's middle
        needed = -(-(prompt + output - 1) // block)  # the slots of every token computed over the request
        new = []
        for _ in range(needed - len(on_gpu)):
            taken, _ = queue.popitem(last=False)
            if taken in content_of:
                del block_of[content_of.pop(taken)]  # evicted as the head hands it out
            new.append(taken)
        held = on_gpu + new
        for index in range(len(on_gpu), (prompt + output - 1) // block):  # every full block cached
            content_of[held[index]] = content(index)
            block_of[content(index)] = held[index]
        if host_blocks:  # every full block from the hit on (the hit's own are not stored again)
            for index in range(len(on_gpu) + loaded, (prompt + output - 1) // block):
                host[content(index)] = None
                host.move_to_end(content(index))
            while len(host) > host_blocks:
                host.popitem(last=False)
        for returned in reversed(held):
            queue[returned] = None
        hit_tokens += (len(on_gpu) + loaded) * block
        host_tokens += loaded * block
        looked_up += prompt
    return hit_tokens / looked_up, host_tokens / looked_up


def simulated(*, blocks: int, prefix: int, groups: int, host_blocks: int = 0) -> tuple[float, float]:
    """The simulator's (hit rate, host hit rate) on 64 requests of 1,000 + 2 tokens, one at a time."""
    limits = EngineLimits(
        engine="vllm", kv_blocks=blocks, block_size=16, max_num_batched_tokens=8192, max_num_seqs=64,
        shares_prefix_blocks=True, host_blocks=host_blocks, load_s_per_token=1e-9,
    )  # fmt: skip
    workload = Workload([(1000, 2)] * 64, max_concurrency=1, prefix_len=prefix, prefix_groups=groups)
    sim, _ = simulate(workload, limits, OneMillisecond())
    return sim.prefix_cache_hit_rate, sim.host_hit_rate


CASES = [  # (pool blocks of 16, prefix tokens, prefixes, host blocks): 64 requests of 1,000 + 2 tokens, one at a time
    (200, 256, 4, 0),
    (400, 256, 8, 0),
    (1000, 512, 8, 0),
    (1000, 512, 2, 0),
    (1000, 512, 3, 0),
    (150, 512, 2, 0),
    (400, 256, 8, 600),
    (400, 256, 8, 300),
    (200, 512, 3, 250),
]


@pytest.mark.parametrize(("blocks", "prefix", "groups", "host"), CASES)
def test_the_simulators_hits_equal_vllms_block_pool(blocks, prefix, groups, host):
    expected = block_pool_hits(
        blocks=blocks, block=16, prompt=1000, output=2, prefix=prefix, groups=groups, count=64, host_blocks=host
    )
    assert simulated(blocks=blocks, prefix=prefix, groups=groups, host_blocks=host) == pytest.approx(expected)


def test_the_control_an_lru_over_whole_prefixes_in_the_free_room_overstates_the_gpu_hits(monkeypatch):
    """400 blocks of 16 hold eight 256-token prefixes (128 blocks) beside nothing running, so the room model keeps
    them all; in vLLM each request's 63 new blocks come from the queue's head, and the seven requests between two
    uses of a prefix take 441, more than the 384 queued before it: every prefix is gone when it comes back."""
    assert block_pool_hits(blocks=400, block=16, prompt=1000, output=2, prefix=256, groups=8, count=64)[0] == 0
    assert simulated(blocks=400, prefix=256, groups=8) == (0.0, 0.0)
    start = simulate_module._Run.__init__

    def room_model(self, *args, **kwargs) -> None:  # the model before: an LRU over prefixes in the free room
        start(self, *args, **kwargs)
        self.state.free_queue = None
        self.state.tiers.evicts_by_room = True

    monkeypatch.setattr(simulate_module._Run, "__init__", room_model)
    assert simulated(blocks=400, prefix=256, groups=8)[0] == pytest.approx(56 * 256 / 64_000)


def test_prefixes_warmed_before_the_run_sit_at_the_queues_tail_the_first_warmed_nearest_the_head():
    """Two prefixes of 4 blocks cached before the run, in a 20-block pool: the first warmed goes 8 blocks from the
    tail, behind 12, the second at the tail, behind 16; the head takes the first's last block at its 13th block."""
    from mha_cli.core.serve.free_queue import FreeQueue

    queue = FreeQueue()
    queue.warm(0, 4, 20)
    queue.warm(1, 4, 20)
    assert [(run.prefix, run.front) for run in queue.runs] == [(0, 12), (1, 16)]
    assert queue.settle(0, 0, 12) == 4 and queue.settle(0, 0, 13) == 3 and queue.settle(1, 0, 16) == 4
    # the simulator with the two warmed and a roomy pool: both first requests find theirs (the control: cold, none)
    for warm, hits in ((True, 2 * 512), (False, 0)):
        limits = EngineLimits(
            engine="vllm", kv_blocks=400, block_size=16, max_num_batched_tokens=8192, max_num_seqs=64,
            shares_prefix_blocks=True, host_blocks=100, load_s_per_token=1e-9,
        )  # fmt: skip
        workload = Workload([(1000, 2)] * 2, max_concurrency=1, prefix_len=512, prefix_groups=2, warm_prefix=warm)
        sim, _ = simulate(workload, limits, OneMillisecond())
        assert sim.prefix_cache_hit_rate == pytest.approx(hits / 2000)
