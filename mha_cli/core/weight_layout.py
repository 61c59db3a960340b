"""How a family's transformers state dict maps onto ``build_model``'s names and layouts, as data.

``build_model``'s parameter names are Llama's (``model.embed_tokens.weight``,
``model.layers.N.self_attn.q_proj.weight``, ``model.layers.N.mlp.gate_proj.weight``, ``model.norm.weight``,
``lm_head.weight``; MoE ``mlp.gate.weight``, ``mlp.experts.gate_up_proj`` (E, 2f, d) and ``mlp.experts.down_proj``
(E, d, f); learned positions ``model.embed_positions.weight``). Other families store the same weights under
other names, fused (one ``qkv_proj`` for q, k and v) or transposed (GPT-2's Conv1D keeps (in, out)). A
``WeightLayout`` says which, and ``mha_cli.nn.hf_state_dict.to_mha_state_dict`` applies it, in this order:

1. ``dropped``: transformers' names that are no weights (causal-mask buffers, RoPE's ``inv_freq``) are removed;
2. ``interleaved``: transformers' tensors whose gate and up entries alternate are regrouped, gate entries first;
3. ``transposed``: transformers' tensors stored (in, out) get their last two dimensions swapped;
4. ``renames``: each name is rewritten by every (pattern, replacement) pair in turn (``re.sub``);
5. ``fused``: a renamed name matching a fused pattern is split into our separate parts.

Patterns of steps 1-3 match transformers' names, those of step 5 the renamed ones. A layout only moves values:
it never computes one, so a family whose arithmetic differs from the decoder's (tanh GELU, ALiBi, a parallel
block of its own kind) still differs after it loads; ``mha_cli.core.decoder_omissions`` says so.

Pure Python (no torch): the sizes of a split come from the spec through ``part_sizes``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, NamedTuple

if TYPE_CHECKING:
    from mha_cli.core.schemas import ModelSpec

SplitSizes = Literal["qkv", "qkv_per_kv_group", "gate_up"]
"""How a fused weight's parts are sized from the spec (rows of a (out, in) weight; entries of a bias):

- ``qkv``: q, k, v one after the other: n_heads x head_dim, n_kv_heads x head_dim, n_kv_heads x head_dim;
- ``qkv_per_kv_group``: the same three totals, stored as n_kv_heads groups of head_dim-wide heads, each group its
  n_heads / n_kv_heads query heads, then its key head, then its value head (Falcon: with one KV head (multi_query)
  all query heads then k then v; with n_kv_heads = n_heads, q, k, v alternate head by head);
