"""The decoder language model every torch command builds from a ``ModelSpec``.

token embedding (+ learned positions) -> n_layers x [norm -> attention -> norm -> MLP/MoE, residual]
-> final norm -> LM head (the embedding matrix when tied). Parameter names equal transformers' for
the Llama family (``model.embed_tokens.weight``, ``model.layers.0.self_attn.q_proj.weight``, ...,
``lm_head.weight``), so a ``LlamaForCausalLM`` / ``MistralForCausalLM`` / ``Qwen2ForCausalLM`` /
``Qwen3ForCausalLM`` state dict loads strictly and gives the same logits.

Arithmetic the spec states beyond geometry (Gemma's, adding no weight): ``embeddings.scaled`` multiplies the token
embeddings by sqrt(d_model); ``block.norm_weight_offset`` offsets every RMSNorm weight (1 + weight); ``block.activation`` picks
the MLP's nonlinearity; ``attention.scale`` and ``attention.logit_softcap`` the softmax scale and soft cap of the attention
scores; ``embeddings.final_logit_softcap`` caps the logits; ``attention.rope_local`` rotates the local layers by their own RoPE.

Blocks by ``spec.block.n_norms``: 2, pre-norm (Llama); 4, pre- and post-norm around attention
and MLP (Gemma 2/3: ``pre_feedforward_layernorm``, ``post_feedforward_layernorm``); 1, attention and
MLP in parallel from one norm (Falcon-7B); 2 with ``spec.block.parallel_residual``, attention and MLP in parallel, each
from its own norm of the block's input (GPT-NeoX). A two-norm block with ``spec.block.norm_placement`` ``post``
normalises each sublayer's output inside the residual instead (OLMo 2: ``post_attention_layernorm``,
``post_feedforward_layernorm``, no input norm); with ``post_residual``, the residual stream after each add (GPT-1: ``input_layernorm`` after
attention, ``post_attention_layernorm`` after the MLP; ``spec.embeddings.final_norm`` false: no norm after the last layer);
with ``spec.block.normed_residual`` each residual is the sublayer's normed input, scaled (MiniMax).

Tensor parallelism (Megatron layout, see the contract): with ``tp_size > 1`` only rank ``tp_rank``'s
shard is allocated: its query heads, its KV heads (one replicated head when tp > n_kv_heads), its
slice of d_ff; ``o_proj`` and ``down_proj`` are row-parallel and call ``DecoderLM.all_reduce``.
The token embedding and the LM head are split by the padded vocabulary (``mha_cli.nn.vocab_parallel``): the
lookups are all-reduced, the logits gathered. Norms and learned positions are replicated.

Attention and MLP of a layer come from ``build_layer_attention`` and ``build_layer_mlp``: MLA and
MoE layers are delegated there to ``mha_cli.nn.mla.build_mla`` and ``mha_cli.nn.moe.build_moe``
(their own TP split; dense layers first where ``moe.n_dense_layers`` says so). A ``linear`` layer of a
hybrid (Qwen3-Next, Granite-4.0-H) gets the fixed-state mixer of ``spec.recurrent`` instead
(``mha_cli.nn.mixers.build_mixer``, one rank only): its cache slot is a ``MixerState``, not K/V.
Shapes: ``b`` batch, ``s`` new tokens, ``d`` d_model, ``v`` vocab_size.
"""

from __future__ import annotations

import inspect
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from mha_cli.core.decoder_omissions import omitted_details
from mha_cli.core.schemas import MlaCacheMode, ModelSpec
from mha_cli.core.tensor_parallel import kv_heads_per_rank, tp_split_problem
from mha_cli.nn.alibi import alibi_slopes
from mha_cli.nn.attention import Attention, CosSin
from mha_cli.nn.head_transform import HeadTransform
from mha_cli.nn.kv_cache import resolve_cache_dtype
from mha_cli.nn.mixers import build_mixer
from mha_cli.nn.mla import MLAttention, build_mla
from mha_cli.nn.mlp import MLP
from mha_cli.nn.moe import build_moe
from mha_cli.nn.normed_residual import residual_scales
from mha_cli.nn.norms import RMSNorm, make_norm
from mha_cli.nn.padding import Padding
from mha_cli.nn.parallel_mixer import ParallelCache, build_parallel_mixer
from mha_cli.nn.rope import RotaryEmbedding
from mha_cli.nn.row_parallel import Reduce, identity
from mha_cli.nn.sdpa import soft_cap
from mha_cli.nn.sinusoidal import sinusoidal_positions
from mha_cli.nn.vocab_parallel import VocabParallelEmbedding, gather_logits

