"""The work of one forward step on one tensor-parallel rank, operation by operation: bytes, FLOPs, kernels.

A step runs ``new_tokens`` tokens for each of ``sequences`` sequences that already hold ``context`` cached tokens
(decode: 1 new token at the current context; a prefill chunk: the chunk's tokens after the ones before it). Every
figure is per rank, and per instance of an operation (``Op.count`` instances per step), so a rate that depends on
size (a small matrix does not saturate memory bandwidth) is looked up at the instance's size.

- **matmul**: every linear layer of the rank (``core.params.matrices_per_rank``), its weight bytes in the
  weight format (scales included) plus the activations in and out; 2 x tokens x out x in FLOPs, at the rate of the
  dtype it multiplies in (``Op.compute``). A checkpoint's scheme stores each module as the memory plan reads it
  (``core.weight_bytes.stored_matrices``): the layers it ignores are read and computed in bf16, a fixed-state mixer's
  projections in the format its rule gives, and alike matrices stored differently are priced apart
  (``core.compute_dtype``). The MoE router is its own matmul in the dtype the engine keeps it in
  (``core.engine.router_dtype``: fp32 for Nemotron-H in vLLM). An MoE layer reads
  only the routed experts its tokens pick (``experts_touched``), in one grouped matmul per layer (the fused-MoE
  kernel's: its bytes the touched experts' together), each expert over its share of the tokens; vLLM's MXFP4 MoE
  kernels (gpt-oss) read and compute them at their padded shapes (``kernel_expert``), SGLang and TensorRT-LLM at the
  checkpoint's (their MXFP4 paths not read). The LM head runs over ``logits_tokens`` tokens (an engine: the last of
  each sequence; ``verify``: every position).
- **attention**: the cache every attention layer reads (``core.kv``: each layer its own tokens, windows applied; a
  K/V-sharing layer, Gemma-3n's and Gemma 4's, reads the earlier layer's it shares, and attends as its kind does)
  plus the new tokens' K/V it writes; query-key pairs x ``attention_pair_flops``; its rows (where its rate is read)
  the query tokens x the query heads sharing one KV head (``attention_rows``). A linear-attention or state-space
  layer reads and writes its fixed state instead.
- **memory**: norms, residual adds, the MLP's activation (an MoE layer's: the routed experts' and the shared
  experts' alike, each reading gate and up and writing their product), rotary, the embedding rows and the sampler's
  logits: bytes only.
- **all_reduce** (tp > 1): after attention and after the MLP, tokens x d_model activations; **all_gather**: the
  logits of every rank's vocabulary rows, and (replicas sharing the experts, DP attention without DeepEP) an MoE
  layer's gather of every group's tokens and reduce-scatter of the sums (the gathered buffer each, of which a ring
  moves (N - 1) / N through each rank: ``core.dp_attention``); **all_to_all** (DP attention with DeepEP): an MoE layer's dispatch of the rank's tokens to the devices
  holding their experts and the combine back (``core.dp_attention.dispatch_bytes`` each).

Ops outside the layers (``outside_layers``: embedding, LM head, sampler, logits gather) run once per step, on one
pipeline stage.

Kernel counts are a fused serving engine's (vLLM's): per layer 1 fused add+norm and 1 matmul per projection
group, rotary and cache write, one attention kernel, the activation; an eager implementation runs many more (its
count is measured where it matters: ``verify`` counts the operators it dispatches). Pure Python.
"""

from typing import TYPE_CHECKING, Literal, NamedTuple

from mha_cli.core.compute_dtype import compute_dtype
from mha_cli.core.cost.decode_tiles import DecodeRows
from mha_cli.core.dp_attention import dispatch_bytes
from mha_cli.core.engine.router_dtype import ROUTER_BYTES, router_dtype
from mha_cli.core.kv import bytes_per_token_per_layer, kv_footprint, tokens_held
from mha_cli.core.params import Matrix, matrices_per_rank
from mha_cli.core.roofline import attention_pair_flops, experts_touched
from mha_cli.core.schemas import MlaCacheMode, ModelSpec
from mha_cli.core.tensor_parallel import (
    ExpertLayout,
    local_experts,
    shared_width_per_rank,
    tp_shard_problem,
    vocab_rows_per_rank,
)
from mha_cli.core.weight_bytes import UNQUANTISED_BYTES, MatrixKey, MatrixShare, stored_matrices
from mha_cli.core.weight_formats import weight_format

