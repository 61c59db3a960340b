"""The engine's memory plan on one rank: the budget line by line, the KV pool, its tokens and max concurrency.

- vLLM (default; V1, 0.10-0.20): available = total x gpu_memory_utilization - weights on the rank - the
  profiling run's activation peak - the non-torch memory it grew by (``v1/worker/gpu_worker.py``
  ``determine_available_memory``). CUDA graphs are captured after the pool is allocated and come out of the
  (1 - utilisation) headroom (from v0.21 vLLM estimates them and subtracts them too). The pool is counted in
  blocks (``core.engine.pages``); every rank of a tensor-parallel group holds the same layers and heads here, so
  the smallest rank's pool, which vLLM keeps, is any rank's.
- SGLang (0.5.3, ``model_runner.profile_max_num_token``): tokens = (free after the weights - free before them x
  (1 - mem_fraction_static)) // bytes per token, free before = total - non-torch; activations come out of the
  (1 - mem_fraction_static) share. Pages of ``page_size`` tokens (1 by default).
- TensorRT-LLM (PyTorch backend, ``KvCacheCreator``): KV memory = (total - peak of weights, activations and
  non-torch) x free_gpu_memory_fraction; tokens in blocks of ``tokens_per_block`` (32).
"""

from __future__ import annotations

from mha_cli.core.engine.activation import forward_peak_bytes, profile_peak_bytes, sampler_peak_bytes
from mha_cli.core.engine.pages import KvGroup, paged_pool
from mha_cli.core.engine.settings import (
    CUDA_GRAPH_ESTIMATE,
    GIB,
    NON_TORCH_ONE_RANK,
    NON_TORCH_TENSOR_PARALLEL,
    EngineSettings,
)  # fmt: skip
from mha_cli.core.kv import KvFootprint, kv_footprint
from mha_cli.core.quantities import format_bytes
from mha_cli.core.record import Record
from mha_cli.core.schemas import EngineName, ModelSpec
from mha_cli.core.targets import Target


class BudgetLine(Record):
    """One line of the KV budget: a figure, how it was obtained and from what."""

    label: str
    bytes: int
    """Signed: what the line adds to (positive) or takes from (negative) the KV budget."""
    how: str


class EnginePlan(Record):
    """What the serving engine allocates on one rank of one replica; the keys scripts read are the issue's."""

    name: EngineName
    total_memory_bytes: int
    """Device memory as torch reports it (``Target.device_memory_bytes``)."""
    gpu_memory_utilization: float
    weights_bytes_per_rank: int
    activation_peak_bytes: int
    non_torch_bytes: int
    cuda_graph_bytes: int
    """Estimated CUDA-graph memory; inside the budget only where ``cuda_graph_in_budget``."""
    cuda_graph_in_budget: bool
    available_kv_bytes: int
    """What the engine gives the KV pool on one rank ("Available KV cache memory"); negative: it cannot start."""
    kv_bytes_per_token_per_rank: int
    """One token in every layer that caches tokens, as the engine prices it (a sliding layer priced like a full one,
    since a block holds its tokens whichever group it serves)."""
    block_size: int
    kv_blocks: int
    kv_tokens: int
    """The engine's "KV cache size: N tokens"."""
    max_model_len: int
    max_num_batched_tokens: int
    max_num_seqs: int
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
    fits: bool
    """The engine starts (one request of max_model_len fits the pool) and holds sequences_per_replica requests."""
    budget: list[BudgetLine]
    log_lines: list[str]
    """What the engine's start-up log would say."""
    notes: list[str]


def _non_torch(tp: int) -> int:
    return NON_TORCH_TENSOR_PARALLEL if tp > 1 else NON_TORCH_ONE_RANK


def _activation_how(model: ModelSpec, settings: EngineSettings, tp: int) -> str:
    """Which of the profiling run's two peaks the activation line is (``core.engine.activation``)."""
    tokens, rows = settings.max_num_batched_tokens, min(settings.max_num_seqs, settings.max_num_batched_tokens)
    sampler = sampler_peak_bytes(model, max_num_batched_tokens=tokens, max_num_seqs=rows)
    if sampler >= forward_peak_bytes(model, tokens=tokens, tp=tp):
        return f"sampler: {rows} rows x {model.vocab_size:,} logits x 16 B"
    return f"forward over {tokens} tokens (widest layer)"