INIT_STD = 0.02
"""Standard deviation of every linear and embedding weight at initialisation (Llama's, GPT-2's)."""


# One layer's parts ------------------------------------------------------------------------------


def local_heads(spec: ModelSpec, tp_rank: int, tp_size: int) -> tuple[int, int]:
    """(query heads, KV heads) rank ``tp_rank`` of ``tp_size`` holds; KV heads replicate when tp > n_kv."""
    problem = tp_split_problem(spec.attention.n_heads, spec.attention.n_kv_heads, tp_size)
    if problem is not None:
        raise ValueError(problem)
    if not 0 <= tp_rank < tp_size:
        raise ValueError(f"tp_rank ({tp_rank}) must be in [0, {tp_size})")
    return spec.attention.n_heads // tp_size, kv_heads_per_rank(spec, tp_size)


def build_layer_attention(
    spec: ModelSpec,
    layer: int,
    *,
    rope: RotaryEmbedding | None,
    mla_mode: MlaCacheMode = "absorbed",
    tp_rank: int = 0,
    tp_size: int = 1,
    dtype: torch.dtype | None = None,
    device: torch.device | str | None = None,
) -> nn.Module:
    """The attention of layer ``layer`` (rank ``tp_rank``'s shard): ``Attention``, or MLA for an MLA spec; for a
    ``linear`` layer the spec's fixed-state mixer (``GatedDeltaNet`` / ``Mamba2``, unsharded: tp 1 only)."""
    if spec.layer_kind(layer) == "linear":
        if spec.recurrent is None:
            raise ValueError(f"layer {layer} is linear but the spec has no recurrent block")
        if tp_size != 1:
            raise ValueError(f"a {spec.recurrent.kind} mixer is built on one rank only, not split over tp {tp_size}")
        return build_mixer(
            spec.recurrent, spec.d_model, eps=spec.block.norm_eps, layer=layer, n_layers=spec.n_layers, dtype=dtype,
            device=device,
        )  # fmt: skip
    nope = spec.attention.nope_layers == "global" and spec.layer_kind(layer) == "global"  # EXAONE 4, Kimi-Linear's MLA
    if spec.attention.mla is not None:
        return build_mla(
            spec, mla_mode=mla_mode, rotate=not nope, tp_rank=tp_rank, tp_size=tp_size, dtype=dtype, device=device
        )
    if spec.block.norm_weight_offset and spec.attention.qk_norm and spec.block.norm != "rmsnorm":
        raise ValueError("q/k norms with a weight offset are RMSNorms")
    n_heads, n_kv_heads = local_heads(spec, tp_rank, tp_size)
    if spec.attention.qk_norm and spec.attention.qk_norm_span == "projection" and tp_size > 1:
        raise ValueError(
            f"a q/k norm over the whole projection needs every rank's heads (a cross-rank reduction): tp {tp_size}"
            " is not built for it, only tp 1"
        )
    window = spec.layers.sliding_window if spec.layer_kind(layer) == "local" else None
    mask_window = spec.attention.masked_window if spec.layer_kind(layer) == "global" else None
    if nope:
        rope = None  # EXAONE 4: no RoPE on its full-attention layers
    slopes = (
        alibi_slopes(spec.attention.n_heads)[tp_rank * n_heads : (tp_rank + 1) * n_heads]
        if spec.attention.alibi
        else None
    )
    return Attention(
        spec.d_model,
        n_heads,
        n_kv_heads,
        spec.attention.head_dim,
        bias=spec.attention.qkv_bias,
        o_bias=spec.attention.o_bias
        or (spec.attention.last_o_bias and layer == spec.n_layers - 1),  # GPT-NeoX-Japanese: the last
        rope=rope,
        qk_norm=spec.attention.qk_norm,
        qk_norm_span=spec.attention.qk_norm_span,
        qk_norm_type=spec.attention.qk_norm_type,
        qkv_clip=spec.attention.qkv_clip,
        output_gate=spec.attention.output_gate,
        key_scale=1.0 if spec.block.multipliers is None else spec.block.multipliers.key,
        norm_eps=spec.block.norm_eps,
        norm_offset=spec.block.norm_weight_offset,
        window=window,
        mask_window=mask_window,
        scale=spec.attention.scale,
        softcap=spec.attention.logit_softcap,
        alibi_slopes=slopes,
        sinks=spec.attention.sinks,
        softplus_gate=spec.attention.softplus_gate,
        dtype=dtype,
        device=device,
    )


