"""Parameter counts from a ``ModelSpec``, layer by layer.

Attention, standard: q d_model x (n_heads * head_dim), twice that with an output gate (Qwen3-Next); k and v
d_model x (n_kv_heads * head_dim) each; o (n_heads * head_dim) x d_model; plus biases where the spec has them.
Attention, MLA (DeepSeek-V2/V3): q directly (d_model x n_heads * qk_head_dim) or through a
q latent (d_model x q_lora_rank, its norm, q_lora_rank x n_heads * qk_head_dim); the KV down
projection d_model x (kv_lora_rank + qk_rope_head_dim), the latent's norm, the up projection
kv_lora_rank x n_heads * (qk_nope_head_dim + v_head_dim), and o (n_heads * v_head_dim) x d_model.
MLP: gated 3 * d_model * d_ff; plain 2 * d_model * d_ff. MoE layers: every expert plus a router.
Norms: rmsnorm d_model weights, layernorm weights and biases (none with ``norm_bias`` false), n_norms_per_layer of them. Embeddings vocab x d_model, twice
if untied (plus the head's bias), plus learned positions, token-type rows, an embedding norm (BLOOM, BERT), ELECTRA's
projection of narrower embeddings and BERT's LM-head transform if any.
Fixed-state mixers (``mixer_params``), on the layers that hold ``recurrent``'s state, in place of attention on
``linear`` layers and beside it when ``on_attention_layers`` (Falcon-H1), laid out as transformers builds them.
"""

import math

from mha_cli.core.record import Record
from mha_cli.core.schemas import ModelSpec, RecurrentSpec


class ParamBreakdown(Record):
    """Parameter counts by part of the model; ``total`` is what the weights cost in memory."""

    attention_per_layer: int
    mlp_dense_per_layer: int
    mlp_moe_per_layer: int
    """All experts (routed + shared) and the router of one MoE layer; 0 for dense models."""
    norms_per_layer: int
    n_dense_mlp_layers: int
    n_moe_layers: int
    embeddings: int
    """Input embedding + output head (if untied, with its bias if any) + learned positions + an embedding norm."""
    lookup_tables: int
    """Weights read by row lookup, not multiplied: the input embedding when untied (tied, the
    head's matmul reads it whole) and learned positions. A step reads only its tokens' rows."""
    final_norm: int
    total: int
    """Every weight: what the weights cost in memory."""
    active: int
    """Weights one token multiplies by: total less the routed experts it does not visit and less the
    lookup tables (input embedding when untied, learned positions), which are read, not multiplied.
    This is how published active counts are quoted (gpt-oss-20b 3.6B, DeepSeek-V2-Lite 2.4B) and
    what 2 x active x tokens FLOPs counts."""

    mixer_per_layer: int = 0
    """Weights of one fixed-state mixer (Gated DeltaNet, Mamba, lightning attention, KDA); 0 without one."""
    n_attention_layers: int = 0
    """Layers with attention: every layer but the ``linear`` ones."""
    n_mixer_layers: int = 0
    """Layers with a fixed-state mixer: the ``linear`` ones, or every layer when it runs beside attention."""

    @property
    def attention_total(self) -> int:
        return self.attention_per_layer * self.n_attention_layers

    @property
    def mixer_total(self) -> int:
        return self.mixer_per_layer * self.n_mixer_layers