def _ideal_concurrency(model: ModelSpec, kv: KvFootprint, available: int, block: int) -> float:
    """Requests of kv.seq_len tokens if each layer held only its own kind's tokens in whole blocks."""
    paged = kv_footprint(
        model,
        seq_len=kv.seq_len,
        kv_dtype=kv.kv_dtype,
        tp=kv.tp,
        block_size=block,
        mla_cache=kv.mla_cache or "absorbed",
    )
    per_sequence = paged.bytes_per_sequence_per_rank
    return max(0, available) / per_sequence if per_sequence else 0.0


def plan_engine(
    model: ModelSpec,
    kv: KvFootprint,
    target: Target,
    settings: EngineSettings,
    *,
    weights_bytes_per_rank: int,
    sequences_per_replica: int,
) -> EnginePlan:
    """The engine's plan for ``model`` (priced as ``kv``: dtype, tp, max_model_len = kv.seq_len) on ``target``."""
    total = target.device_memory_bytes
    util = settings.utilisation
    tp = kv.tp
    non_torch = _non_torch(tp)
    activation = profile_peak_bytes(
        model, max_num_batched_tokens=settings.max_num_batched_tokens, max_num_seqs=settings.max_num_seqs, tp=tp
    )
    per_token = kv.bytes_per_token_per_rank
    per_layer = per_token // kv.n_token_layers if kv.n_token_layers else 0
    measured = "a public measurement" if target.device_memory_measured else "an estimate"
    device = f"torch's total, {target.torch_memory_gib:.2f} GiB ({measured})"
    weights_line = BudgetLine(
        label="weights on this rank", bytes=-weights_bytes_per_rank, how="this rank's shard (vocab padded to 64)"
    )
    notes: list[str] = []
    if not target.device_memory_measured:
        notes.append(f"{target.id}: no public torch figure of its memory was found; {target.torch_memory_source}")
    if settings.engine == "vllm":
        usable = int(total * util)
        available = usable - weights_bytes_per_rank - activation - non_torch
        budget = [
            BudgetLine(label="total device memory", bytes=total, how=device),
            BudgetLine(label=f"beyond utilisation {util:g}", bytes=usable - total, how=settings.utilisation_source),
            weights_line,
            BudgetLine(label="activation peak (profiling)", bytes=-activation, how=_activation_how(model, settings, tp)),
            BudgetLine(
                label="non-torch memory", bytes=-non_torch, how=f"vLLM logs at tp {'> 1' if tp > 1 else '1'}"
            ),
        ]  # fmt: skip
        pool = paged_pool(
            model, available_bytes=available, bytes_per_token_per_layer=per_layer, block_size=settings.block_size,
            max_model_len=kv.seq_len, max_num_batched_tokens=settings.max_num_batched_tokens,
        )  # fmt: skip
        blocks, tokens, concurrency = pool.kv_blocks, pool.kv_tokens, pool.max_concurrency
        if kv.n_state_layers:  # the per-sequence state shares the pool: no more requests than its bytes allow
            ideal = _ideal_concurrency(model, kv, available, settings.block_size)
            concurrency = min(concurrency, ideal) if kv.n_token_layers else ideal
        groups, per_group, padding = pool.groups, pool.layers_per_group, pool.padding_layers
        starts = available > 0 and blocks >= pool.blocks_per_request
        if len(groups) > 1:
            notes.append(
                f"hybrid allocator: {len(groups)} KV cache groups of {per_group} layers"
                f"{f' ({padding} empty slots)' if padding else ''}; the tokens line counts a token once in every"
                " group, and a sliding-window group still takes the blocks of a whole step's tokens"
            )
        if not pool.hybrid_allocator and kv.n_local_layers:
            notes.append("chunked attention turns vLLM's hybrid allocator off: sliding layers are priced as full")
        if model.recurrent is not None or kv.n_state_layers:
            notes.append(
                "vLLM pads a Mamba/linear-attention state to the attention page size; that padding is not modelled:"
                " the tokens count the attention layers, the state is priced per sequence in the memory plan"
            )
        headroom = total - usable
        if headroom < CUDA_GRAPH_ESTIMATE + NON_TORCH_ONE_RANK:
            notes.append(
                f"gpu_memory_utilization {util:g} leaves {format_bytes(headroom)} outside the budget; CUDA graphs"
                f" (about {format_bytes(CUDA_GRAPH_ESTIMATE)}) and the CUDA context need it: lower it or run with"
                " --enforce-eager"
            )
        log_lines = [
            f"Available KV cache memory: {available / GIB:.2f} GiB",
            f"GPU KV cache size: {tokens:,} tokens",
            f"Maximum concurrency for {kv.seq_len:,} tokens per request: {concurrency:.2f}x",
        ]
    else:
        groups, per_group, padding = [], None, 0
        if settings.engine == "sglang":
            free_before = total - non_torch
            available = int(free_before * util) - weights_bytes_per_rank
            budget = [
                BudgetLine(label="total device memory", bytes=total, how=device),
                BudgetLine(label="non-torch memory", bytes=-non_torch, how="vLLM logs (before the weights)"),
                BudgetLine(
                    label=f"beyond mem_fraction_static {util:g}", bytes=int(free_before * util) - free_before,
                    how=f"{settings.utilisation_source} (activations live here)",
                ),
                weights_line,
            ]  # fmt: skip
            activation = 0
        else:
            after_peak = total - weights_bytes_per_rank - activation - non_torch
            available = int(max(0, after_peak) * util) if after_peak > 0 else after_peak
            budget = [
                BudgetLine(label="total device memory", bytes=total, how=device),
                weights_line,
                BudgetLine(label="activation peak", bytes=-activation, how=_activation_how(model, settings, tp)),
                BudgetLine(label="non-torch memory", bytes=-non_torch, how="vLLM logs"),
                BudgetLine(
                    label=f"beyond free fraction {util:g}", bytes=available - max(0, after_peak),
                    how=settings.utilisation_source,
                ),
            ]  # fmt: skip
        raw_tokens = max(0, available) // per_token if per_token else 0
        blocks = raw_tokens // settings.block_size
        tokens = blocks * settings.block_size
        if settings.engine == "sglang":  # its hybrid SWA pool is off for Gemma 2/3 and gpt-oss: windows priced full
            paged_tokens = -(-kv.seq_len // settings.block_size) * settings.block_size
            per_sequence = paged_tokens * per_token + kv.state_bytes_per_seq_per_rank
            if kv.n_local_layers:
                notes.append(
                    "SGLang prices sliding-window layers as full here (its hybrid SWA pool is off for Gemma 2/3 and gpt-oss)"
                )
        else:  # TensorRT-LLM keeps a pool per window size: each layer holds its window
            paged = kv_footprint(
                model, seq_len=kv.seq_len, kv_dtype=kv.kv_dtype, tp=tp, block_size=settings.block_size,
                mla_cache=kv.mla_cache or "absorbed",
            )  # fmt: skip
            per_sequence = paged.bytes_per_sequence_per_rank
        concurrency = blocks * settings.block_size * per_token / per_sequence if per_sequence else 0.0
        starts = available > 0 and concurrency >= 1
        name = "SGLang" if settings.engine == "sglang" else "TensorRT-LLM"
        log_lines = [f"{name}: KV cache of {tokens:,} tokens ({max(0, available) / GIB:.2f} GiB)"]
    budget.append(BudgetLine(label="= available for KV cache", bytes=available, how="the sum of the lines above"))
    cuda_in_budget = False
    return EnginePlan(
        name=settings.engine, total_memory_bytes=total, gpu_memory_utilization=util,
        weights_bytes_per_rank=weights_bytes_per_rank, activation_peak_bytes=activation, non_torch_bytes=non_torch,
        cuda_graph_bytes=CUDA_GRAPH_ESTIMATE, cuda_graph_in_budget=cuda_in_budget, available_kv_bytes=available,
        kv_bytes_per_token_per_rank=per_token, block_size=settings.block_size, kv_blocks=blocks, kv_tokens=tokens,
        max_model_len=kv.seq_len, max_num_batched_tokens=settings.max_num_batched_tokens,
        max_num_seqs=settings.max_num_seqs, max_concurrency=concurrency,
        ideal_max_concurrency=_ideal_concurrency(model, kv, available, settings.block_size), groups=groups,
        layers_per_group=per_group, padding_layers=padding, sequences_per_replica=sequences_per_replica,
        fits=starts and concurrency >= sequences_per_replica, budget=budget, log_lines=log_lines,
        notes=[settings.defaults_note, *notes],
    )  # fmt: skip