def build_layer_mlp(
    spec: ModelSpec,
    layer: int,
    *,
    tp_rank: int = 0,
    tp_size: int = 1,
    dtype: torch.dtype | None = None,
    device: torch.device | str | None = None,
) -> nn.Module | None:
    """The MLP of layer ``layer`` (rank ``tp_rank``'s shard): dense, or MoE past the spec's dense layers; None for a
    layer without one (``ModelSpec.mlp_kind``)."""
    kind = spec.mlp_kind(layer)
    if kind == "none":
        return None
    if kind == "moe":
        return build_moe(spec, tp_rank=tp_rank, tp_size=tp_size, dtype=dtype, device=device)
    if spec.block.d_ff % tp_size:
        raise ValueError(f"d_ff ({spec.block.d_ff}) must be divisible by tp ({tp_size}) to split the MLP")
    scales = {} if spec.block.multipliers is None else {"gate_scale": spec.block.multipliers.mlp_gate,
                                                  "down_scale": spec.block.multipliers.mlp_down}  # fmt: skip
    return MLP(
        spec.d_model,
        spec.block.d_ff // tp_size,
        gated=spec.block.mlp == "gated",
        bias=spec.block.mlp_bias,
        activation=spec.block.activation,
        **scales,
        dtype=dtype,
        device=device,
    )