def attention_params(model: ModelSpec) -> int:
    """Weights (and biases) of one attention layer."""
    d = model.d_model
    if model.mla is not None:
        mla = model.mla
        q_out = model.n_heads * mla.qk_head_dim
        q = d * q_out if mla.q_lora_rank is None else d * mla.q_lora_rank + mla.q_lora_rank + mla.q_lora_rank * q_out
        kv_down = d * (mla.kv_lora_rank + mla.qk_rope_head_dim) + mla.kv_lora_rank
        kv_up = mla.kv_lora_rank * model.n_heads * (mla.qk_nope_head_dim + mla.v_head_dim)
        o = model.n_heads * mla.v_head_dim * d
        biases = (q_out if model.qkv_bias else 0) + (d if model.o_bias else 0)
        return q + kv_down + kv_up + o + biases + qk_norm_params(model) + indexer_params(model)
    q_width = model.n_heads * model.dim_per_head
    kv_width = model.kv_heads * model.dim_per_head
    q_out = 2 * q_width if model.attn_output_gate else q_width  # Qwen3-Next's q_proj also emits the output gate
    weights = d * q_out + 2 * d * kv_width + q_width * d
    biases = (q_out + 2 * kv_width if model.qkv_bias else 0) + (d if model.o_bias else 0)
    sinks = model.n_heads if model.attn_sinks else 0  # one sink logit per query head
    gate = {None: 0, "head": d * model.n_heads, "element": d * q_width}[model.attn_softplus_gate]  # Laguna's g_proj
    return weights + biases + qk_norm_params(model) + sinks + gate


def indexer_params(model: ModelSpec) -> int:
    """DeepSeek-V3.2's lightning indexer, where the spec gives its heads: wq_b q_lora_rank x (heads x head_dim), wk
    d_model x head_dim, its key's LayerNorm (weight and bias), weights_proj d_model x heads; else 0."""
    indexer = model.mla.indexer if model.mla is not None else None
    if indexer is None or indexer.index_n_heads is None:
        return 0
    width, heads = indexer.index_head_dim, indexer.index_n_heads
    q_in = model.mla.q_lora_rank or model.d_model
    return q_in * heads * width + model.d_model * width + 2 * width + model.d_model * heads


def qk_norm_params(model: ModelSpec) -> int:
    """The q and k norms' weights of one layer: one head wide each, or the whole q and k projections
    ((n_heads + n_kv_heads) * head_dim, OLMo 2's ``qk_norm_span`` projection)."""
    if not model.qk_norm:
        return 0
    if model.qk_norm_span == "projection":
        return (model.n_heads + model.kv_heads) * model.dim_per_head
    return (4 if model.qk_norm_type == "layernorm" else 2) * model.dim_per_head  # Persimmon's: weight and bias


def mixer_params(model: ModelSpec) -> int:
    """Weights (and biases) of one fixed-state mixer of ``model``; 0 without a ``recurrent`` block."""
    state = model.recurrent
    if state is None:
        return 0
    d = model.d_model
    per_kind = {
        "gated_deltanet": _gated_deltanet_params, "mamba": _mamba_params, "mamba2": _mamba2_params,
        "lightning": _lightning_params, "kda": _kda_params, "short_conv": _short_conv_params,
    }  # fmt: skip
    conv = state.conv_dim * state.conv_kernel + (state.conv_dim if state.has_conv_bias else 0)
    return per_kind[state.kind](state, d) + conv


def _projection_biases(state: RecurrentSpec, in_width: int, d_model: int) -> int:
    return (in_width if state.in_proj_bias else 0) + (d_model if state.out_proj_bias else 0)


def _gated_deltanet_params(state: RecurrentSpec, d: int) -> int:
    """Qwen3-Next: in_proj_qkvz d x (2 key + 2 value widths), in_proj_ba d x 2 value heads, dt_bias and A_log per
    value head, a gated norm of one value head, out_proj value width x d (the conv is counted by the caller)."""
    value_width = state.n_heads * state.state_dim
    key_width = (state.conv_dim - value_width) // 2  # conv over q, k (key width each) and v
    in_width = 2 * key_width + 2 * value_width + 2 * state.n_heads
    norm = state.state_dim if state.output_norm else 0
    return d * in_width + 2 * state.n_heads + norm + value_width * d + _projection_biases(state, in_width, d)


