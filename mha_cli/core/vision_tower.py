"""A multimodal model's vision tower listed tensor by tensor (``core.vision_config`` reads it from config.json).

Seven encoders are listed, each with its projector into the decoder, named as transformers 5 names the weights and
split over tensor-parallel ranks as vLLM splits them (its default ``mm_encoder_tp_mode="weights"``):

- ``siglip`` (Gemma 3, ``Gemma3ForConditionalGeneration``; vLLM ``model_executor/models/siglip.py`` and
  ``gemma3_mm.py``): a conv patch embedding and learned positions (replicated), ``n_layers`` pre-LN blocks of
  q/k/v/out projections and a plain fc1/fc2 MLP, all with biases (q, k, v, fc1 split by columns, out and fc2 by
  rows, their biases replicated), a final LayerNorm; the projector's RMSNorm and its (vision width, text width)
  matrix, replicated (``Gemma3MultiModalProjector``: a bare ``nn.Parameter``).
- ``qwen2_5_vl`` (``Qwen2_5_VLForConditionalGeneration``; vLLM ``qwen2_5_vl.py``): a Conv3d patch embedding without
  bias (replicated), ``n_layers`` blocks of two RMSNorms, a fused qkv and a proj with biases, a gated MLP with
  biases (qkv, gate, up split by columns, proj and down by rows), and the patch merger: an RMSNorm, then an MLP from
  ``merge^2`` patches to ``merge^2`` patches' width (split by columns) to the decoder's width (by rows).
- ``qwen3_vl`` (Qwen3-VL and Qwen3-VL-MoE, ``Qwen3VLForConditionalGeneration``; vLLM ``qwen3_vl.py``; and
  Qwen3.5 / Qwen3.6, dense and MoE, ``Qwen3_5ForConditionalGeneration``, whose tower transformers 5.24 builds as
  Qwen3-VL's without DeepStack mergers and vLLM 0.32 ``qwen3_5.py`` as ``Qwen3_VisionTransformer``): a Conv3d
  patch embedding with bias and learned positions (replicated), ``n_layers`` blocks of two LayerNorms, a fused qkv
  and a proj, a plain linear_fc1/linear_fc2 MLP, all biased (split as Qwen2.5-VL's), the merger (a LayerNorm over one
  patch, then Qwen2.5-VL's two layers) and one DeepStack merger per ``deepstack_visual_indexes`` entry (its
  LayerNorm over the ``merge^2`` patches).
- ``llama4`` (Llama 4 Scout and Maverick, ``Llama4ForConditionalGeneration``; vLLM ``mllama4.py``): an unfold patch
  embedding without bias (split by columns), a class embedding, learned positions and two LayerNorms (replicated),
  ``n_layers`` blocks of LayerNorms, biased q/k/v/o and a plain fc1/fc2 MLP (split as SigLIP's), the pixel-shuffle
  adapter's two unbiased layers (columns, then rows) and the projector to the decoder's width (split by columns).

- ``pixtral`` (Mistral Small 3.1 / 3.2, ``Mistral3ForConditionalGeneration``; vLLM ``mistral3.py`` and
  ``pixtral.py`` ``PixtralHFVisionModel``): a conv patch embedding without bias and an RMSNorm before the layers
  (replicated), ``n_layers`` blocks of two RMSNorms, unbiased q/k/v/o and a gated MLP (q, k, v, gate, up split by
  columns, o and down by rows); the projector's RMSNorm and patch merger (``merge^2`` patches to one, a plain
  ``nn.Linear``: replicated), then linear_1 (columns) and linear_2 (rows) to the decoder's width, unbiased
  (``multimodal_projector_bias`` false).
- ``gemma4`` (Gemma 4, ``Gemma4ForConditionalGeneration``; vLLM ``gemma4_mm.py``, which builds transformers' own
  ``Gemma4VisionModel`` and replaces its linear layers by replicated ones: every rank holds it whole): a linear
  patch embedding without bias and a learned position table per axis, ``n_layers`` blocks of unbiased q/k/v/o
  (``head_dim`` wide heads, ``n_kv_heads`` of them for keys and values) with RMS-normed queries and keys, a gated MLP and four RMSNorms; the projector ``embed_vision``'s one unbiased matrix
  to the decoder's width (its norm has no weight). Its buffers (``standardize``'s two vectors, clipped linears'
  four scalars each) are left out, a few KiB. vLLM 0.29 on quantises the tower where its widths are multiples of 64
  or the checkpoint is compressed-tensors (``_get_tower_quant_config``): priced unquantised here, as below.

- ``moonvit`` (Kimi-K2.5, ``KimiK25ForConditionalGeneration``; transformers 5.25 ``Kimi_K25VisionModel``, vLLM
  ``kimi_k25_vit.py`` ``MoonViT3dPretrainedModel``): a conv patch embedding with bias and a square grid of learned
  positions (replicated), ``n_layers`` pre-LN blocks of biased q/k/v and out projections and a plain fc1/fc2 MLP (q,
  k, v, fc1 split by columns as vLLM's fused ``wqkv`` and ``fc0``, the out projection and fc2 by rows), a final
  LayerNorm; the projector ``mm_projector`` (``KimiK25MultiModalProjector``'s patchmerger: a LayerNorm over one
  patch, then biased layers from ``merge^2`` patches to the same width and to the decoder's; vLLM's ReplicatedLinear,
  whole on every rank).

A width tp does not divide is rounded up on each rank (Qwen2.5-VL-7B's 3,420-wide MLP over 8 ranks). The tower is
priced unquantised whatever the weight format (``core.weight_bytes`` prices only the decoder's linear layers in a
format): quantised checkpoints name it in their ignore lists; vLLM's online ``--quantization fp8`` would quantise its
linear layers too, which is not modelled. It sits with the input side, on the first pipeline stage. Other multimodal
families' towers are not listed: the importer names them among what the weights leave out. Pure Python.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import NamedTuple

from mha_cli.core.schemas import VisionTowerSpec

Split = str
"""One of ``core.inventory.Split`` (the inventory imports this module, so its type is not imported here)."""


class TowerTensor(NamedTuple):
    """One weight of the tower on one rank: transformers' name, its shape there, its tensor-parallel split (the
    inventory lists it as a tensor of kind ``vision``)."""

    name: str
    shape: tuple[int, ...]
    split: Split

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


def tower_params(tower: VisionTowerSpec, tp: int = 1) -> int:
    """Parameters of the tower and its projector one rank of ``tp`` holds."""
    return sum(t.numel for t in tower_tensors(tower, tp))


def tower_tensors(tower: VisionTowerSpec, tp: int = 1) -> list[TowerTensor]:
    """Every weight of the tower and its projector as one rank of ``tp`` holds it, transformers' names."""
    listing = {"siglip": _siglip, "qwen2_5_vl": _qwen2_5_vl, "qwen3_vl": _qwen3_vl, "llama4": _llama4,
               "pixtral": _pixtral, "gemma4": _gemma4, "moonvit": _moonvit}[tower.kind]  # fmt: skip
    return list(listing(tower, tp))