class DecoderLayer(nn.Module):
    """One block; the norms present depend on ``spec.block.n_norms`` (see the module docstring). ``mixer``: a
    fixed-state mixer beside the attention (Falcon-H1, ``nn.parallel_mixer``), reading the same normed input.
    ``mlp`` None: a pre-norm block that only mixes tokens, x + attn(norm(x)) (Nemotron-H's lone mixer block)."""

    def __init__(
        self,
        spec: ModelSpec,
        self_attn: nn.Module,
        mlp: nn.Module | None,
        *,
        mixer: nn.Module | None = None,
        **factory: Any,
    ) -> None:
        super().__init__()
        if spec.block.n_norms not in (1, 2, 4):
            raise ValueError(f"build_model builds blocks with 1, 2 or 4 norms, not {spec.block.n_norms}")
        self.n_norms = spec.block.n_norms
        self.post_norms = spec.block.norm_placement == "post"  # OLMo 2: each sublayer's output normed, no input norm
        self.parallel = spec.block.parallel_residual  # GPT-NeoX: x + attn(norm1(x)) + mlp(norm2(x))
        self.post_residual = spec.block.norm_placement == "post_residual"  # GPT-1: norm(x + attn(x)), norm(h + mlp(h))

        def norm() -> nn.Module:
            return make_norm(
                spec.block.norm,
                spec.d_model,
                spec.block.norm_eps,
                offset=spec.block.norm_weight_offset,
                bias=spec.block.norm_bias,
                weights=spec.block.norm_weights,
                **factory,
            )

        if not self.post_norms:
            self.input_layernorm = norm()
        self.self_attn = self_attn
        if mixer is not None:
            self.mixer = mixer
        self.has_mixer = mixer is not None
        self.multipliers = spec.block.multipliers
        if (self.has_mixer or self.multipliers is not None) and (self.n_norms != 2 or self.post_norms):
            raise ValueError("a mixer beside attention, or multipliers, are built in a pre-norm block of two norms")
        if self.n_norms >= 2 and mlp is not None:
            self.post_attention_layernorm = norm()
        if self.post_norms:
            self.post_feedforward_layernorm = norm()
        if self.n_norms == 4:
            self.pre_feedforward_layernorm = norm()
            self.post_feedforward_layernorm = norm()
        self.mlp = mlp
        # Modules that take the reducer per call (ours) get it passed; others (an ``all_reduce``
        # attribute of their own) are kept current by ``DecoderLM.all_reduce``'s setter.
        self._attn_takes_reduce = _takes_reduce(self_attn)
        self._mlp_takes_reduce = mlp is not None and _takes_reduce(mlp)
        self.is_mixer = hasattr(self_attn, "new_state")
        """A fixed-state mixer (``forward(x, state)``, ``new_state``) in place of attention."""
        self.residual_scales = residual_scales(spec.block.normed_residual, linear=self.is_mixer)
        """MiniMax's ((alpha, beta) after attention, after the MLP) around normed inputs; None: Llama's residual."""

    def forward(
        self,
        x: torch.Tensor,
        cache: Any,
        start_pos: int,
        cos_sin: CosSin | None,
        reduce: Reduce,
        padding: Padding | None = None,
    ) -> torch.Tensor:
        if self.post_norms:  # x + norm(attn(x)), then h + norm(mlp(h))
            x = x + self.post_attention_layernorm(self._attend(x, cache, start_pos, cos_sin, reduce, padding))
            return x + self.post_feedforward_layernorm(self._feed_forward(x, reduce))  # (b, s, d)
        if self.post_residual:
            x = self.input_layernorm(x + self._attend(x, cache, start_pos, cos_sin, reduce, padding))  # (b, s, d)
            return self.post_attention_layernorm(x + self._feed_forward(x, reduce))  # (b, s, d)
        h = self.input_layernorm(x)  # (b, s, d)
        if self.has_mixer or self.multipliers is not None:
            attn = self._attend_beside_mixer(h, cache, start_pos, cos_sin, reduce, padding)  # (b, s, d)
        else:
            attn = self._attend(h, cache, start_pos, cos_sin, reduce, padding)  # (b, s, d)
        if self.mlp is None:  # a block that only mixes tokens (ModelSpec checks it is a pre-norm one)
            return x + attn  # (b, s, d)
        if self.residual_scales is not None:  # MiniMax: each residual is the normed input, both terms scaled
            (attn_alpha, attn_beta), (mlp_alpha, mlp_beta) = self.residual_scales
            h = self.post_attention_layernorm(h * attn_alpha + attn * attn_beta)  # (b, s, d)
            return h * mlp_alpha + self._feed_forward(h, reduce) * mlp_beta  # (b, s, d)
        if self.n_norms == 1:  # parallel block: both branches read the same normed input
            return x + attn + self._feed_forward(h, reduce)  # (b, s, d)
        if self.parallel:  # parallel block, each branch its own norm of the block's input
            return x + attn + self._feed_forward(self.post_attention_layernorm(x), reduce)  # (b, s, d)
        if self.n_norms == 2:
            x = x + attn  # (b, s, d)
            mlp_out = self._feed_forward(self.post_attention_layernorm(x), reduce)  # (b, s, d)
            return x + (mlp_out if self.multipliers is None else mlp_out * self.multipliers.residual)  # (b, s, d)
        x = x + self.post_attention_layernorm(attn)  # (b, s, d)
        mlp_out = self._feed_forward(self.pre_feedforward_layernorm(x), reduce)  # (b, s, d)
        return x + self.post_feedforward_layernorm(mlp_out)  # (b, s, d)

    def _attend(
        self,
        h: torch.Tensor,
        cache: Any,
        start_pos: int,
        cos_sin: CosSin | None,
        reduce: Reduce,
        padding: Padding | None,
    ) -> torch.Tensor:
        if isinstance(self.self_attn, Attention):
            return self.self_attn(h, cache, start_pos, cos_sin=cos_sin, reduce=reduce, padding=padding)
        if isinstance(self.self_attn, MLAttention):  # MLA computes its own RoPE (its own width)
            return self.self_attn(h, cache, start_pos, reduce=reduce, padding=padding)
        if padding is not None:
            raise ValueError(f"a padded batch (attention_mask) is not supported by {type(self.self_attn).__name__}")
        if self.is_mixer:  # no cache: a fresh state for this one forward (the whole sequence from position 0)
            state = self.self_attn.new_state(h.shape[0], dtype=h.dtype) if cache is None else cache
            return self.self_attn(h, state)  # (b, s, d)
        if self._attn_takes_reduce:
            return self.self_attn(h, cache, start_pos, reduce=reduce)
        return self.self_attn(h, cache, start_pos)

    def _attend_beside_mixer(
        self,
        h: torch.Tensor,
        cache: Any,
        start_pos: int,
        cos_sin: CosSin | None,
        reduce: Reduce,
        padding: Padding | None,
    ) -> torch.Tensor:
        """The attention (or a linear layer's mixer) of h (b, s, d), its multipliers applied, plus the mixer's output
        beside it (if any): the branch that joins the residual."""
        m = self.multipliers
        attn_cache = cache.attention if isinstance(cache, ParallelCache) else cache
        attn_in = h if m is None or self.is_mixer else h * m.attention_in  # a linear layer's mixer: no factor
        out = self._attend(attn_in, attn_cache, start_pos, cos_sin, reduce, padding)  # (b, s, d)
        if m is not None and not self.is_mixer:
            out = out * m.attention_out
        if not self.has_mixer:
            return out if m is None else out * m.residual
        if padding is not None:
            raise ValueError(f"a padded batch (attention_mask) is not supported by {type(self.mixer).__name__}")
        state = self.mixer.new_state(h.shape[0], dtype=h.dtype) if cache is None else cache.mixer
        mixed = self.mixer(h if m is None else h * m.ssm_in, state)  # (b, s, d)
        return out + mixed if m is None else (out + mixed * m.ssm_out) * m.residual  # (b, s, d)

    def new_cache(self, batch: int, max_seq: int, dtype: torch.dtype | str | None = None) -> Any:
        """The layer's cache: its attention's pre-allocated K/V (sized by ``max_seq``), or a mixer's zero
        ``MixerState`` (the same for any ``max_seq``; its conv part in ``dtype``, default the weights'); both, as a
        ``ParallelCache``, for a mixer beside attention."""
        if self.has_mixer:
            state = self.mixer.new_state(batch, dtype=None if dtype is None else resolve_cache_dtype(dtype))
            return ParallelCache(self.self_attn.new_cache(batch, max_seq, dtype=dtype), state)
        if self.is_mixer:
            return self.self_attn.new_state(batch, dtype=None if dtype is None else resolve_cache_dtype(dtype))
        return self.self_attn.new_cache(batch, max_seq, dtype=dtype)

    def _feed_forward(self, h: torch.Tensor, reduce: Reduce) -> torch.Tensor:
        return self.mlp(h, reduce=reduce) if self._mlp_takes_reduce else self.mlp(h)


