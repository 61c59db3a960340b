"""KV-cache arithmetic: bytes per token per layer, per rank, per sequence, per batch.

Per token per layer, in values (bytes follow from the storage format, scales included):

- MHA / GQA / MQA: K and V, one vector of ``head_dim`` per KV head: 2 * n_kv_heads * head_dim.
- MLA, absorbed (the default, DeepSeek's inference path): one shared latent plus the RoPE key,
  kv_lora_rank + qk_rope_head_dim, no factor 2. DeepSeek-V3 in bf16: 61 * 576 * 2 = 70,272 B.
- MLA, naive: the decompressed per-head keys (nope + rope) and values, the full MHA price.

- DeepSeek-V3.2's lightning indexer adds its own cached key per token per layer: index_head_dim values, in fp8
  with a 4-byte scale per 128 of them as the serving engines hold it (vLLM, SGLang, TensorRT-LLM: 132 B for 128
  values, whatever the KV dtype), in the KV dtype as transformers does.

Each layer is priced by its kind (``ModelSpec.layer_kind``). Per-token K/V: global layers hold every token,
sliding-window layers min(tokens, window), chunked layers (Llama-4) min(tokens, chunk), the tokens of the
chunk being filled; linear layers and layers that share an earlier layer's K/V (Gemma-3n) hold none. A paged
cache rounds each layer's tokens up to whole blocks. Linear-attention and state-space layers (Gated DeltaNet,
Mamba, lightning attention, KDA) hold instead a fixed state per sequence, whatever its length
(``RecurrentSpec``): reported apart (``state_bytes_per_seq``) and added into every per-sequence figure.

A model whose global layers have their own KV heads and head width (Gemma 4: ``AttentionSpec.global_n_kv_heads``,
``global_head_dim``) prices each layer at its kind's (``bytes_per_token_per_layer``'s ``kind``).

Under tensor parallelism each rank holds n_kv_heads / tp heads, at least one (replicated when tp > n_kv_heads);
an MLA latent (and an indexer key) is not sharded, every rank holds all of it. A fixed state splits by its
heads like KV heads (replicated when tp exceeds them), its conv channels evenly over the ranks.

A fixed state and an indexer key are priced by one of two allocations (``StateConvention``, default the
engine's): vLLM's (``MambaStateShapeCalculator`` / ``MambaStateDtypeCalculator``: conv_kernel - 1 conv columns,
the recurrent state in the model's dtype unless the config names one, KDA's in fp32) or transformers' (conv_kernel
columns, the recurrent state in fp32), which is what ``mha verify`` measures in torch.
"""

from typing import Annotated

from pydantic import Field

from mha_cli.core.dtypes import (
    DS_MLA_SCALE_BYTES,
    DS_MLA_SCALE_GROUP,
    FP8_DS_MLA,
    NVFP4_KV,
    StorageFormat,
    storage_format,
)
from mha_cli.core.errors import BadInputError
from mha_cli.core.record import Record
from mha_cli.core.schemas import DeploymentSpec, LayerKind, MlaCacheMode, ModelSpec, RecurrentSpec, StateConvention
from mha_cli.core.tensor_parallel import kv_heads_per_rank

ACTIVATION_FORMATS = ("fp32", "fp16", "bf16")
"""KV formats a model also runs its activations in; any other KV format (quantised) leaves them in bf16."""