if TYPE_CHECKING:
    from mha_cli.core.engine.mxfp4_moe import Mxfp4Kernel
    from mha_cli.core.weight_scheme import WeightScheme

OpKind = Literal["matmul", "attention", "memory", "all_reduce", "all_gather", "all_to_all"]
COLLECTIVES = ("all_reduce", "all_gather", "all_to_all")

ACTIVATION_BYTES = 2
"""Activations in bf16 (what the engines run)."""
LOGIT_BYTES = 4
"""Logits in fp32 for the sampler."""
SAMPLER_PASSES = 3
"""The sampler reads the logits about three times (softmax, top-k/top-p sort, the draw)."""

# Kernels of a fused engine (vLLM, decode under CUDA graphs), per instance of the op they belong to.
ATTENTION_BLOCK_KERNELS = 4
"""Fused residual add + norm, rotary, cache write, attention."""
MLA_EXTRA_KERNELS = 3
"""MLA: latent norm, the absorbed up-projections' batched matmuls."""
MLP_BLOCK_KERNELS = 2
"""Fused residual add + norm, the activation (the matmuls count one each)."""
MIXER_ONLY_KERNELS = 1
"""A layer without an MLP (Nemotron-H's lone mixer block): its fused residual add + norm."""
MIXER_PROJECTION_KERNELS = 2
"""A fixed-state mixer's input and output projections (its scan and convolution are the state's kernels)."""
MOE_ROUTING_KERNELS = 7
"""Router top-k, token sort and alignment, the fused experts' two grouped matmuls, the weighted sum."""
BRANCH_PASSES = 11
"""Gemma 4's MoE block's passes over d_model a token beyond the layer's own norms (vLLM 0.34.0 ``Gemma4DecoderLayer``
and ``Gemma4Router.forward``): post_feedforward_layernorm_1, pre_feedforward_layernorm_2, the router's norm and
scales, post_feedforward_layernorm_2 (each a read and a write: 4 x 2) and the two branches' sum (two reads, a write)."""
OUTSIDE_LAYER_KERNELS = 6
"""Embedding lookup, final norm, and the sampler's kernels (the LM head's matmul counts one)."""


# A NamedTuple rather than a frozen dataclass, for start-up time (see ``core.record``).
class Op(NamedTuple):
    """``count`` instances of one operation on one rank; every figure is one instance's."""

    name: str
    kind: OpKind
    count: float
    """Instances per step (layers x matrices; fractional for the expected number of routed experts)."""
    bytes: float
    """Bytes read and written."""
    flops: float
    tokens: int
    """Rows one instance computes, the size its FLOP/s curve is read at: the matmul's M; for attention, the query
    rows the kernel packs against each KV head (``attention_rows``)."""
    kernels: float = 1.0
    """Kernels one instance launches in a fused engine (a fraction where several instances share one kernel)."""
    outside_layers: bool = False
    """Embedding, LM head, sampler, logits gather: once per step, whatever the pipeline stages."""
    ranks: int | None = None
    """A collective's ranks (None: the tp group); the experts' dispatch runs over every rank sharing them."""
    off_node: float = 0.0
    """A collective's share of peers on other nodes (``core.cost.nodes``): 0 inside a node, priced on the scale-up
    link; above it, on the scale-out link."""
    decode: DecodeRows | None = None
    """A decode attention's rows as its kernel packs them, one sequence against one KV head, which it pads to its
    tile (``core.cost.decode_tiles``); None: any other op (a prompt's attention keeps the rows law)."""
    compute: str | None = None
    """The dtype a matmul multiplies in (``core.compute_dtype``: bf16, fp8, fp32), whose rate prices its FLOPs
    (``DeviceProfile.matmul_in``); None: the profile's own."""
    grouped: bool = False
    """A routed expert's grouped matmul: one fused-MoE launch over every touched expert's tiles, which takes no
    ramp above its first tile (``core.cost.gemm_tiles``)."""