def _takes_reduce(module: nn.Module) -> bool:
    return "reduce" in inspect.signature(module.forward).parameters


class DecoderBody(nn.Module):
    """``embed_tokens`` (+ ``embed_positions``), ``layers``, ``norm``: transformers' ``model.`` prefix."""

    def __init__(
        self, spec: ModelSpec, layers: list[DecoderLayer], *, tp_rank: int = 0, tp_size: int = 1, **factory: Any
    ) -> None:
        super().__init__()
        width = spec.embeddings.width or spec.d_model  # ELECTRA's, RemBERT's tables: projected to d_model
        if tp_size > 1 and spec.embeddings.width is not None:
            raise ValueError(f"embedding_size {width} (projected to d_model) is built on one rank, not {tp_size}")
        self.embed_tokens = (
            nn.Embedding(spec.embeddings.vocab_size, width, **factory)
            if tp_size == 1
            else VocabParallelEmbedding(
                spec.embeddings.vocab_size, spec.d_model, tp_rank=tp_rank, tp_size=tp_size, **factory
            )
        )
        if spec.embeddings.positions:
            self.embed_positions = nn.Embedding(spec.embeddings.positions, width, **factory)
        if spec.embeddings.token_types:  # BERT's token-type table: row 0 added to every token
            self.embed_token_types = nn.Embedding(spec.embeddings.token_types, width, **factory)
        if spec.embeddings.width is not None:
            self.embed_project = nn.Linear(width, spec.d_model, **factory)
        self.layers = nn.ModuleList(layers)
        if spec.embeddings.final_norm:
            self.norm = make_norm(
                spec.block.norm, spec.d_model, spec.block.norm_eps, offset=spec.block.norm_weight_offset, bias=spec.block.norm_bias,
                weights=spec.block.norm_weights, **factory,
            )  # fmt: skip
        if spec.embeddings.normed:  # BLOOM's word_embeddings_layernorm, BERT's embeddings.LayerNorm
            self.embed_norm = make_norm(
                spec.block.norm,
                width,
                spec.block.norm_eps,
                offset=spec.block.norm_weight_offset,
                bias=spec.block.norm_bias,
                **factory,
            )