def check_kv_dtype_fits(model: ModelSpec, kv_dtype: str, mla_cache: MlaCacheMode = "absorbed") -> None:
    """``fp8_ds_mla`` is the absorbed latent's layout of sparse MLA (a model with DeepSeek-V3.2's lightning indexer):
    refuse it, in one line, for anything else. vLLM serves it with its sparse backend alone
    (``v1/attention/backends/mla/flashmla_sparse.py`` ``FlashMLASparseBackend.supported_kv_cache_dtypes``, an
    ``is_sparse`` backend); its dense MLA backends take fp8 but not fp8_ds_mla (``FlashMLABackend``,
    ``FlashInferMLABackend``, ``TritonMLABackend``: ``supported_kv_cache_dtypes``, read on main), so a dense MLA
    model asking for it finds no backend (``vllm/platforms/cuda.py``: "No valid attention backend found")."""
    if storage_format(kv_dtype).name == NVFP4_KV and model.attention.mla is not None:
        raise BadInputError(
            f"kv dtype nvfp4 (--kv-dtype, or an NVFP4 cache the checkpoint declares) is vLLM's fp4 cache for K and V"
            f" heads, which it refuses with MLA ({model.name}: validate_nvfp4_kv_cache_with_mla, 0.32.0): use"
            " --kv-dtype fp8"  # review 356 #5: a checkpoint's declaration was blamed on --kv-dtype
        )
    if storage_format(kv_dtype).name != FP8_DS_MLA:
        return
    if model.attention.mla is None:
        raise BadInputError(
            f"kv dtype fp8_ds_mla is DeepSeek's sparse-MLA cache layout and needs an MLA model;"
            f" {model.name} is {model.attention.variant}: use --kv-dtype fp8 (plain fp8, 1 B per value)"
        )
    if model.attention.mla.indexer is None:
        raise BadInputError(
            f"kv dtype fp8_ds_mla is the sparse-MLA cache (vLLM's FlashMLASparseBackend, for models with DeepSeek-V3.2's"
            f" indexer) and {model.name} is dense MLA, whose vLLM backends take fp8, not fp8_ds_mla: use --kv-dtype fp8"
        )
    if mla_cache != "absorbed":
        raise BadInputError("kv dtype fp8_ds_mla stores the absorbed MLA latent: drop --mla-cache naive or use fp8")


def comparable_kv_dtype(model: ModelSpec, kv_dtype: str) -> str:
    """The KV format to price ``model`` in when comparing it under ``kv_dtype``: plain fp8 stands in for
    ``fp8_ds_mla`` on a model without sparse MLA (the same shape under MHA/GQA/MQA or dense MLA), and for ``nvfp4``
    on an MLA model, which vLLM refuses it (its advice: fp8)."""
    sparse = model.attention.mla is not None and model.attention.mla.indexer is not None
    if not sparse and storage_format(kv_dtype).name == FP8_DS_MLA:
        return "fp8"
    if model.attention.mla is not None and storage_format(kv_dtype).name == NVFP4_KV:
        return "fp8"
    return kv_dtype