- ``gate_up``: gate then up, d_ff each (SwiGLU's two input projections).
"""


class FusedSplit(NamedTuple):
    """One weight transformers stores fused and ``build_model`` keeps as separate parts."""

    pattern: str
    """Regex matched (``re.fullmatch``) against a name after the renames, e.g.
    ``(.*)\\.self_attn\\.qkv_proj\\.(weight|bias)``."""
    parts: tuple[str, ...]
    """One replacement per part, in storage order, expanded from the match (``\\1``, ``\\2``), e.g.
    ``\\1.self_attn.q_proj.\\2``."""
    sizes: SplitSizes
    """How the parts' sizes come from the spec (see ``SplitSizes``)."""
    dim: int = 0
    """The dimension split: 0, the output rows of a (out, in) weight and the entries of a bias."""


class WeightLayout(NamedTuple):
    """How one family's transformers state dict becomes ``build_model``'s (see the module docstring for the order).

    Every field is a tuple, so a layout is immutable and self-contained; the empty layout is the identity (Llama).
    """

    renames: tuple[tuple[str, str], ...] = ()
    """Ordered (regex, replacement) pairs, each applied with ``re.sub`` to every name the pair before it left, e.g.
    ``(r"^transformer\\.h\\.(\\d+)\\.", r"model.layers.\\1.")``."""
    fused: tuple[FusedSplit, ...] = ()
    """Weights stored fused (q/k/v, gate/up) that ours keeps separate, matched after the renames."""
    transposed: tuple[str, ...] = ()
    """Regexes (``re.search``) of transformers' names stored with their last two dimensions swapped relative to
    ours: GPT-2's Conv1D weights (in, out) against ``nn.Linear``'s (out, in); 3-D expert tensors (E, in, out)."""
    interleaved: tuple[tuple[str, int], ...] = ()
    """(regex of transformers' names, dimension): tensors whose entries along that dimension (of transformers'
    layout, before any transpose) alternate gate and up (gate 0, up 0, gate 1, ...); ours holds every gate entry
    first, then every up entry (gpt-oss's ``experts.gate_up_proj`` (E, d, 2f) and ``gate_up_proj_bias`` (E, 2f))."""
    dropped: tuple[str, ...] = ()
    """Regexes (``re.search``) of transformers' names that carry nothing the forward reads: causal-mask buffers
    (GPT-2's ``attn.bias``, ``attn.masked_bias``), RoPE's ``inv_freq`` recomputed from the config. Never a weight."""


def part_sizes(sizes: SplitSizes, spec: ModelSpec) -> tuple[int, ...]:
    """The parts' sizes along the split dimension, in storage order (``qkv_per_kv_group``: each part's total)."""
    if sizes == "gate_up":
        return spec.d_ff, spec.d_ff
    q, kv = spec.n_heads * spec.dim_per_head, spec.kv_heads * spec.dim_per_head
    return q, kv, kv


# A temporary table: each entry is self-contained, so that it can move to a per-family module of its own.
LAYOUTS: dict[str, WeightLayout] = {
    # GPT-2 (and GPT-SW3, its config class): Conv1D weights (in, out); c_attn holds q, k, v one after the other.
    "gpt2": WeightLayout(
        renames=(
            (r"^transformer\.wte\.", "model.embed_tokens."),
            (r"^transformer\.wpe\.", "model.embed_positions."),
            (r"^transformer\.ln_f\.", "model.norm."),
            (r"^transformer\.h\.(\d+)\.", r"model.layers.\1."),
            (r"\.ln_1\.", ".input_layernorm."),
            (r"\.ln_2\.", ".post_attention_layernorm."),
            (r"\.attn\.c_attn\.", ".self_attn.qkv_proj."),
            (r"\.attn\.c_proj\.", ".self_attn.o_proj."),
            (r"\.mlp\.c_fc\.", ".mlp.up_proj."),
            (r"\.mlp\.c_proj\.", ".mlp.down_proj."),
        ),
        fused=(
            FusedSplit(
                r"(.*)\.self_attn\.qkv_proj\.(weight|bias)",
                (r"\1.self_attn.q_proj.\2", r"\1.self_attn.k_proj.\2", r"\1.self_attn.v_proj.\2"),
                "qkv",
            ),
        ),
        transposed=(r"\.(attn\.c_attn|attn\.c_proj|mlp\.c_fc|mlp\.c_proj)\.weight$",),
        dropped=(r"\.attn\.(bias|masked_bias)$",),
    ),
    "gpt-sw3": WeightLayout(
        renames=(
            (r"^transformer\.wte\.", "model.embed_tokens."),
            (r"^transformer\.wpe\.", "model.embed_positions."),
            (r"^transformer\.ln_f\.", "model.norm."),
            (r"^transformer\.h\.(\d+)\.", r"model.layers.\1."),
            (r"\.ln_1\.", ".input_layernorm."),
            (r"\.ln_2\.", ".post_attention_layernorm."),
            (r"\.attn\.c_attn\.", ".self_attn.qkv_proj."),
            (r"\.attn\.c_proj\.", ".self_attn.o_proj."),
            (r"\.mlp\.c_fc\.", ".mlp.up_proj."),
            (r"\.mlp\.c_proj\.", ".mlp.down_proj."),
        ),
        fused=(
            FusedSplit(
                r"(.*)\.self_attn\.qkv_proj\.(weight|bias)",
                (r"\1.self_attn.q_proj.\2", r"\1.self_attn.k_proj.\2", r"\1.self_attn.v_proj.\2"),
                "qkv",
            ),
        ),
        transposed=(r"\.(attn\.c_attn|attn\.c_proj|mlp\.c_fc|mlp\.c_proj)\.weight$",),
        dropped=(r"\.attn\.(bias|masked_bias)$",),
    ),
    # GPT-Neo: GPT-2's module tree with nn.Linear (out, in) and separate q/k/v under attn.attention.
    "gpt_neo": WeightLayout(
        renames=(
            (r"^transformer\.wte\.", "model.embed_tokens."),
            (r"^transformer\.wpe\.", "model.embed_positions."),
            (r"^transformer\.ln_f\.", "model.norm."),
            (r"^transformer\.h\.(\d+)\.", r"model.layers.\1."),
            (r"\.ln_1\.", ".input_layernorm."),
            (r"\.ln_2\.", ".post_attention_layernorm."),
            (r"\.attn\.attention\.out_proj\.", ".self_attn.o_proj."),
            (r"\.attn\.attention\.", ".self_attn."),
            (r"\.mlp\.c_fc\.", ".mlp.up_proj."),
            (r"\.mlp\.c_proj\.", ".mlp.down_proj."),
        ),
        dropped=(r"\.attn\.attention\.(bias|masked_bias)$",),
    ),
    # Phi-3: Llama's names, with q/k/v fused in qkv_proj and gate/up (gate first) in gate_up_proj.
    "phi3": WeightLayout(
        fused=(
            FusedSplit(
                r"(.*)\.self_attn\.qkv_proj\.(weight|bias)",
                (r"\1.self_attn.q_proj.\2", r"\1.self_attn.k_proj.\2", r"\1.self_attn.v_proj.\2"),
                "qkv",
            ),
            FusedSplit(
                r"(.*)\.mlp\.gate_up_proj\.weight", (r"\1.mlp.gate_proj.weight", r"\1.mlp.up_proj.weight"), "gate_up"
            ),
        ),
        dropped=(r"\.rotary_emb\.inv_freq$",),
    ),
    # Falcon (RefinedWeb): query_key_value holds one group per KV head (its query heads, its key, its value).
    # Its new decoder architecture's two parallel norms (ln_attn, ln_mlp) have no counterpart here: they stay
    # unexpected, and such a checkpoint does not load.
    "falcon": WeightLayout(
        renames=(
            (r"^transformer\.word_embeddings\.", "model.embed_tokens."),
            (r"^transformer\.ln_f\.", "model.norm."),
            (r"^transformer\.h\.(\d+)\.", r"model.layers.\1."),
            (r"\.self_attention\.query_key_value\.", ".self_attn.qkv_proj."),
            (r"\.self_attention\.dense\.", ".self_attn.o_proj."),
            (r"\.mlp\.dense_h_to_4h\.", ".mlp.up_proj."),
            (r"\.mlp\.dense_4h_to_h\.", ".mlp.down_proj."),
        ),
        fused=(
            FusedSplit(
                r"(.*)\.self_attn\.qkv_proj\.(weight|bias)",
                (r"\1.self_attn.q_proj.\2", r"\1.self_attn.k_proj.\2", r"\1.self_attn.v_proj.\2"),
                "qkv_per_kv_group",
            ),
        ),
        dropped=(r"\.self_attention\.rotary_emb\.inv_freq$",),
    ),
    # StarCoder2: Llama's names except its plain MLP, c_fc (up) and c_proj (down).
    "starcoder2": WeightLayout(
        renames=((r"\.mlp\.c_fc\.", ".mlp.up_proj."), (r"\.mlp\.c_proj\.", ".mlp.down_proj.")),
        dropped=(r"\.rotary_emb\.inv_freq$",),
    ),
    # Llama 4 (text): the MoE block is feed_forward, its router router, its one shared expert shared_expert;
    # the routed experts are stored (E, d, 2f) (gate columns, then up) and (E, f, d), ours (E, 2f, d) and (E, d, f).
    "llama4_text": WeightLayout(
        renames=(
            (r"\.feed_forward\.router\.", ".mlp.gate."),
            (r"\.feed_forward\.shared_expert\.", ".mlp.shared_experts."),
            (r"\.feed_forward\.", ".mlp."),
        ),
        transposed=(r"\.feed_forward\.experts\.(gate_up_proj|down_proj)$",),
        dropped=(r"\.rotary_emb\.inv_freq$",),
    ),
    # Granite MoE: the MoE block is block_sparse_moe, its router router; the experts are stored as ours.
    "granitemoe": WeightLayout(
        renames=((r"\.block_sparse_moe\.router\.", ".mlp.gate."), (r"\.block_sparse_moe\.", ".mlp.")),
        dropped=(r"\.rotary_emb\.inv_freq$",),
    ),
}
"""Layouts by transformers ``model_type``, for the families whose every weight then loads by name and shape (a
strict ``load_state_dict``); a family missing here either needs none (Llama's names) or does not load."""

PARTIAL_LAYOUTS: dict[str, WeightLayout] = {
    # gpt-oss: experts (E, d, 2f) with gate and up columns alternating, (E, f, d); its router is router (with a
    # bias). Its attention sinks (self_attn.sinks) and router bias (mlp.gate.bias) have no counterpart in the
    # decoder, so they stay unexpected.
    "gpt_oss": WeightLayout(
        renames=((r"\.mlp\.router\.", ".mlp.gate."),),
        transposed=(r"\.mlp\.experts\.(gate_up_proj|down_proj)$",),
        interleaved=((r"\.mlp\.experts\.gate_up_proj(_bias)?$", -1),),
        dropped=(r"\.rotary_emb\.inv_freq$",),
    ),
}
"""Layouts that map every weight the decoder has but leave some of transformers' unexpected: the family needs a
decoder feature first (named in each entry's comment). Not used by the sweep."""

AWAITING_OMISSIONS: dict[str, WeightLayout] = {
    # XGLM: BART-style names (self_attn_layer_norm, fc1, fc2, final_layer_norm per layer; layer_norm at the end).
    # It loads, but differs: its embeddings are scaled by sqrt(d_model) and its positions are sinusoidal (offset
    # 2), while the spec gives it RoPE; ``omitted_details`` lists neither yet.
    "xglm": WeightLayout(
        renames=(
            (r"^model\.layer_norm\.", "model.norm."),
            (r"\.self_attn\.out_proj\.", ".self_attn.o_proj."),
            (r"\.self_attn_layer_norm\.", ".input_layernorm."),
            (r"\.final_layer_norm\.", ".post_attention_layernorm."),
            (r"\.fc1\.", ".mlp.up_proj."),
            (r"\.fc2\.", ".mlp.down_proj."),
        ),
        dropped=(r"^model\.embed_positions\.weights$",),
    ),
    # HunYuan (dense): Llama's names but its per-head q/k norms, query_layernorm and key_layernorm. It loads, but
    # differs: it normalises q and k after RoPE, the decoder before; ``omitted_details`` does not say so yet.
    "hunyuan_v1_dense": WeightLayout(
        renames=(
            (r"\.self_attn\.query_layernorm\.", ".self_attn.q_norm."),
            (r"\.self_attn\.key_layernorm\.", ".self_attn.k_norm."),
        ),
        dropped=(r"\.rotary_emb\.inv_freq$",),
    ),
    # HunYuan MoE: HunYuan's q/k norm names, a router gate.wg and one shared expert shared_mlp beside the routed
    # ones (stored as ours). Differs as HunYuan dense does (q/k norms after RoPE), with nothing listed yet.
    "hunyuan_v1_moe": WeightLayout(
        renames=(
            (r"\.self_attn\.query_layernorm\.", ".self_attn.q_norm."),
            (r"\.self_attn\.key_layernorm\.", ".self_attn.k_norm."),
            (r"\.mlp\.gate\.wg\.", ".mlp.gate."),
            (r"\.mlp\.shared_mlp\.", ".mlp.shared_experts."),
        ),
        dropped=(r"\.rotary_emb\.inv_freq$",),
    ),
}
"""Layouts under which every weight loads, for families that then differ with nothing in ``omitted_details``:
kept out of ``LAYOUTS`` so that the sweep does not class them "differs, unlisted" until the omissions are written."""