class DecoderLM(nn.Module):
    """``forward(input_ids (b, s), caches=None, start_pos=0) -> logits (b, s, v)``; see the module docstring.

    Attributes: ``spec``, ``n_layers`` (layers built), ``tp_rank``, ``tp_size``, ``all_reduce``
    (Tensor -> Tensor summing over ranks; the identity on one rank, replaceable by a TP runner),
    ``omitted`` (family details of the spec this decoder does not reproduce).
    """

    def __init__(
        self,
        spec: ModelSpec,
        body: DecoderBody,
        *,
        rope: RotaryEmbedding | None,
        rope_local: RotaryEmbedding | None = None,
        tp_rank: int = 0,
        tp_size: int = 1,
        omitted: list[str] | None = None,
        **factory: Any,
    ) -> None:
        super().__init__()
        self.spec = spec
        self.model = body
        if not spec.embeddings.tied:  # the embedding's row count: the whole vocabulary, or the rank's block of it
            rows = body.embed_tokens.num_embeddings
            width = (
                spec.embeddings.lm_head_size or spec.embeddings.width or spec.d_model
            )  # behind BERT's head transform
            self.lm_head = nn.Linear(width, rows, bias=spec.embeddings.lm_head_bias, **factory)
        elif spec.embeddings.lm_head_bias:  # CTRL: the tied matrix, a bias of the head's own
            self.lm_head = HeadBias(body.embed_tokens.num_embeddings, **factory)
        if spec.embeddings.lm_head_transform is not None:  # BERT's cls.predictions.transform
            self.head_transform = HeadTransform(spec, **factory)
        self.rope = rope
        self.rope_local = rope_local
        """The RoPE of the layers whose attention rotates by it (``spec.attention.rope_local``), else None."""
        self._rotates_locally = [
            rope_local is not None and getattr(layer.self_attn, "rope", None) is rope_local for layer in body.layers
        ]
        self.n_layers = len(body.layers)
        self.tp_rank, self.tp_size = tp_rank, tp_size
        self._all_reduce: Reduce = identity
        self.all_reduce = identity
        self.omitted: list[str] = omitted or []
        # with_module: torch keeps a weak reference to the model (a bound method would tie it to itself)
        self._register_load_state_dict_pre_hook(DecoderLM._drop_tied_head, with_module=True)

    @property
    def all_reduce(self) -> Reduce:
        """Sums a tensor over the tensor-parallel ranks; the identity on one rank."""
        return self._all_reduce

    @all_reduce.setter
    def all_reduce(self, reduce: Reduce) -> None:
        """Replace the reducer, here and in every submodule that keeps one of its own (``all_reduce``)."""
        self._all_reduce = reduce
        for module in self.modules():
            if module is not self and hasattr(module, "all_reduce"):
                module.all_reduce = reduce

    @staticmethod
    def _drop_tied_head(model: DecoderLM, state_dict: dict[str, Any], prefix: str, *_: Any) -> None:
        """transformers lists a tied head under ``lm_head.weight`` too; here the embedding is the head."""
        if model.spec.embeddings.tied:
            state_dict.pop(prefix + "lm_head.weight", None)

    def forward(
        self,
        input_ids: torch.Tensor,
        caches: list[Any] | None = None,
        start_pos: int = 0,
        *,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Logits (b, s, v) for ``input_ids`` (b, s) at positions start_pos..; ``attention_mask`` (b, start_pos +
        s), 1 for real tokens and 0 for padding, runs a padded batch (``mha_cli.nn.padding``), each row at its own
        positions (``position_ids`` (b, s) override them)."""
        padding = None
        if attention_mask is not None:
            padding = Padding.from_attention_mask(attention_mask, start_pos, input_ids.shape[1], position_ids)
        elif position_ids is not None:
            raise ValueError("position_ids need the attention_mask of the batch they belong to")
        x = self.embed(input_ids, start_pos, padding)  # (b, s, d)
        return self.project(self.run_layers(x, caches, start_pos, padding))  # (b, s, v)

    def embed(self, input_ids: torch.Tensor, start_pos: int, padding: Padding | None = None) -> torch.Tensor:
        """Token ids (b, s) at positions start_pos.. (a padded batch: each row's own) -> their embeddings (b, s, d),
        learned positions added (position p reads row p + ``position_offset``), then the embedding norm if any."""
        s = input_ids.shape[1]
        embed = self.model.embed_tokens
        x = embed(input_ids, self.all_reduce) if self.tp_size > 1 else embed(input_ids)  # (b, s, d)
        if self.spec.embeddings.scaled:  # the factor in the activations' dtype first, as transformers casts it
            x = x * torch.tensor(self.spec.d_model**0.5, dtype=x.dtype)  # (b, s, d)
        if self.spec.block.multipliers is not None and self.spec.block.multipliers.embedding != 1.0:
            x = x * self.spec.block.multipliers.embedding  # Falcon-H1's embedding_multiplier
        if hasattr(self.model, "embed_positions"):
            offset = self.spec.embeddings.position_offset  # OPT, BioGPT: 2
            if start_pos + s + offset > self.model.embed_positions.num_embeddings:
                raise ValueError(
                    f"positions up to {start_pos + s} exceed the"
                    f" {self.model.embed_positions.num_embeddings - offset} learned"
                )
            positions = torch.arange(start_pos, start_pos + s, device=input_ids.device)  # (s,)
            if padding is not None:
                positions = padding.positions  # (b, s)
            x = x + self.model.embed_positions(positions + offset)  # (b, s, d)
        if self.spec.embeddings.sinusoidal:  # CTRL
            positions = torch.arange(start_pos, start_pos + s, device=input_ids.device)  # (s,)
            if padding is not None:
                positions = padding.positions  # (b, s)
            x = x + sinusoidal_positions(positions, self.spec.d_model).to(x.dtype)  # (b, s, d)
        if self.spec.embeddings.token_types:  # BERT: every token of token type 0
            x = x + self.model.embed_token_types.weight[0]  # (b, s, e)
        if self.spec.embeddings.normed:
            x = self.model.embed_norm(x)  # (b, s, e)
        if hasattr(self.model, "embed_project"):  # ELECTRA, RemBERT: embedding width e -> d_model
            x = self.model.embed_project(x)  # (b, s, d)
        return x

    def run_layers(
        self, x: torch.Tensor, caches: list[Any] | None, start_pos: int, padding: Padding | None = None
    ) -> torch.Tensor:
        """The built layers over hidden states (b, s, d) at positions start_pos.., each with its cache."""
        if caches is not None and len(caches) != self.n_layers:
            raise ValueError(f"{len(caches)} caches for {self.n_layers} layers: use new_cache()")
        if caches is None and start_pos:
            raise ValueError("start_pos > 0 needs the caches holding the earlier positions")
        positions = torch.arange(start_pos, start_pos + x.shape[1], device=x.device)  # (s,)
        if padding is not None:
            positions = padding.positions  # (b, s)
        cos_sin = None if self.rope is None else self.rope.cos_sin(positions)  # (s, r) or (b, s, r) each
        local = None if self.rope_local is None else self.rope_local.cos_sin(positions)  # the local layers' own
        for i, layer in enumerate(self.model.layers):
            cache = None if caches is None else caches[i]
            layer_cos_sin = local if self._rotates_locally[i] else cos_sin
            x = layer(x, cache, start_pos, layer_cos_sin, self.all_reduce, padding)  # (b, s, d)
        return x

    def project(self, x: torch.Tensor) -> torch.Tensor:
        """Final norm and LM head: hidden states (b, s, d) -> logits (b, s, v)."""
        if self.spec.embeddings.final_norm:
            x = self.model.norm(x)  # (b, s, d)
        if self.spec.embeddings.lm_head_transform is not None:
            x = self.head_transform(x)  # (b, s, e)
        head = self.model.embed_tokens.weight if self.spec.embeddings.tied else self.lm_head.weight  # (v, d) or (R, d)
        head_bias = self.lm_head.bias if self.spec.embeddings.lm_head_bias else None  # (v,) or (R,): GPT-J's, Phi's
        logits = F.linear(x, head, head_bias)  # (b, s, v), or (b, s, R): the rank's block of the padded vocabulary
        if self.spec.embeddings.logit_scale != 1.0:
            logits = logits * self.spec.embeddings.logit_scale  # Cohere's logit_scale
        if self.tp_size > 1:
            first_row = self.tp_rank * head.shape[0]
            logits = gather_logits(
                logits,
                first_row=first_row,
                vocab_size=self.spec.embeddings.vocab_size,
                tp_size=self.tp_size,
                reduce=self.all_reduce,
            )  # (b, s, v)
        if self.spec.embeddings.final_logit_softcap is not None:
            logits = soft_cap(logits, self.spec.embeddings.final_logit_softcap)  # (b, s, v)
        return logits

    def new_cache(self, batch: int, max_seq: int, dtype: torch.dtype | str | None = None) -> list[Any]:
        """One pre-allocated cache per layer, each sized by its own attention (heads, window, latent), or a
        linear layer's fixed ``MixerState``."""
        return [layer.new_cache(batch, max_seq, dtype=dtype) for layer in self.model.layers]


class HeadBias(nn.Module):
    """The bias of a tied LM head (CTRL's ``lm_head.bias``): ``bias`` (rows,), added to the logits."""

    def __init__(self, rows: int, **factory: Any) -> None:
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(rows, **factory))


# The entry point --------------------------------------------------------------------------------


def build_model(
    spec: ModelSpec,
    *,
    n_layers: int | None = None,
    dtype: torch.dtype | None = None,
    device: torch.device | str | None = None,
    mla_mode: MlaCacheMode = "absorbed",
    tp_rank: int = 0,
    tp_size: int = 1,
) -> DecoderLM:
    """The decoder ``spec`` describes, its first ``n_layers`` layers (default all), rank ``tp_rank``'s shard.

    Weights are drawn from N(0, 0.02) (biases 0, norms 1) unless ``device`` is ``meta``, where
    nothing is allocated (for counting parameters).
    """
    n_built = spec.n_layers if n_layers is None else n_layers
    if not 1 <= n_built <= spec.n_layers:
        raise ValueError(f"n_layers ({n_built}) must be between 1 and the spec's {spec.n_layers}")
    if tp_size < 1:
        raise ValueError(f"tp_size ({tp_size}) must be at least 1")
    if spec.attention.per_kind_geometry:  # one head geometry per layer is built (verify.plan refuses it first)
        raise ValueError(f"{spec.name}: global layers at their own KV heads or head width (Gemma 4) are not built")
    unbuilt = gemma4_layout_unbuilt(spec)
    if unbuilt:  # (verify.plan refuses it first)
        raise ValueError(
            f"{spec.name}: {', '.join(unbuilt)} are not built (this decoder builds no Gemma 4 or Gemma-3n layout)"
        )
    target = torch.device(device) if device is not None else torch.device("cpu")
    factory: dict[str, Any] = {"dtype": dtype, "device": "meta"}  # allocate once, below, without default init
    rotary = spec.rotary
    rope = (
        None if rotary is None or spec.attention.mla is not None else RotaryEmbedding(rotary, spec.attention.head_dim)
    )
    rope_local = None
    if rope is not None and spec.attention.rope_local is not None and spec.n_local_layers:
        rope_local = RotaryEmbedding(spec.attention.rope_local, spec.attention.head_dim)

    def layer_rope(i: int) -> RotaryEmbedding | None:
        return rope_local if rope_local is not None and spec.layer_kind(i) == "local" else rope

    layers = [
        DecoderLayer(
            spec,
            build_layer_attention(
                spec, i, rope=layer_rope(i), mla_mode=mla_mode, tp_rank=tp_rank, tp_size=tp_size, **factory
            ),
            build_layer_mlp(spec, i, tp_rank=tp_rank, tp_size=tp_size, **factory),
            mixer=build_parallel_mixer(spec, i, tp_size=tp_size, **factory),
            **factory,
        )
        for i in range(n_built)
    ]
    if not spec.block.first_input_norm:  # ModernBERT's decoder: its first layer reads the normed embeddings as they are
        layers[0].input_layernorm = nn.Identity()
    model = DecoderLM(
        spec,
        DecoderBody(spec, layers, tp_rank=tp_rank, tp_size=tp_size, **factory),
        rope=rope,
        rope_local=rope_local,
        tp_rank=tp_rank,
        tp_size=tp_size,
        omitted=omitted_details(spec),
        **factory,
    )
    if target.type != "meta":
        model.to_empty(device=target)
        model.apply(_init_weights)
    return model


def gemma4_layout_unbuilt(spec: ModelSpec) -> list[str]:
    """Gemma 4's layer parts this decoder does not build, in words: its per-layer embeddings, K/V-sharing layers
    without k/v projections, their wider MLP."""
    parts = {
        "per-layer embeddings": spec.embeddings.per_layer_inputs is not None,
        "K/V-sharing layers without k/v projections": not spec.layers.shared_kv_projections,
        "a wider MLP on the K/V-sharing layers": spec.layers.shared_d_ff is not None,
    }
    return [part for part, present in parts.items() if present]


def _init_weights(module: nn.Module) -> None:
    """N(0, INIT_STD) weights for linears and embeddings, zero biases, unit norms.

    A module with tensors of its own defines ``init_weights()``; without one, its own parameters are
    drawn like weights (zeros for names ending in ``bias``) and its own buffers zeroed, so nothing
    keeps the garbage ``to_empty`` leaves.
    """
    if hasattr(module, "init_weights"):
        module.init_weights()
    elif isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, mean=0.0, std=INIT_STD)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)
    elif isinstance(module, (RMSNorm, nn.LayerNorm, nn.RMSNorm)):
        if module.weight is not None:
            nn.init.ones_(module.weight)
        if getattr(module, "bias", None) is not None:
            nn.init.zeros_(module.bias)
    else:
        for name, param in module.named_parameters(recurse=False):
            if name.endswith("bias"):
                nn.init.zeros_(param)
            else:
                nn.init.normal_(param, mean=0.0, std=INIT_STD)
        for buffer in module.buffers(recurse=False):
            buffer.zero_()