# A NamedTuple rather than a frozen dataclass, for start-up time (see ``core.record``).
class StepShape(NamedTuple):
    """What one forward step computes: ``sequences`` x ``new_tokens`` tokens after ``context`` cached ones."""

    sequences: int
    new_tokens: int
    context: int
    logits_tokens: int
    """Tokens the LM head runs over (default in ``forward_ops``: one per sequence)."""
    verify: bool = False
    """A speculative verification: ``new_tokens`` = k + 1 per sequence scored as a decode (MLA's absorbed path, as
    the engines' decode kernels take a few queries per sequence)."""

    @property
    def tokens(self) -> int:
        return self.sequences * self.new_tokens


def decode_shape(batch: int, context: int) -> StepShape:
    """One decode step: one new token for each of ``batch`` sequences, each attending ``context`` cached tokens."""
    return StepShape(sequences=batch, new_tokens=1, context=context, logits_tokens=batch)


def prefill_shape(tokens: int, *, sequences: int = 1, context: int = 0, all_logits: bool = False) -> StepShape:
    """A prefill (chunk) of ``tokens`` per sequence after ``context`` cached ones; logits of the last token
    (``all_logits``: of every position, as transformers and ``verify`` compute them)."""
    logits = sequences * tokens if all_logits else sequences
    return StepShape(sequences=sequences, new_tokens=tokens, context=context, logits_tokens=logits)


def causal_pairs_after(new: int, context: int, window: int | None) -> int:
    """Query-key pairs of ``new`` queries after ``context`` cached tokens, causal, each seeing at most ``window``."""
    if window is None:
        return new * context + new * (new + 1) // 2
    # query i (0-based among the new ones) sees min(context + i + 1, window) keys
    ramp = max(0, min(new, window - context))  # queries still below the window
    below = ramp * context + ramp * (ramp + 1) // 2
    return below + (new - ramp) * window


def _matmul_kernels(model: ModelSpec, matrix: Matrix) -> float:
    """Kernels one instance of ``matrix`` launches in a fused engine: q, k and v in one (k and v add none), gate and
    up in one (half each), routed experts inside the fused-MoE kernels (``MOE_ROUTING_KERNELS``)."""
    if matrix.kind == "expert":
        return 0.0
    if model.attention.mla is None and matrix.part == "kv":  # k and v: inside q's fused projection
        return 0.0
    gated_in = model.block.mlp == "gated" and matrix.kind == "mlp" and matrix.in_features == model.d_model
    return 0.5 if gated_in and matrix.part in GATED_PARTS else 1.0


GATED_PARTS = frozenset({"gate_proj", "up_proj"})
"""The projections a gated MLP fuses into one kernel (vLLM's ``gate_up_proj``); Gemma 4's per-layer input gate and
projections, ``mlp`` matrices from d_model too, are kernels of their own (review 376 #7)."""


class LayerWeights(NamedTuple):
    """What one rank's layers hold whatever a step's tokens, worked out once per model, tp, experts and weight format
    (``layer_ops`` prices a step on it; the inventory behind ``matrices_per_rank`` is the costly part)."""

    experts: ExpertLayout
    matrices: list[tuple[Matrix, int, float, str]]
    """Every linear layer's matrix on the rank, with one instance's weight bytes as stored, its kernels and the dtype
    it multiplies in; alike matrices stored apart (ignored layers) as two entries."""
    local_experts: int
    """MoE: the routed experts on the rank (0 without MoE)."""
    n_moe: int
    """Layers with an MoE MLP."""
    dense_layers: int
    """Layers with a dense MLP."""
    mixer_layers: int = 0
    """Layers with a fixed-state mixer (Mamba, linear attention): their projections are no linear layer above."""
    mixers: tuple[tuple[str, float, float], ...] = ()
    """One mixer layer's weights on the rank, by the dtype they multiply in: (dtype, weights, bytes). No
    tensor-parallel layout here splits them, so an even share of them (``core.params``' count), stored as
    ``core.weight_bytes`` prices them (a scheme's rule for each projection; else 2 bytes a weight), the mean over the
    mixer layers."""