def _tensor(name: str, shape: tuple[int, ...], split: Split) -> TowerTensor:
    return TowerTensor(name, shape, split)


def _shard(width: int, tp: int) -> int:
    """A column- or row-parallel width on one rank of ``tp``, rounded up."""
    return -(-width // tp)


def _linear(name: str, out: int, inp: int, split: Split, tp: int) -> Iterator[TowerTensor]:
    """A biased linear layer: column-parallel splits its rows and bias, row-parallel its inputs (bias whole)."""
    if split == "column":
        yield _tensor(f"{name}.weight", (_shard(out, tp), inp), "column")
        yield _tensor(f"{name}.bias", (_shard(out, tp),), "column")
    else:
        yield _tensor(f"{name}.weight", (out, _shard(inp, tp)), "row")
        yield _tensor(f"{name}.bias", (out,), "replicated")


def _layer_norm(name: str, width: int) -> Iterator[TowerTensor]:
    yield _tensor(f"{name}.weight", (width,), "replicated")
    yield _tensor(f"{name}.bias", (width,), "replicated")


def _biased_block(attention: str, out: str, mlp: str, d: int, f: int, tp: int) -> Iterator[TowerTensor]:
    """A ViT block's biased linears (SigLIP's, Llama 4's, MoonViT's): q, k, v by columns and the ``out`` projection
    by rows under ``attention``; a plain MLP under ``mlp``, fc1 by columns, fc2 by rows."""
    for projection in ("q_proj", "k_proj", "v_proj"):
        yield from _linear(f"{attention}.{projection}", d, d, "column", tp)
    yield from _linear(f"{attention}.{out}", d, d, "row", tp)
    yield from _linear(f"{mlp}.fc1", f, d, "column", tp)
    yield from _linear(f"{mlp}.fc2", d, f, "row", tp)


def _siglip(tower: VisionTowerSpec, tp: int) -> Iterator[TowerTensor]:
    d, f, patch = tower.d_model, tower.d_ff, tower.patch_size
    prefix = "model.vision_tower"
    yield _tensor(f"{prefix}.embeddings.patch_embedding.weight", (d, tower.in_channels, patch, patch), "replicated")
    yield _tensor(f"{prefix}.embeddings.patch_embedding.bias", (d,), "replicated")
    yield _tensor(f"{prefix}.embeddings.position_embedding.weight", (tower.patches_per_image, d), "replicated")
    for i in range(tower.n_layers):
        layer = f"{prefix}.encoder.layers.{i}"
        yield from _layer_norm(f"{layer}.layer_norm1", d)
        yield from _layer_norm(f"{layer}.layer_norm2", d)
        yield from _biased_block(f"{layer}.self_attn", "out_proj", f"{layer}.mlp", d, f, tp)
    yield from _layer_norm(f"{prefix}.post_layernorm", d)
    yield _tensor("model.multi_modal_projector.mm_input_projection_weight", (d, tower.projector_width), "replicated")
    yield _tensor("model.multi_modal_projector.mm_soft_emb_norm.weight", (d,), "replicated")


def _qwen2_5_vl(tower: VisionTowerSpec, tp: int) -> Iterator[TowerTensor]:
    d, f, patch = tower.d_model, tower.d_ff, tower.patch_size
    kernel = (d, tower.in_channels, tower.temporal_patch_size, patch, patch)
    yield _tensor("model.visual.patch_embed.proj.weight", kernel, "replicated")
    for i in range(tower.n_layers):
        block = f"model.visual.blocks.{i}"
        yield _tensor(f"{block}.norm1.weight", (d,), "replicated")
        yield _tensor(f"{block}.norm2.weight", (d,), "replicated")
        yield from _linear(f"{block}.attn.qkv", 3 * d, d, "column", tp)
        yield from _linear(f"{block}.attn.proj", d, d, "row", tp)
        yield from _linear(f"{block}.mlp.gate_proj", f, d, "column", tp)
        yield from _linear(f"{block}.mlp.up_proj", f, d, "column", tp)
        yield from _linear(f"{block}.mlp.down_proj", d, f, "row", tp)
    merged = d * tower.spatial_merge_size**2
    yield _tensor("model.visual.merger.ln_q.weight", (d,), "replicated")
    yield from _linear("model.visual.merger.mlp.0", merged, merged, "column", tp)
    yield from _linear("model.visual.merger.mlp.2", tower.projector_width, merged, "row", tp)


def _qwen3_vl(tower: VisionTowerSpec, tp: int) -> Iterator[TowerTensor]:
    d, f, patch = tower.d_model, tower.d_ff, tower.patch_size
    kernel = (d, tower.in_channels, tower.temporal_patch_size, patch, patch)
    yield _tensor("model.visual.patch_embed.proj.weight", kernel, "replicated")
    yield _tensor("model.visual.patch_embed.proj.bias", (d,), "replicated")
    yield _tensor("model.visual.pos_embed.weight", (tower.positions, d), "replicated")
    for i in range(tower.n_layers):
        block = f"model.visual.blocks.{i}"
        yield from _layer_norm(f"{block}.norm1", d)
        yield from _layer_norm(f"{block}.norm2", d)
        yield from _linear(f"{block}.attn.qkv", 3 * d, d, "column", tp)
        yield from _linear(f"{block}.attn.proj", d, d, "row", tp)
        yield from _linear(f"{block}.mlp.linear_fc1", f, d, "column", tp)
        yield from _linear(f"{block}.mlp.linear_fc2", d, f, "row", tp)
    merged = d * tower.spatial_merge_size**2
    mergers = [("model.visual.merger", d)]  # its norm over one patch; the DeepStack ones' over the merged patches
    mergers += [(f"model.visual.deepstack_merger_list.{i}", merged) for i in range(tower.deepstack_mergers)]
    for name, normed in mergers:
        yield from _layer_norm(f"{name}.norm", normed)
        yield from _linear(f"{name}.linear_fc1", merged, merged, "column", tp)
        yield from _linear(f"{name}.linear_fc2", tower.projector_width, merged, "row", tp)


def _llama4(tower: VisionTowerSpec, tp: int) -> Iterator[TowerTensor]:
    d, f, patch = tower.d_model, tower.d_ff, tower.patch_size
    prefix = "vision_model"
    yield _tensor(f"{prefix}.class_embedding", (d,), "replicated")
    yield _tensor(f"{prefix}.positional_embedding_vlm", (tower.positions, d), "replicated")
    unfold = (_shard(d, tp), tower.in_channels * patch * patch)
    yield _tensor(f"{prefix}.patch_embedding.linear.weight", unfold, "column")
    yield from _layer_norm(f"{prefix}.layernorm_pre", d)
    yield from _layer_norm(f"{prefix}.layernorm_post", d)
    for i in range(tower.n_layers):
        layer = f"{prefix}.model.layers.{i}"
        yield from _biased_block(f"{layer}.self_attn", "o_proj", f"{layer}.mlp", d, f, tp)
        yield from _layer_norm(f"{layer}.input_layernorm", d)
        yield from _layer_norm(f"{layer}.post_attention_layernorm", d)
    adapter, out = tower.adapter_width, tower.adapter_output
    yield _tensor(f"{prefix}.vision_adapter.mlp.fc1.weight", (_shard(adapter, tp), f), "column")
    yield _tensor(f"{prefix}.vision_adapter.mlp.fc2.weight", (out, _shard(adapter, tp)), "row")
    yield _tensor("multi_modal_projector.linear_1.weight", (_shard(tower.projector_width, tp), out), "column")


def _unbiased(name: str, out: int, inp: int, split: Split, tp: int) -> TowerTensor:
    """A linear layer without bias: column-parallel splits its rows, row-parallel its inputs."""
    if split == "column":
        return _tensor(f"{name}.weight", (_shard(out, tp), inp), "column")
    return _tensor(f"{name}.weight", (out, _shard(inp, tp)), "row")


def _pixtral(tower: VisionTowerSpec, tp: int) -> Iterator[TowerTensor]:
    d, f, patch = tower.d_model, tower.d_ff, tower.patch_size
    prefix = "model.vision_tower"
    yield _tensor(f"{prefix}.patch_conv.weight", (d, tower.in_channels, patch, patch), "replicated")
    yield _tensor(f"{prefix}.ln_pre.weight", (d,), "replicated")
    for i in range(tower.n_layers):
        layer = f"{prefix}.transformer.layers.{i}"
        yield _tensor(f"{layer}.attention_norm.weight", (d,), "replicated")
        yield _tensor(f"{layer}.ffn_norm.weight", (d,), "replicated")
        for projection in ("q_proj", "k_proj", "v_proj"):
            yield _unbiased(f"{layer}.attention.{projection}", d, d, "column", tp)
        yield _unbiased(f"{layer}.attention.o_proj", d, d, "row", tp)
        yield _unbiased(f"{layer}.feed_forward.gate_proj", f, d, "column", tp)
        yield _unbiased(f"{layer}.feed_forward.up_proj", f, d, "column", tp)
        yield _unbiased(f"{layer}.feed_forward.down_proj", d, f, "row", tp)
    projector = "model.multi_modal_projector"
    yield _tensor(f"{projector}.norm.weight", (d,), "replicated")
    yield _tensor(f"{projector}.patch_merger.merging_layer.weight", (d, d * tower.spatial_merge_size**2), "replicated")
    yield _unbiased(f"{projector}.linear_1", tower.projector_width, d, "column", tp)
    yield _unbiased(f"{projector}.linear_2", tower.projector_width, tower.projector_width, "row", tp)


def _gemma4(tower: VisionTowerSpec, tp: int) -> Iterator[TowerTensor]:
    d, f, patch = tower.d_model, tower.d_ff, tower.patch_size
    head_dim = tower.head_dim or d // tower.n_heads
    queries, keys = tower.n_heads * head_dim, (tower.n_kv_heads or tower.n_heads) * head_dim
    prefix = "model.vision_tower"
    yield _tensor(f"{prefix}.patch_embedder.position_embedding_table", (2, tower.positions, d), "replicated")
    yield _tensor(f"{prefix}.patch_embedder.input_proj.weight", (d, tower.in_channels * patch * patch), "replicated")
    for i in range(tower.n_layers):
        layer = f"{prefix}.encoder.layers.{i}"
        yield _tensor(f"{layer}.self_attn.q_proj.linear.weight", (queries, d), "replicated")
        yield _tensor(f"{layer}.self_attn.k_proj.linear.weight", (keys, d), "replicated")
        yield _tensor(f"{layer}.self_attn.v_proj.linear.weight", (keys, d), "replicated")
        yield _tensor(f"{layer}.self_attn.o_proj.linear.weight", (d, queries), "replicated")
        yield _tensor(f"{layer}.self_attn.q_norm.weight", (head_dim,), "replicated")
        yield _tensor(f"{layer}.self_attn.k_norm.weight", (head_dim,), "replicated")
        yield _tensor(f"{layer}.mlp.gate_proj.linear.weight", (f, d), "replicated")
        yield _tensor(f"{layer}.mlp.up_proj.linear.weight", (f, d), "replicated")
        yield _tensor(f"{layer}.mlp.down_proj.linear.weight", (d, f), "replicated")
        for norm in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                     "post_feedforward_layernorm"):  # fmt: skip
            yield _tensor(f"{layer}.{norm}.weight", (d,), "replicated")
    yield _tensor("model.embed_vision.embedding_projection.weight", (tower.projector_width, d), "replicated")