def _mamba_params(state: RecurrentSpec, d: int) -> int:
    """Mamba-1 (Jamba) over d_inner = n_heads channels: in_proj d x 2 d_inner, x_proj d_inner x (dt_rank + 2
    d_state), dt_proj dt_rank x d_inner with a bias, A_log d_inner x d_state, D d_inner, out_proj d_inner x d, and
    Jamba's dt, B and C norms."""
    inner, d_state = state.n_heads, state.state_dim
    rank = state.dt_rank or math.ceil(d / 16)
    x_proj = inner * (rank + 2 * d_state)
    dt_proj = rank * inner + inner
    norms = rank + 2 * d_state if state.output_norm else 0
    own = inner * d_state + inner  # A_log, D
    projections = d * 2 * inner + inner * d + _projection_biases(state, 2 * inner, d)
    return projections + x_proj + dt_proj + own + norms


def _mamba2_params(state: RecurrentSpec, d: int) -> int:
    """Mamba-2 with d_inner = conv_dim - 2 groups x d_state: in_proj d x (d_inner + conv_dim + heads), dt_bias,
    A_log and D per head, the gated norm over d_inner, out_proj d_inner x d."""
    inner = state.conv_dim - 2 * state.n_groups * state.state_dim
    in_width = inner + state.conv_dim + state.n_heads
    norm = inner if state.output_norm else 0
    return d * in_width + 3 * state.n_heads + norm + inner * d + _projection_biases(state, in_width, d)


def _lightning_params(state: RecurrentSpec, d: int) -> int:
    """MiniMax's lightning attention: qkv_proj d x 3 width, output_gate d x width, out_proj width x d and a norm
    over width = heads x head_dim."""
    width = state.n_heads * state.head_dim
    norm = width if state.output_norm else 0
    return 5 * d * width + norm + _projection_biases(state, 4 * width, d)


def _kda_params(state: RecurrentSpec, d: int) -> int:
    """Kimi-Linear's KDA over width = heads x head_dim: q, k, v d x width each, the forget gate (f_a d x head_dim,
    f_b head_dim x width, dt_bias width, A_log per head), b_proj d x heads, the output gate (g_a, g_b as f_a, f_b),
    a gated norm of one head, o_proj width x d."""
    width, head = state.n_heads * state.head_dim, state.head_dim
    low_rank_gate = d * head + head * width
    forget_gate = low_rank_gate + width + state.n_heads
    norm = head if state.output_norm else 0
    in_width = 3 * width
    projections = d * in_width + width * d + d * state.n_heads + _projection_biases(state, in_width, d)
    return projections + forget_gate + low_rank_gate + norm


def _short_conv_params(state: RecurrentSpec, d: int) -> int:
    """LFM2's gated short convolution over conv_dim = d_model channels: in_proj d x 3 conv_dim (B, C, x),
    out_proj conv_dim x d (the conv is counted by the caller)."""
    in_width = 3 * state.conv_dim
    return d * in_width + state.conv_dim * d + _projection_biases(state, in_width, d)


def mlp_params(d_model: int, d_ff: int, mlp: str, bias: bool) -> int:
    """One MLP of hidden width ``d_ff``: gated (3 matrices) or plain (2)."""
    n_in = 2 if mlp == "gated" else 1
    weights = (n_in + 1) * d_model * d_ff
    biases = n_in * d_ff + d_model if bias else 0
    return weights + biases


def activation_params(model: ModelSpec) -> int:
    """Weights of a dense MLP's activation: xIELU's alpha_p and alpha_n (Apertus), else none."""
    return 2 if model.activation == "xielu" else 0


def norm_params(model: ModelSpec) -> int:
    """One d_model-wide norm: an RMSNorm's weight, a LayerNorm's weight and (``norm_bias``) bias; none for OLMo's."""
    if not model.norm_weights:
        return 0
    return model.d_model if model.norm == "rmsnorm" or not model.norm_bias else 2 * model.d_model


def _width_norm_params(model: ModelSpec, width: int) -> int:
    """One norm of the model's kind over ``width`` values."""
    return width if model.norm == "rmsnorm" or not model.norm_bias else 2 * width