def layer_weights(
    model: ModelSpec, tp: int, weight_dtype: str = "bf16", experts: ExpertLayout | None = None,
    scheme: "WeightScheme | None" = None, kernel: "Mxfp4Kernel | None" = None,
) -> LayerWeights:  # fmt: skip
    """``model``'s linear layers on one rank of ``tp`` (``layer_ops``), each matrix in ``weight_dtype``, or as the
    checkpoint's ``scheme`` stores it module by module (int4 experts beside bf16 attention: the mean over the alike
    matrices of the layers); raises ``BadInputError`` when ``tp`` does not shard the model. ``kernel``: vLLM's MXFP4
    MoE kernel running the routed experts, which reads and computes them at its padded shapes, biases included
    (``kernel_expert``); None: the checkpoint's shapes (SGLang, TensorRT-LLM, any other format)."""
    layout = ExpertLayout(tp) if experts is None else experts
    problem = tp_shard_problem(model, tp, layout)
    if problem is not None:
        from mha_cli.core.errors import BadInputError

        raise BadInputError(problem)
    stored = stored_matrices(model, tp, weight_dtype, scheme, layout)
    shares: dict[MatrixKey, list[tuple[str, MatrixShare]]] = {}
    for (key, dtype), share in stored.matrices.items():
        shares.setdefault(key, []).append((dtype, share))
    matrices: list[tuple[Matrix, int, float, str]] = []
    for matrix in matrices_per_rank(model, tp, layout):
        if kernel is not None and matrix.kind == "expert":
            matrices.append((*kernel_expert(matrix, kernel), 0.0, "bf16"))
            continue
        kernels = _matmul_kernels(model, matrix)
        for dtype, share in shares[(matrix.kind, matrix.part, matrix.out_features, matrix.in_features)]:
            matrices.append((matrix._replace(count=share.count), -(-share.bytes // share.count), kernels, dtype))
    local = local_experts(model, layout) if model.block.moe is not None else 0
    n_mixers = model.n_state_layers if model.recurrent is not None else 0
    mixers = tuple((dtype, weights / n_mixers, held / n_mixers) for dtype, (weights, held) in stored.mixers.items())
    return LayerWeights(
        layout, matrices, local, model.n_moe_layers, model.n_dense_mlp_layers, n_mixers if mixers else 0, mixers
    )


def kernel_expert(matrix: Matrix, kernel: "Mxfp4Kernel") -> tuple[Matrix, int]:
    """A routed expert's ``matrix`` (a gate or up half, H wide, or the down projection, H tall) at the shapes
    ``kernel`` holds and computes it (H', I': ``core.engine.mxfp4_moe``), and the bytes it reads of one instance in
    a step: values, scales and bias, a half of the fused gate-and-up matrix's (2 I' x H') for a half."""
    if matrix.part == "down_proj":
        hidden, width = kernel.padded(matrix.out_features, matrix.in_features)
        return matrix._replace(out_features=hidden, in_features=width), kernel.matrix_bytes(hidden, width, held=False)
    hidden, width = kernel.padded(matrix.in_features, matrix.out_features)
    fused = kernel.matrix_bytes(2 * width, hidden, held=False)
    return matrix._replace(out_features=width, in_features=hidden), -(-fused // 2)


def _apart(dtype: str, step_dtype: str) -> str:
    """An op's name's note of the dtype it multiplies in, where it is not the step's format's."""
    return "" if dtype == step_dtype else f" ({dtype})"


def _matmul_ops(model: ModelSpec, tp: int, tokens: int, weights: LayerWeights, weight_dtype: str) -> list[Op]:
    """Every linear layer's matmul on one rank; routed experts as the expected ones the tokens visit.

    The experts see the tokens of every rank sharing them (``experts.ranks / tp`` data-parallel groups, each with
    ``tokens``); a rank computes its own experts (all of them at a share of the width, or its whole ones) over the
    rows routed to each."""
    ops: list[Op] = []
    touched = here = 0.0
    group_tokens = tokens * weights.experts.ranks // tp
    if model.block.moe is not None:
        touched = experts_touched(model.block.moe.n_experts, model.block.moe.n_active_experts, group_tokens)
        here = touched * weights.local_experts / model.block.moe.n_experts  # of the touched ones, on this rank
    step_dtype = compute_dtype(weight_dtype)
    for matrix, weight, kernels, dtype in weights.matrices:
        count, rows, matrices = float(matrix.count), tokens, 1.0
        if matrix.kind == "expert" and model.block.moe is not None and touched:
            # one grouped matmul per layer (and per gate/up or down): the touched experts' weights, each over its rows
            matrices = here
            count = matrix.count / weights.local_experts
            rows = max(1, round(group_tokens * model.block.moe.n_active_experts / touched))
        activations = matrices * rows * (matrix.in_features + matrix.out_features) * ACTIVATION_BYTES
        ops.append(
            Op(
                name=f"{matrix.kind} {matrix.out_features}x{matrix.in_features}{_apart(dtype, step_dtype)}",
                kind="matmul",
                count=count,
                bytes=matrices * weight + activations,
                flops=2 * matrices * rows * matrix.out_features * matrix.in_features,
                tokens=rows,
                kernels=kernels,
                grouped=matrix.kind == "expert",
                compute=dtype,
            )
        )
    return ops


class WindowLayers(NamedTuple):
    """The attention layers of one kind on one rank and the tokens they see (``AttentionLayout.windows``)."""

    window: int | None
    """Tokens a layer sees: its sliding window or chunk; None: the whole context."""
    layers: int
    """Every layer attending over that window: a K/V-sharing layer (Gemma-3n's, Gemma 4's) too, reading the cache of
    the earlier layer it shares."""
    writers: int
    """Those that write their own K/V (the others only read)."""
    per_token: int
    """Cache bytes of one token in one such layer on the rank (its kind's: Gemma 4's global layers are wider)."""


class AttentionLayout(NamedTuple):
    """What one rank's attention and fixed-state layers hold, computed once per model and formats (``core.kv``)."""

    pair_flops: tuple[float, float]
    """FLOPs of one query-key pair on the rank: (decompressed, absorbed MLA latent)."""
    queries_per_kv: tuple[int, int]
    """Query heads on the rank that read one KV head: (decompressed, absorbed MLA latent). GQA: the group on the rank
    (MHA 1, MQA all the rank's heads); MLA decompressed: 1 (each head its own K and V); absorbed: every head on the
    rank (one latent shared by all)."""
    windows: tuple[WindowLayers, ...]
    """Attention layers by kind, in the order of their first layer (a sliding window and a chunk of one size stay two
    entries: review 380 #1)."""
    kernels: int
    state_layers: int
    state_bytes: float
    """One sequence's fixed state in one state layer on the rank."""
    fp8_cache: bool = False
    """The cache is stored in fp8 (a decode kernel may multiply in fp8: ``core.cost.decode_tiles``)."""


def attention_layout(model: ModelSpec, tp: int, kv_dtype: str, mla_cache: MlaCacheMode) -> AttentionLayout:
    """``model``'s attention and state layers on one rank of ``tp`` (``sequence_ops`` prices a step on it)."""
    footprint = kv_footprint(model, seq_len=1, kv_dtype=kv_dtype, tp=tp, mla_cache=mla_cache)
    heads_here = max(1, model.attention.n_heads // tp)
    heads_share = heads_here / model.attention.n_heads
    windows: list[WindowLayers] = []  # in the order of their first layer (sequence_ops sums the ops in it)
    for kind, writers in model.token_layer_kinds().items():
        window = (
            model.layers.sliding_window
            if kind == "local"
            else model.layers.attention_chunk
            if kind == "chunked"
            else None
        )
        per_token = bytes_per_token_per_layer(model, kv_dtype, mla_cache, tp=tp, kind=kind)
        # K/V-sharing layers attend too, over an earlier layer's cache, writing none (reviews 376 #5, 378 #3-#4)
        windows.append(WindowLayers(window, model.count_layers(kind), writers, per_token))
    state_layers = model.n_state_layers
    return AttentionLayout(
        pair_flops=(
            attention_pair_flops(model, absorbed=False) * heads_share,
            attention_pair_flops(model, absorbed=True) * heads_share,
        ),
        queries_per_kv=(queries_per_kv_head(model, tp, heads_here), heads_here),
        windows=tuple(windows),
        kernels=ATTENTION_BLOCK_KERNELS + (MLA_EXTRA_KERNELS if model.attention.mla is not None else 0),
        state_layers=state_layers,
        state_bytes=footprint.state_bytes_per_seq_per_rank / state_layers if state_layers else 0.0,
        fp8_cache=kv_dtype.startswith("fp8"),
    )  # fmt: skip


def queries_per_kv_head(model: ModelSpec, tp: int, heads_here: int) -> int:
    """Query heads on one rank of ``tp`` that share one KV head, attending to decompressed (per-head) K and V: the
    GQA group on the rank (MHA 1, MQA ``heads_here``; a KV head replicated when tp > n_kv_heads serves only the
    rank's queries); 1 for MLA (its decompressed heads each have their own K and V)."""
    if model.attention.mla is not None or model.attention_free:
        return 1
    return max(1, heads_here // max(1, model.attention.n_kv_heads // tp))


def attention_rows(layout: AttentionLayout, shape: StepShape, absorbed: bool) -> int:
    """Rows the attention kernel computes for ``shape``: its query tokens x the query heads that share one KV head
    on the rank. FlashAttention's GQA packing and FlashMLA pack those heads into the row (M) dimension of the score
    matmul, so MLA's absorbed decode at one token scores as many rows as the rank has heads (128 at tp 1 for
    DeepSeek-V3), not one; this is the size the attention FLOP/s curve (``DeviceProfile.attention_flops``) is read
    at, as a matmul's rate is read at its M."""
    return shape.tokens * layout.queries_per_kv[absorbed]


def sequence_ops(layout: AttentionLayout, shape: StepShape, absorbed: bool) -> list[Op]:
    """The cache each attention layer reads (and writes) for ``shape`` and the pairs it scores (its rate read at
    ``attention_rows``); fixed-state layers' state. ``absorbed``: MLA scores the latent (decode), else the
    decompressed heads."""
    ops: list[Op] = []
    pair_flops = layout.pair_flops[absorbed]
    rows = attention_rows(layout, shape, absorbed)
    decode = None
    if shape.new_tokens == 1 or shape.verify:  # the decode kernels' few rows a sequence: padded to their tile
        decode = DecodeRows(shape.new_tokens * layout.queries_per_kv[absorbed], absorbed, layout.fp8_cache)
    end = shape.context + shape.new_tokens
    for group in layout.windows:
        window = group.window
        read = shape.sequences * tokens_held(end, window) * group.per_token
        written = shape.sequences * shape.new_tokens * group.per_token
        pairs = shape.sequences * causal_pairs_after(shape.new_tokens, shape.context, window)
        name = "attention" if window is None else f"attention (window {window})"
        for count, bytes_, suffix in ((group.writers, read + written, ""),
                                      (group.layers - group.writers, read, ", K/V shared")):  # fmt: skip
            if count:
                ops.append(
                    Op(name=name + suffix, kind="attention", count=count, bytes=bytes_, flops=pairs * pair_flops,
                       tokens=rows, kernels=layout.kernels, decode=decode)
                )  # fmt: skip
    if layout.state_layers:
        ops.append(
            Op(name="recurrent state", kind="memory", count=layout.state_layers,
               bytes=2 * shape.sequences * layout.state_bytes, flops=0.0, tokens=shape.tokens,
               kernels=ATTENTION_BLOCK_KERNELS)
        )  # fmt: skip
    return ops


def forward_ops(
    model: ModelSpec,
    *shapes: StepShape,
    tp: int = 1,
    weight_dtype: str = "bf16",
    kv_dtype: str = "bf16",
    mla_cache: MlaCacheMode = "absorbed",
    experts: ExpertLayout | None = None,
    attention: AttentionLayout | None = None,
    weights: LayerWeights | None = None,
) -> list[Op]:
    """Every operation one rank of ``tp`` runs in one forward step of ``shapes`` (see the module docstring): several
    shapes share the step's matmuls (an engine's chunked prefill carries the running sequences' decodes with it).
    ``experts``: how an MoE model's routed experts spread (default: sharded over the tp ranks); when data-parallel
    groups share them, every group runs the same step (vLLM aligns their forward passes) and an MoE layer gathers
    the groups' tokens to the experts and scatters the results back instead of the tp all-reduce.

    MLA attends over the absorbed latent in decode (one new token) and decompressed (naive) in a prefill, as
    DeepSeek's and vLLM's kernels do. Raises ``BadInputError`` when ``tp`` does not shard the model.

    The step's operations come in three parts, which the serving simulator prices apart: ``layer_ops`` (what the
    step's token count sets), ``sequence_ops`` (each shape's attention over its context), ``outside_ops``.
    ``attention``: ``attention_layout(model, tp, kv_dtype, mla_cache)`` when the caller holds it (a prompt's chunks
    step the same model many times); ``weights``: ``layer_weights(model, tp, weight_dtype, experts)`` likewise.
    """
    tokens = sum(shape.tokens for shape in shapes)
    logits = sum(shape.logits_tokens for shape in shapes)
    ops = layer_ops(model, tokens, tp=tp, weight_dtype=weight_dtype, experts=experts, weights=weights)
    if attention is None:
        attention = attention_layout(model, tp, kv_dtype, mla_cache)
    for shape in shapes:
        ops += sequence_ops(attention, shape, absorbed_attention(model, shape, mla_cache))
    return ops + outside_ops(model, tokens, logits, tp=tp, weight_dtype=weight_dtype)


def absorbed_attention(model: ModelSpec, shape: StepShape, mla_cache: MlaCacheMode) -> bool:
    """Whether ``shape``'s attention scores the absorbed MLA latent: decode (one new token) of an absorbed cache."""
    return model.attention.mla is not None and (shape.new_tokens == 1 or shape.verify) and mla_cache == "absorbed"


def layer_ops(
    model: ModelSpec, tokens: int, *, tp: int = 1, weight_dtype: str = "bf16", experts: ExpertLayout | None = None,
    weights: LayerWeights | None = None,
) -> list[Op]:  # fmt: skip
    """The layers' operations a step of ``tokens`` rows runs whatever their contexts: matmuls, norms and
    activations, the tp all-reduce and the experts' dispatch. ``weights``: ``layer_weights(model, tp, weight_dtype,
    experts)`` when the caller holds it (a serving run steps the same model at many token counts)."""
    if weights is None:
        weights = layer_weights(model, tp, weight_dtype, experts)
    layout = weights.experts
    d = model.d_model
    ops = _matmul_ops(model, tp, tokens, weights, weight_dtype)
    n_moe, dense_layers = weights.n_moe, weights.dense_layers
    mixer_only = model.n_layers - n_moe - dense_layers  # Nemotron-H's lone mixer blocks: one norm (2d), one add (d)
    groups = layout.ranks // tp  # data-parallel groups whose tokens meet at the experts
    d_ff = model.block.d_ff // tp
    # the activation reads gate and up and writes their product (gated: 3 x width), or reads and writes (plain: 2)
    activation = 3 if model.block.mlp == "gated" else 2
    # per layer: norms and residual adds over d_model, the activation over the MLP's width
    elementwise = tokens * ACTIVATION_BYTES * (model.block.n_norms * 2 * d + 2 * d)
    if dense_layers:
        wide = min(model.n_wide_mlp_layers, dense_layers)  # Gemma 4 E2B's K/V-sharing layers (review 376 #2)
        for count, width in ((dense_layers - wide, d_ff), (wide, (model.layers.shared_d_ff or 0) // tp)):
            if count:
                ops.append(
                    Op(name="norms, residuals, activation", kind="memory", count=count,
                       bytes=elementwise + tokens * ACTIVATION_BYTES * activation * width, flops=0.0, tokens=tokens,
                       kernels=MLP_BLOCK_KERNELS)
                )  # fmt: skip
    if mixer_only:
        ops.append(
            Op(name="norm, residual", kind="memory", count=mixer_only, bytes=tokens * ACTIVATION_BYTES * 3 * d,
               flops=0.0, tokens=tokens, kernels=MIXER_ONLY_KERNELS)
        )  # fmt: skip
    if n_moe:
        assert model.block.moe is not None
        # this rank's share of the routed rows' activations: the groups' tokens over the ranks sharing the experts;
        # the shared experts' over the rank's own tokens at their tp share of the width (shared_width_per_rank)
        expert_width = model.block.moe.n_active_experts * model.block.moe.d_ff_expert * groups // layout.ranks
        width = expert_width + shared_width_per_rank(model, tp)
        branches = tokens * ACTIVATION_BYTES * BRANCH_PASSES * d if model.block.moe.branch_norms else 0
        ops.append(
            Op(name="norms, residuals, routing", kind="memory", count=n_moe,
               bytes=elementwise + branches + tokens * ACTIVATION_BYTES * activation * width, flops=0.0,
               tokens=tokens, kernels=MLP_BLOCK_KERNELS + MOE_ROUTING_KERNELS)
        )  # fmt: skip
        ops.append(_router_op(model, tokens, n_moe, weight_dtype))
    for i, (dtype, params, held) in enumerate(weights.mixers):  # each token through the mixer's projections
        ops.append(
            Op(name=f"mixer projections{_apart(dtype, compute_dtype(weight_dtype))}", kind="matmul",
               count=weights.mixer_layers, bytes=held, flops=2.0 * tokens * params, tokens=tokens,
               kernels=0.0 if i else MIXER_PROJECTION_KERNELS, compute=dtype)
        )  # fmt: skip
    shared_moe = n_moe if groups > 1 else 0  # MoE layers whose experts the groups share: gather and scatter instead
    if tp > 1:
        ops.append(
            Op(name="all-reduce", kind="all_reduce", count=2 * model.n_layers - mixer_only - shared_moe,
               bytes=tokens * d * ACTIVATION_BYTES, flops=0.0, tokens=tokens)
        )  # fmt: skip
    if shared_moe and layout.deepep:  # DP attention with DeepEP: each rank's tokens to their experts' devices and back
        ops.append(
            Op(name="experts' all-to-all dispatch and combine", kind="all_to_all", count=2 * shared_moe,
               bytes=dispatch_bytes(model, tokens, layout.ranks, ACTIVATION_BYTES), flops=0.0, tokens=tokens,
               ranks=layout.ranks)
        )  # fmt: skip
    elif shared_moe:  # the engines' default: all-gather the groups' tokens, reduce-scatter the experts' sums
        # (core.dp_attention: a ring moves (N - 1) / N of the gathered buffer through each rank, as all_gather_s prices)
        gathered = groups * tokens * d * ACTIVATION_BYTES
        ops.append(
            Op(name="experts' gather and reduce-scatter", kind="all_gather", count=2 * shared_moe, bytes=gathered,
               flops=0.0, tokens=groups * tokens, ranks=layout.ranks)
        )  # fmt: skip
    return ops


def _router_op(model: ModelSpec, tokens: int, n_moe: int, weight_dtype: str) -> Op:
    """The MoE layers' router: its d_model x n_experts weights read (replicated on every rank), the tokens' hidden
    states in and logits out, in the dtype the engine keeps it in (``core.engine.router_dtype``); its launch is one of
    ``MOE_ROUTING_KERNELS``."""
    assert model.block.moe is not None
    dtype, experts, d = router_dtype(model.family), model.block.moe.n_experts, model.d_model
    size = ROUTER_BYTES[dtype]
    return Op(
        name=f"router{_apart(dtype, compute_dtype(weight_dtype))}", kind="matmul", count=n_moe,
        bytes=experts * d * size + tokens * (d + experts) * size, flops=2.0 * tokens * d * experts, tokens=tokens,
        kernels=0.0, compute=dtype,
    )  # fmt: skip


def outside_ops(model: ModelSpec, tokens: int, logits: int, *, tp: int = 1, weight_dtype: str = "bf16") -> list[Op]:
    """What a step runs once outside the layers (``Op.outside_layers``): the embedding and final norm over
    ``tokens`` rows, the LM head, sampler and logits gather over ``logits`` rows."""
    d = model.d_model
    vocab_rows = vocab_rows_per_rank(model.embeddings.vocab_size, tp)
    fmt = weight_format(weight_dtype)  # quantised checkpoints keep the head in bf16; fp32/fp16/bf16 store it alike
    head_bytes = vocab_rows * d * (int(fmt.nominal_bits) // 8 if fmt.scope == "all" else UNQUANTISED_BYTES)
    ops = [
        Op(name="lm head", kind="matmul", count=1,
           bytes=head_bytes + logits * (d + vocab_rows) * ACTIVATION_BYTES, flops=2.0 * logits * vocab_rows * d,
           tokens=logits, outside_layers=True, compute=compute_dtype(fmt.name if fmt.scope == "all" else None)),
        Op(name="embedding, final norm, sampler", kind="memory", count=1,
           bytes=tokens * d * ACTIVATION_BYTES * 3 + SAMPLER_PASSES * logits * model.embeddings.vocab_size * LOGIT_BYTES,
           flops=0.0, tokens=tokens, kernels=OUTSIDE_LAYER_KERNELS, outside_layers=True),
    ]  # fmt: skip
    if tp > 1:
        ops.append(
            Op(name="logits gather", kind="all_gather", count=1, bytes=logits * vocab_rows * tp * ACTIVATION_BYTES,
               flops=0.0, tokens=logits, outside_layers=True)
        )  # fmt: skip
    return ops