def _ds_mla_fp8_bytes(n_values: int) -> int:
    """``fp8_ds_mla``: fp8 values plus one fp32 scale per 128 of them."""
    return n_values + DS_MLA_SCALE_BYTES * -(-n_values // DS_MLA_SCALE_GROUP)


def vector_bytes_per_kv_head(model: ModelSpec, kv_dtype: str, kind: LayerKind | None = None) -> int:
    """Bytes one KV head of a layer of ``kind`` (None: the default geometry) caches per token: its key and value
    vectors (standard attention), at that kind's head width (``AttentionSpec.head_dim_of``)."""
    fmt = storage_format(kv_dtype)
    return 2 * fmt.vector_bytes(model.attention.head_dim_of(kind))


def mla_latent_bytes(model: ModelSpec, kv_dtype: str) -> int:
    """Bytes of one token's absorbed MLA cache entry in one layer (latent + RoPE key), indexer key excluded."""
    assert model.attention.mla is not None
    fmt = storage_format(kv_dtype)
    if fmt.name == FP8_DS_MLA:  # fp8 latent with its scales, RoPE key in bf16
        return _ds_mla_fp8_bytes(model.attention.mla.kv_lora_rank) + 2 * model.attention.mla.qk_rope_head_dim
    return fmt.vector_bytes(model.attention.mla.latent_dim)


def indexer_key_bytes(model: ModelSpec, kv_dtype: str, convention: StateConvention = "engine") -> int:
    """Bytes of the lightning indexer's key one layer caches per token (DeepSeek-V3.2); 0 without an indexer.

    ``engine``: fp8 with a 4-byte scale per 128 values whatever the KV dtype (132 B for DeepSeek's 128);
    ``transformers``: the KV dtype (and ``fp8_ds_mla``'s fp8 with its scales)."""
    if model.attention.mla is None or model.attention.mla.indexer is None:
        return 0
    width = model.attention.mla.indexer.index_head_dim
    fmt = storage_format(kv_dtype)
    if convention == "engine" or fmt.name == FP8_DS_MLA:
        return _ds_mla_fp8_bytes(width)
    return fmt.vector_bytes(width)


def mla_naive_head_bytes(model: ModelSpec, kv_dtype: str) -> int:
    """Bytes one head caches per token when MLA's K/V are decompressed (naive mode)."""
    assert model.attention.mla is not None
    fmt = storage_format(kv_dtype)
    return fmt.vector_bytes(model.attention.mla.qk_head_dim) + fmt.vector_bytes(model.attention.mla.v_head_dim)


def bytes_per_token_per_layer(
    model: ModelSpec,
    kv_dtype: str,
    mla_cache: MlaCacheMode = "absorbed",
    *,
    tp: int = 1,
    convention: StateConvention = "engine",
    kind: LayerKind | None = None,
) -> int:
    """Bytes one layer of ``kind`` that caches tokens holds for one token on one rank (tp=1: the whole model's
    layer), an indexer key included (held as ``convention`` says); ``kind`` None: the model's default geometry, every
    layer's but the global ones of a model whose global layers have their own (Gemma 4)."""
    check_kv_dtype_fits(model, kv_dtype, mla_cache)
    heads = kv_heads_per_rank(model, tp, mla_cache, kind)
    if model.attention.mla is not None:
        indexer = indexer_key_bytes(model, kv_dtype, convention)
        if mla_cache == "absorbed":
            return mla_latent_bytes(model, kv_dtype) + indexer
        return heads * mla_naive_head_bytes(model, kv_dtype) + indexer
    return heads * vector_bytes_per_kv_head(model, kv_dtype, kind)


def activation_format(kv_dtype: str) -> StorageFormat:
    """The format a fixed state's activation-dtype parts are kept in: the KV format when the model could run in it
    (fp32, fp16, bf16), else bf16 (quantised KV formats apply to K/V only, not to conv or recurrent states)."""
    fmt = storage_format(kv_dtype)
    return fmt if fmt.name in ACTIVATION_FORMATS else storage_format("bf16")


def recurrent_state_format(state: RecurrentSpec, kv_dtype: str, convention: StateConvention) -> StorageFormat:
    """The format of the recurrent state: the config's (``state_dtype``), else the convention's: transformers fp32;
    vLLM the model's dtype (its ``mamba_ssm_cache_dtype`` "auto"), fp32 for KDA (``kda_state_dtype``)."""
    if state.state_dtype == "fp32" or (
        state.state_dtype == "auto" and (convention == "transformers" or state.kind == "kda")
    ):
        return storage_format("fp32")
    return activation_format(kv_dtype)


def conv_columns(state: RecurrentSpec, convention: StateConvention) -> int:
    """Inputs a conv channel keeps: the kernel width in transformers' cache, one fewer in vLLM's (the current
    input is not stored); RWKV's token shift keeps its last input only, in transformers' state too."""
    if convention == "transformers" and state.kind != "rwkv":
        return state.conv_kernel
    return max(0, state.conv_kernel - 1)


def sharded_conv_dim(state: RecurrentSpec, tp: int) -> int:
    """A Mamba-2 conv's channels over all ``tp`` ranks as vLLM allocates them: where its B and C groups do not divide
    tp, each rank gets a copy of one, so the groups become tp (``MambaStateShapeCalculator.mamba2_state_shape``:
    ``n_groups + extra_groups_for_head_shards(n_groups, tp)``, the latter ``tp - n_groups`` unless they divide):
    Granite-4.0-H-Small's one group at tp 8 holds 8192 + 2 x 8 x 128 channels, 1,280 a rank, not 8,448 / 8 = 1,056.
    Other kinds keep their conv as it is."""
    if state.kind != "mamba2" or tp == 1:
        return state.conv_dim
    inner = state.n_heads * state.head_dim
    groups, rest = divmod(state.conv_dim - inner, 2 * state.state_dim)
    if rest or groups <= 0 or groups % tp == 0:
        return state.conv_dim
    return inner + 2 * tp * state.state_dim


def state_bytes_per_layer(
    model: ModelSpec, kv_dtype: str, *, tp: int = 1, convention: StateConvention = "engine"
) -> int:
    """Bytes of the fixed state one layer keeps for one sequence on one rank (0 without a ``recurrent`` block):
    the recurrent state (``recurrent_state_format``) plus the conv state (activation dtype, ``conv_columns``)."""
    state = model.recurrent
    if state is None:
        return 0
    activation = activation_format(kv_dtype)
    heads = max(1, state.n_heads // tp)
    conv_channels = -(-sharded_conv_dim(state, tp) // tp) if convention == "engine" else -(-state.conv_dim // tp)
    recurrent = heads * recurrent_state_format(state, kv_dtype, convention).vector_bytes(state.values_per_head)
    return recurrent + conv_channels * activation.vector_bytes(conv_columns(state, convention))


def tokens_held(
    seq_len: int, window: int | None = None, block_size: int | None = None, *, sliding: bool = False
) -> int:
    """Tokens a layer keeps for one sequence: min(seq, window or chunk), rounded up to whole blocks. A ``sliding``
    window's tokens straddle block edges: it holds every block the sequence's last ``window`` tokens touch (vLLM,
    computing the last token, has freed only the blocks wholly before them: ``core.engine.window_blocks``
    ``skipped_tokens``), ceil(window / block) or one more (trial 333 #3: 1,000 tokens of a 128-token window in
    64-token blocks hold 3 blocks, not 2); a chunk starts on a block edge where the block divides it."""
    held = seq_len if window is None else min(seq_len, window)
    if block_size:
        blocks = -(-held // block_size)
        if sliding and window is not None:
            blocks = -(-seq_len // block_size) - max(0, seq_len - window) // block_size
        held = blocks * block_size
    return held


class KvFootprint(Record):
    """KV-cache sizes of one model under one deployment, every figure an exact integer of bytes."""

    kv_dtype: str
    mla_cache: MlaCacheMode | None
    """MLA only: which cache the numbers assume."""
    state_convention: StateConvention | None = None
    """Models with a fixed state or an indexer key only: whose allocation they are priced by (engine: vLLM's)."""
    seq_len: int
    batch: int
    tp: int
    block_size: int | None
    kv_heads_per_rank: int
    bytes_per_token_per_layer: int
    """One layer that caches tokens, one token, the whole model (all ranks' heads once), indexer key included; a
    model whose global layers have their own geometry (Gemma 4): one of its other layers."""
    global_kv_heads_per_rank: Annotated[int | None, Field(exclude_if=lambda v: v is None)] = None
    """KV heads one rank holds in a global layer, where global layers have their own (Gemma 4); None: the same."""
    global_bytes_per_token_per_layer: Annotated[int | None, Field(exclude_if=lambda v: v is None)] = None
    """One global layer, one token, the whole model, where global layers have their own KV heads or head width
    (Gemma 4's num_global_key_value_heads, global_head_dim); None: ``bytes_per_token_per_layer``."""
    indexer_bytes_per_token_per_layer: int
    """Of which DeepSeek-V3.2's lightning-indexer key (0 without an indexer)."""
    bytes_per_token: int
    """All layers that cache tokens, one token, the whole model, each holding the token: the per-token part."""
    bytes_per_token_per_rank: int
    """All layers that cache tokens, one token, what one rank holds."""
    n_global_layers: int
    n_local_layers: int
    n_chunked_layers: int
    n_linear_layers: int
    """Layers whose mixer is a fixed-state one instead of attention (Jamba's Mamba layers); a parallel hybrid's
    layers (Falcon-H1: attention beside a Mamba mixer in every layer) are attention layers here, and
    ``n_state_layers`` counts every layer holding a state either way."""
    n_shared_kv_layers: int
    """Attention layers that reuse an earlier layer's K/V and cache nothing (Gemma-3n)."""
    n_token_layers: int
    """Layers that cache per-token K/V."""
    token_layers_by_kind: dict[str, int] = Field(default_factory=dict)
    """Those layers by kind (``global``, ``local``, ``chunked``): what ``bytes_per_sequence`` adds up (``n_global_layers``
    and ``n_local_layers`` count every layer of the kind, Gemma-3n's KV-sharing ones too)."""
    n_state_layers: int
    """Layers that keep a fixed per-sequence state, beside attention or instead of it (what a script counting
    states reads: trial 392 #6)."""
    sliding_window: int | None
    attention_chunk: int | None
    tokens_held_global: int
    """Tokens a global layer holds per sequence (paging applied)."""
    tokens_held_local: int | None
    """Tokens a sliding-window layer holds per sequence (paging applied)."""
    tokens_held_chunked: int | None
    """Tokens a chunked-attention layer holds per sequence: at most one chunk (paging applied)."""
    state_bytes_per_layer: int
    """Fixed state one state layer keeps for one sequence, the whole model (all ranks once)."""
    state_bytes_per_seq: int
    """Fixed state of all layers for one sequence, the whole model: the part that does not grow with the context."""
    state_bytes_per_seq_per_rank: int
    bytes_per_sequence: int
    """One sequence of seq_len tokens, the whole model: per-token K/V (windows, chunks and paging applied) plus
    the fixed state."""
    bytes_per_sequence_per_rank: int
    total_bytes: int
    """seq_len x batch on one tp rank (the whole batch; replicas split it: ``MemoryPlan.kv_bytes_per_device``), K/V
    and fixed state: windows, paging and per-rank division applied."""
    total_bytes_all_ranks: int
    """total_bytes summed over the tp ranks (replicated heads counted on every rank)."""


def kv_footprint(
    model: ModelSpec,
    *,
    seq_len: int,
    batch: int = 1,
    kv_dtype: str = "bf16",
    tp: int = 1,
    block_size: int | None = None,
    mla_cache: MlaCacheMode = "absorbed",
    state_convention: StateConvention = "engine",
) -> KvFootprint:
    """Every KV-cache figure for ``model`` at ``seq_len`` x ``batch``: each layer priced by its kind (a fixed state
    and an indexer key as ``state_convention`` allocates them)."""
    convention = state_convention
    token_layers = model.token_layer_kinds()
    per_kind = {kind: bytes_per_token_per_layer(model, kv_dtype, mla_cache, convention=convention, kind=kind)
                for kind in (*token_layers, None)}  # fmt: skip
    per_kind_rank = {kind: bytes_per_token_per_layer(model, kv_dtype, mla_cache, tp=tp, convention=convention,
                                                     kind=kind) for kind in (*token_layers, None)}  # fmt: skip
    if model.attention_free:  # no layer caches tokens: no per-token figure (its head fields are placeholders)
        per_kind = per_kind_rank = dict.fromkeys(per_kind, 0)
    per_layer = per_kind[None]
    per_kind_geometry = model.attention.per_kind_geometry and "global" in token_layers
    held = {
        "global": tokens_held(seq_len, None, block_size),
        "local": tokens_held(seq_len, model.layers.sliding_window, block_size, sliding=True)
        if model.layers.sliding_window
        else None,
        "chunked": tokens_held(seq_len, model.layers.attention_chunk, block_size)
        if model.layers.attention_chunk
        else None,
    }
    n_token_layers = sum(token_layers.values())
    token_bytes = sum(per_kind[kind] * count for kind, count in token_layers.items())
    token_bytes_rank = sum(per_kind_rank[kind] * count for kind, count in token_layers.items())
    held_bytes = sum((held[kind] or 0) * count * per_kind[kind] for kind, count in token_layers.items())
    held_bytes_rank = sum((held[kind] or 0) * count * per_kind_rank[kind] for kind, count in token_layers.items())
    n_state = model.n_state_layers
    state_per_layer = state_bytes_per_layer(model, kv_dtype, convention=convention)
    state_rank = n_state * state_bytes_per_layer(model, kv_dtype, tp=tp, convention=convention)
    per_sequence = held_bytes + n_state * state_per_layer
    per_sequence_rank = held_bytes_rank + state_rank
    attention_layers = model.n_layers - model.count_layers("linear")
    return KvFootprint(
        kv_dtype=storage_format(kv_dtype).name,
        mla_cache=mla_cache if model.attention.mla is not None else None,
        state_convention=convention if _has_state_or_indexer(model) else None,
        seq_len=seq_len,
        batch=batch,
        tp=tp,
        block_size=block_size,
        kv_heads_per_rank=kv_heads_per_rank(model, tp, mla_cache),
        bytes_per_token_per_layer=per_layer,
        global_kv_heads_per_rank=kv_heads_per_rank(model, tp, mla_cache, "global") if per_kind_geometry else None,
        global_bytes_per_token_per_layer=per_kind["global"] if per_kind_geometry else None,
        indexer_bytes_per_token_per_layer=indexer_key_bytes(model, kv_dtype, convention),
        bytes_per_token=token_bytes,
        bytes_per_token_per_rank=token_bytes_rank,
        n_global_layers=model.n_global_layers,
        n_local_layers=model.n_local_layers,
        n_chunked_layers=model.count_layers("chunked"),
        n_linear_layers=model.count_layers("linear"),
        n_shared_kv_layers=attention_layers - n_token_layers,
        n_token_layers=n_token_layers,
        token_layers_by_kind=dict(token_layers),
        n_state_layers=n_state,
        sliding_window=model.layers.sliding_window,
        attention_chunk=model.layers.attention_chunk,
        tokens_held_global=held["global"],
        tokens_held_local=held["local"],
        tokens_held_chunked=held["chunked"],
        state_bytes_per_layer=state_per_layer,
        state_bytes_per_seq=n_state * state_per_layer,
        state_bytes_per_seq_per_rank=state_rank,
        bytes_per_sequence=per_sequence,
        bytes_per_sequence_per_rank=per_sequence_rank,
        total_bytes=batch * per_sequence_rank,
        total_bytes_all_ranks=batch * per_sequence_rank * tp,
    )


def footprint_for(model: ModelSpec, deployment: DeploymentSpec, tp: int) -> KvFootprint:
    """``kv_footprint`` of ``model`` under ``deployment``'s seq_len, batch, KV dtype, paging and MLA cache
    mode, over ``tp`` ranks (the caller resolves tp: the deployment's may be unset or may not split the heads)."""
    return kv_footprint(
        model, seq_len=deployment.seq_len, batch=deployment.batch, kv_dtype=deployment.kv_dtype, tp=tp,
        block_size=deployment.block_size, mla_cache=deployment.mla_cache,
        state_convention=deployment.state_convention,
    )  # fmt: skip


def _has_state_or_indexer(model: ModelSpec) -> bool:
    return model.recurrent is not None or (model.attention.mla is not None and model.attention.mla.indexer is not None)