def embedding_side_params(model: ModelSpec) -> int:
    """Weights beside the embedding tables on the input side: the embedding norm (BLOOM, BERT) and the projection of
    ``embedding_size``-wide embeddings to d_model (ELECTRA, RemBERT: weight and bias)."""
    e = model.embedding_size or model.d_model
    extras = _width_norm_params(model, e) if model.embedding_norm else 0
    return extras + (e * model.d_model + model.d_model if model.embedding_size is not None else 0)


def head_side_params(model: ModelSpec) -> int:
    """Weights before the LM head's matrix: BERT's transform (a linear d_model -> the head's width, with a bias
    unless ``lm_head_transform_bias`` is false, and a norm); 0 without one."""
    if model.lm_head_transform is None:
        return 0
    head = model.lm_head_size or model.embedding_size or model.d_model
    bias = head if model.lm_head_transform_bias else 0
    return model.d_model * head + bias + _width_norm_params(model, head)


def _embedding_extras(model: ModelSpec) -> int:
    """The embedding side's and the head side's weights beside the tables and the head's matrix."""
    return embedding_side_params(model) + head_side_params(model)


def count_params(model: ModelSpec) -> ParamBreakdown:
    """Count every parameter of ``model``; see the module docstring for the formulas."""
    d = model.d_model
    norm = norm_params(model)
    attention = attention_params(model)
    dense_mlp = mlp_params(d, model.d_ff, model.mlp, model.mlp_bias) + activation_params(model)
    moe_mlp = 0
    moe_inactive = 0
    n_moe = 0
    if model.moe is not None:
        moe = model.moe
        expert = mlp_params(d, moe.d_ff_expert, model.mlp, moe.expert_bias)
        shared = mlp_params(d, moe.d_ff_shared or moe.d_ff_expert, model.mlp, moe.expert_bias)
        router = d * moe.n_experts + (d if moe.shared_expert_gate else 0)  # + Qwen2-MoE's shared-expert gate
        router += moe.n_experts if moe.router_bias else 0  # gpt-oss's router bias
        router += d if moe.output_norm else 0  # A.X K1's norm of the block's output
        moe_mlp = moe.n_experts * expert + moe.n_shared_experts * shared + router
        moe_inactive = (moe.n_experts - moe.n_active_experts) * expert
        n_moe = model.n_moe_layers
    n_dense = model.n_layers - n_moe
    e = model.embedding_size or d  # ELECTRA's embedding tables are narrower than d_model
    rows_looked_up = (0 if model.tied_embeddings else model.vocab_size) + model.position_embeddings
    lookup_tables = (rows_looked_up + model.token_type_embeddings) * e
    head_bias = model.vocab_size if model.lm_head_bias else 0  # GPT-J's, Phi's
    head = model.lm_head_size or e  # RemBERT's untied head is wider than its embeddings
    embeddings = model.vocab_size * head + lookup_tables + head_bias + _embedding_extras(model)
    n_mixer = sum(model.holds_state(i) for i in range(model.n_layers))
    n_attention = model.n_layers - model.count_layers("linear")
    mixer = mixer_params(model)
    total = (
        n_attention * attention
        + n_mixer * mixer
        + model.n_layers * model.n_norms_per_layer * norm
        + n_dense * dense_mlp
        + n_moe * moe_mlp
        + embeddings
        + (norm if model.final_norm else 0)
        + (d if model.last_o_bias and not model.o_bias else 0)  # GPT-NeoX-Japanese's last dense_bias
        - (0 if model.first_input_norm else norm)  # ModernBERT's decoder: layer 0 without its input norm
    )
    return ParamBreakdown(
        attention_per_layer=attention,
        mlp_dense_per_layer=dense_mlp,
        mlp_moe_per_layer=moe_mlp,
        norms_per_layer=model.n_norms_per_layer * norm,
        n_dense_mlp_layers=n_dense,
        n_moe_layers=n_moe,
        embeddings=embeddings,
        lookup_tables=lookup_tables,
        final_norm=norm if model.final_norm else 0,
        total=total,
        active=total - n_moe * moe_inactive - lookup_tables,
        mixer_per_layer=mixer,
        n_attention_layers=n_attention,
        n_mixer_layers=n_mixer,
    )