def _moonvit(tower: VisionTowerSpec, tp: int) -> Iterator[TowerTensor]:
    """Split over tp as vLLM's ``is_vit_use_data_parallel`` splits it: by heads where tp divides them, else whole on
    every rank (its fallback to data parallelism for the encoder, given the head count from 0.28 on; 0.15-0.24 pass
    none and fail to start at such a tp, which is not modelled)."""
    d, f, patch = tower.d_model, tower.d_ff, tower.patch_size
    tp = tp if tower.n_heads % tp == 0 else 1
    side = math.isqrt(tower.positions)  # the square grid core.vision_config reads
    merged = d * tower.spatial_merge_size**2
    prefix = "model.vision_tower"
    yield _tensor(f"{prefix}.patch_embed.proj.weight", (d, tower.in_channels, patch, patch), "replicated")
    yield _tensor(f"{prefix}.patch_embed.proj.bias", (d,), "replicated")
    yield _tensor(f"{prefix}.patch_embed.pos_emb.position_embeddings", (side, side, d), "replicated")
    for i in range(tower.n_layers):
        layer = f"{prefix}.layers.{i}"
        yield from _layer_norm(f"{layer}.norm1", d)
        yield from _layer_norm(f"{layer}.norm2", d)
        yield from _biased_block(f"{layer}.attn", "proj", f"{layer}.mlp", d, f, tp)
    yield from _layer_norm(f"{prefix}.final_layernorm", d)
    yield from _layer_norm("model.mm_projector.pre_norm", d)
    for name, out in (("in_proj", merged), ("out_proj", tower.projector_width)):
        yield _tensor(f"model.mm_projector.{name}.weight", (out, merged), "replicated")
        yield _tensor(f"model.mm_projector.{name}.bias", (out,), "replicated")
