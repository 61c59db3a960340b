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
   ``squeezed``: transformers' tensors with a leading dimension of 1 ours lacks lose it (a view);
4. ``renames``: each name is rewritten by every (pattern, replacement) pair in turn (``re.sub``);
5. ``fused``: a renamed name matching a fused pattern is split into our separate parts.

Patterns of steps 1-3 match transformers' names, those of step 5 the renamed ones. A layout only moves values:
it never computes one, so a family whose arithmetic differs from the decoder's (tanh GELU, ALiBi, a parallel
block of its own kind) still differs after it loads; its ``Family.differences`` says so. Each family's layout
is its registry module's ``Family.weights`` (``core.families.models``).

Pure Python (no torch): the sizes of a split come from the spec through ``part_sizes``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, NamedTuple

if TYPE_CHECKING:
    from mha_cli.core.schemas import ModelSpec

SplitSizes = Literal["qkv", "qkv_per_kv_group", "qvk_per_4_shards", "gate_up"]
"""How a fused weight's parts are sized from the spec (rows of a (out, in) weight; entries of a bias):

- ``qkv``: q, k, v one after the other: n_heads x head_dim, n_kv_heads x head_dim, n_kv_heads x head_dim;
- ``qkv_per_kv_group``: the same three totals, stored as n_kv_heads groups of head_dim-wide heads, each group its
  n_heads / n_kv_heads query heads, then its key head, then its value head (Falcon: with one KV head (multi_query)
  all query heads then k then v; with n_kv_heads = n_heads, q, k, v alternate head by head);
- ``qvk_per_4_shards``: the same three totals (MHA), stored as the 4 model-parallel shards CodeGen was trained
  with, each a quarter of every part in the order q, v, k (parts listed in that order);
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


def split_qkv(sizes: SplitSizes) -> FusedSplit:
    """The fused ``self_attn.qkv_proj`` (weight and bias, after the renames) split into q, k and v as ``sizes`` says."""
    return FusedSplit(
        r"(.*)\.self_attn\.qkv_proj\.(weight|bias)",
        (r"\1.self_attn.q_proj.\2", r"\1.self_attn.k_proj.\2", r"\1.self_attn.v_proj.\2"),
        sizes,
    )


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
    squeezed: tuple[str, ...] = ()
    """Regexes (``re.search``) of transformers' names whose tensor has a leading dimension of 1 that ours lacks
    (ERNIE 4.5 MoE's correction bias, (1, E) against our (E,)): it is dropped, the values kept."""
    dropped: tuple[str, ...] = ()
    """Regexes (``re.search``) of transformers' names that carry nothing the forward reads: causal-mask buffers
    (GPT-2's ``attn.bias``, ``attn.masked_bias``), RoPE's ``inv_freq`` recomputed from the config. Never a weight."""


def part_sizes(sizes: SplitSizes, spec: ModelSpec) -> tuple[int, ...]:
    """The parts' sizes along the split dimension, in storage order (``qkv_per_kv_group``: each part's total)."""
    if sizes == "gate_up":
        return spec.block.d_ff, spec.block.d_ff
    q, kv = spec.attention.n_heads * spec.attention.head_dim, spec.attention.n_kv_heads * spec.attention.head_dim
    return q, kv, kv
