"""A multimodal model's vision tower: read from config.json's ``vision_config``, listed tensor by tensor.

Two encoders are read, each with its projector into the decoder, named as transformers 5 names the
weights and split over tensor-parallel ranks as vLLM splits them (its default ``mm_encoder_tp_mode="weights"``):

- ``siglip`` (Gemma 3, ``Gemma3ForConditionalGeneration``; vLLM ``model_executor/models/siglip.py`` and
  ``gemma3_mm.py``): a conv patch embedding and learned positions (replicated), ``n_layers`` pre-LN blocks of
  q/k/v/out projections and a plain fc1/fc2 MLP, all with biases (q, k, v, fc1 split by columns, out and fc2 by
  rows, their biases replicated), a final LayerNorm; the projector's RMSNorm and its (vision width, text width)
  matrix, replicated (``Gemma3MultiModalProjector``: a bare ``nn.Parameter``).
- ``qwen2_5_vl`` (``Qwen2_5_VLForConditionalGeneration``; vLLM ``qwen2_5_vl.py``): a Conv3d patch embedding without
  bias (replicated), ``n_layers`` blocks of two RMSNorms, a fused qkv and a proj with biases, a gated MLP with
  biases (qkv, gate, up split by columns, proj and down by rows), and the patch merger: an RMSNorm, then an MLP from
  ``merge^2`` patches to ``merge^2`` patches' width (split by columns) to the decoder's width (by rows).
- ``qwen3_vl`` (Qwen3-VL and Qwen3-VL-MoE, ``Qwen3VLForConditionalGeneration``; vLLM ``qwen3_vl.py``): a Conv3d
  patch embedding with bias and learned positions (replicated), ``n_layers`` blocks of two LayerNorms, a fused qkv
  and a proj, a plain linear_fc1/linear_fc2 MLP, all biased (split as Qwen2.5-VL's), the merger (a LayerNorm over one
  patch, then Qwen2.5-VL's two layers) and one DeepStack merger per ``deepstack_visual_indexes`` entry (its
  LayerNorm over the ``merge^2`` patches).
- ``llama4`` (Llama 4 Scout and Maverick, ``Llama4ForConditionalGeneration``; vLLM ``mllama4.py``): an unfold patch
  embedding without bias (split by columns), a class embedding, learned positions and two LayerNorms (replicated),
  ``n_layers`` blocks of LayerNorms, biased q/k/v/o and a plain fc1/fc2 MLP (split as SigLIP's), the pixel-shuffle
  adapter's two unbiased layers (columns, then rows) and the projector to the decoder's width (split by columns).

A width tp does not divide is rounded up on each rank (Qwen2.5-VL-7B's 3,420-wide MLP over 8 ranks). The tower is
priced unquantised whatever the weight format (``core.weight_bytes`` prices only the decoder's linear layers in a
format): quantised checkpoints name it in their ignore lists; vLLM's online ``--quantization fp8`` would quantise its
linear layers too, which is not modelled. It sits with the input side, on the first pipeline stage. Other multimodal
families' towers are not listed: the importer names them among what the weights leave out. Pure Python.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from mha_cli.core.errors import BadInputError
from mha_cli.core.schemas import VisionTowerSpec

if TYPE_CHECKING:
    from mha_cli.core.inventory import Split, Tensor

QWEN2_5_VL_MAX_PIXELS = 12_845_056
"""Qwen2.5-VL's published ``preprocessor_config.json`` ``max_pixels`` (3,584 x 3,584; the processor's own default
is lower): vLLM's largest image is the one of the most pixels the processor keeps (``qwen2_vl.py``
``get_image_size_with_most_features``). It lives outside config.json, so it is assumed."""
QWEN3_VL_MAX_PIXELS = 16_777_216
"""Qwen3-VL's published ``preprocessor_config.json`` ``size.longest_edge`` (4,096 x 4,096): its largest image."""
QWEN3_VL_VIDEO_MAX_PIXELS = 25_165_824
"""Qwen3-VL's published ``video_preprocessor_config.json`` ``size.longest_edge``: vLLM profiles a video of two
frames of half these pixels each (``qwen3_vl.py`` ``get_max_video_tokens``)."""

_SIGLIP_DEFAULTS = {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12,
                    "num_attention_heads": 12, "num_channels": 3, "image_size": 224, "patch_size": 16}  # fmt: skip
"""transformers' ``SiglipVisionConfig`` defaults."""
_QWEN2_5_VL_DEFAULTS = {"depth": 32, "hidden_size": 3584, "intermediate_size": 3420, "num_heads": 16,
                        "in_channels": 3, "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2,
                        "out_hidden_size": 3584}  # fmt: skip
"""transformers' ``Qwen2_5_VLVisionConfig`` defaults."""
_QWEN3_VL_DEFAULTS = {"depth": 27, "hidden_size": 1152, "intermediate_size": 4304, "num_heads": 16, "in_channels": 3,
                      "patch_size": 16, "spatial_merge_size": 2, "temporal_patch_size": 2, "out_hidden_size": 3584,
                      "num_position_embeddings": 2304}  # fmt: skip
"""transformers' ``Qwen3VLVisionConfig`` defaults."""
_LLAMA4_DEFAULTS = {"hidden_size": 768, "num_hidden_layers": 34, "num_attention_heads": 16, "intermediate_size": 5632,
                    "num_channels": 3, "image_size": 448, "patch_size": 14, "projector_input_dim": 4096,
                    "projector_output_dim": 4096, "vision_output_dim": 7680}  # fmt: skip
"""transformers' ``Llama4VisionConfig`` defaults."""
LLAMA4_MAX_TILES = 16
"""Llama 4's image processor ``max_patches``: vLLM's largest image is 16 tiles tall and one wide, plus the global
tile (``mllama4.py`` ``get_image_size_with_most_features``)."""
TOWER_FAMILIES = {"gemma3": "siglip", "qwen2_5_vl": "qwen2_5_vl", "qwen3_vl": "qwen3_vl", "qwen3_vl_moe": "qwen3_vl",
                  "llama4": "llama4"}  # fmt: skip
"""The outer config's ``model_type`` -> the tower ``read_vision_tower`` reads for it."""


def vision_tower_listed(config: dict[str, Any]) -> bool:
    """Whether ``config`` (the outer config.json) has a vision tower of a family listed here."""
    return str(config.get("model_type")) in TOWER_FAMILIES and isinstance(config.get("vision_config"), dict)


def read_vision_tower(config: dict[str, Any], text_width: int, origin: str) -> tuple[VisionTowerSpec | None, list[str]]:
    """The tower of a multimodal ``config`` (the outer config.json, ``vision_config`` inside it) whose decoder is
    ``text_width`` wide, and the defaults assumed; (None, []) for a family whose tower is not listed here."""
    kind = TOWER_FAMILIES.get(str(config.get("model_type")))
    vision = config.get("vision_config")
    if kind is None or not isinstance(vision, dict):
        return None, []
    assumed: list[str] = []
    defaults = {"siglip": _SIGLIP_DEFAULTS, "qwen2_5_vl": _QWEN2_5_VL_DEFAULTS, "qwen3_vl": _QWEN3_VL_DEFAULTS,
                "llama4": _LLAMA4_DEFAULTS}[kind]  # fmt: skip

    def value(*keys: str) -> int:
        for key in keys:
            if vision.get(key) is not None:
                found = vision[key]
                if not isinstance(found, int) or isinstance(found, bool) or found <= 0:
                    raise BadInputError(f"{origin}: vision_config.{key} must be a positive integer, got {found!r}")
                return found
        assumed.append(f"vision_config.{keys[0]} absent: {defaults[keys[0]]}, transformers' default")
        return defaults[keys[0]]

    if kind == "siglip":
        if vision.get("vision_use_head", True):  # transformers' default builds one; vLLM's Gemma 3 never does
            assumed.append(
                "vision_config.vision_use_head: SigLIP's pooling head not counted (vLLM's Gemma 3 builds none:"
                " SiglipVisionModel's use_head=False)"
            )
        image, patch = value("image_size"), value("patch_size")
        tokens = config.get("mm_tokens_per_image") or 256
        if not config.get("mm_tokens_per_image"):
            assumed.append("mm_tokens_per_image absent: 256, transformers' Gemma3Config default")
        spec = VisionTowerSpec(
            kind=kind, d_model=value("hidden_size"), n_layers=value("num_hidden_layers"),
            n_heads=value("num_attention_heads"), d_ff=value("intermediate_size"), patch_size=patch,
            in_channels=value("num_channels"), image_size=image, projector_width=text_width,
            tokens_per_image=int(tokens), patches_per_image=(image // patch) ** 2,
        )  # fmt: skip
    elif kind == "llama4":
        spec = _llama4_tower(vision, text_width, value, assumed)
    else:
        patch, merge = value("patch_size"), value("spatial_merge_size")
        pixels = QWEN2_5_VL_MAX_PIXELS if kind == "qwen2_5_vl" else QWEN3_VL_MAX_PIXELS
        tokens = pixels // (patch * merge) ** 2
        assumed.append(
            f"vision: the largest image is {pixels:,} pixels ({tokens:,} tokens), the largest size of the model's"
            " published preprocessor_config.json (not in config.json)"
        )
        qwen3 = {}
        if kind == "qwen3_vl":
            stacked = vision.get("deepstack_visual_indexes") or []
            if not isinstance(stacked, list):
                raise BadInputError(f"{origin}: vision_config.deepstack_visual_indexes must be a list of layers")
            video = QWEN3_VL_VIDEO_MAX_PIXELS // value("temporal_patch_size") // (patch * merge) ** 2
            assumed.append(
                f"vision: the largest video is 2 frames of {QWEN3_VL_VIDEO_MAX_PIXELS // 2:,} pixels ({video:,}"
                " tokens), from Qwen3-VL's published video_preprocessor_config.json"
            )
            qwen3 = {"positions": value("num_position_embeddings"), "deepstack_mergers": len(stacked),
                     "video_tokens": video}  # fmt: skip
        spec = VisionTowerSpec(
            kind=kind, d_model=value("hidden_size"), n_layers=value("depth"), n_heads=value("num_heads"),
            d_ff=value("intermediate_size"), patch_size=patch, in_channels=value("in_channels", "in_chans"),
            temporal_patch_size=value("temporal_patch_size"), spatial_merge_size=merge,
            projector_width=value("out_hidden_size"), tokens_per_image=tokens, patches_per_image=tokens * merge**2,
            **qwen3,
        )  # fmt: skip
    return spec, assumed


def _llama4_tower(
    vision: dict[str, Any], text_width: int, value: Callable[..., int], assumed: list[str]
) -> VisionTowerSpec:
    """Llama 4's tower: tiles of image_size pixels, each of (image / patch)^2 patches and a class token,
    pixel-shuffled ``1 / ratio^2`` patches to a decoder token."""
    if vision.get("multi_modal_projector_bias"):
        raise BadInputError("vision_config.multi_modal_projector_bias is set: Llama 4's adapter is listed without bias")
    ratio = vision.get("pixel_shuffle_ratio", 0.5)
    if ratio not in (0.5, 0.25):
        raise BadInputError(f"vision_config.pixel_shuffle_ratio {ratio!r}: Llama 4's tower is listed for 0.5 or 0.25")
    image, patch = value("image_size"), value("patch_size")
    per_tile = (image // patch) ** 2
    tiles = LLAMA4_MAX_TILES + 1  # and the global tile
    tokens = tiles * int(per_tile * ratio**2)
    assumed.append(
        f"vision: the largest image is {LLAMA4_MAX_TILES} tiles and the global one ({tokens:,} tokens), Llama 4's"
        " image processor max_patches (not in config.json)"
    )
    return VisionTowerSpec(
        kind="llama4", d_model=value("hidden_size"), n_layers=value("num_hidden_layers"),
        n_heads=value("num_attention_heads"), d_ff=value("intermediate_size"), patch_size=patch,
        in_channels=value("num_channels"), image_size=image, projector_width=text_width, tokens_per_image=tokens,
        patches_per_image=tiles * (per_tile + 1), adapter_width=value("projector_input_dim"),
        adapter_output=value("projector_output_dim"), positions=per_tile + 1,
    )  # fmt: skip


def tower_params(tower: VisionTowerSpec, tp: int = 1) -> int:
    """Parameters of the tower and its projector one rank of ``tp`` holds."""
    return sum(t.numel for t in tower_tensors(tower, tp))


def tower_tensors(tower: VisionTowerSpec, tp: int = 1) -> list[Tensor]:
    """Every weight of the tower and its projector as one rank of ``tp`` holds it, transformers' names."""
    listing = {"siglip": _siglip, "qwen2_5_vl": _qwen2_5_vl, "qwen3_vl": _qwen3_vl, "llama4": _llama4}[tower.kind]
    return list(listing(tower, tp))


def _tensor(name: str, shape: tuple[int, ...], split: Split) -> Tensor:
    from mha_cli.core.inventory import Tensor  # the inventory imports this module

    return Tensor(name, shape, "vision", split, None)


def _shard(width: int, tp: int) -> int:
    """A column- or row-parallel width on one rank of ``tp``, rounded up."""
    return -(-width // tp)


def _linear(name: str, out: int, inp: int, split: Split, tp: int) -> Iterator[Tensor]:
    """A biased linear layer: column-parallel splits its rows and bias, row-parallel its inputs (bias whole)."""
    if split == "column":
        yield _tensor(f"{name}.weight", (_shard(out, tp), inp), "column")
        yield _tensor(f"{name}.bias", (_shard(out, tp),), "column")
    else:
        yield _tensor(f"{name}.weight", (out, _shard(inp, tp)), "row")
        yield _tensor(f"{name}.bias", (out,), "replicated")


def _layer_norm(name: str, width: int) -> Iterator[Tensor]:
    yield _tensor(f"{name}.weight", (width,), "replicated")
    yield _tensor(f"{name}.bias", (width,), "replicated")


def _siglip(tower: VisionTowerSpec, tp: int) -> Iterator[Tensor]:
    d, f, patch = tower.d_model, tower.d_ff, tower.patch_size
    prefix = "model.vision_tower"
    yield _tensor(f"{prefix}.embeddings.patch_embedding.weight", (d, tower.in_channels, patch, patch), "replicated")
    yield _tensor(f"{prefix}.embeddings.patch_embedding.bias", (d,), "replicated")
    yield _tensor(f"{prefix}.embeddings.position_embedding.weight", (tower.patches_per_image, d), "replicated")
    for i in range(tower.n_layers):
        layer = f"{prefix}.encoder.layers.{i}"
        yield from _layer_norm(f"{layer}.layer_norm1", d)
        for projection in ("q_proj", "k_proj", "v_proj"):
            yield from _linear(f"{layer}.self_attn.{projection}", d, d, "column", tp)
        yield from _linear(f"{layer}.self_attn.out_proj", d, d, "row", tp)
        yield from _layer_norm(f"{layer}.layer_norm2", d)
        yield from _linear(f"{layer}.mlp.fc1", f, d, "column", tp)
        yield from _linear(f"{layer}.mlp.fc2", d, f, "row", tp)
    yield from _layer_norm(f"{prefix}.post_layernorm", d)
    yield _tensor("model.multi_modal_projector.mm_input_projection_weight", (d, tower.projector_width), "replicated")
    yield _tensor("model.multi_modal_projector.mm_soft_emb_norm.weight", (d,), "replicated")


def _qwen2_5_vl(tower: VisionTowerSpec, tp: int) -> Iterator[Tensor]:
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


def _qwen3_vl(tower: VisionTowerSpec, tp: int) -> Iterator[Tensor]:
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


def _llama4(tower: VisionTowerSpec, tp: int) -> Iterator[Tensor]:
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
        for projection in ("q_proj", "k_proj", "v_proj"):
            yield from _linear(f"{layer}.self_attn.{projection}", d, d, "column", tp)
        yield from _linear(f"{layer}.self_attn.o_proj", d, d, "row", tp)
        yield from _linear(f"{layer}.mlp.fc1", f, d, "column", tp)
        yield from _linear(f"{layer}.mlp.fc2", d, f, "row", tp)
        yield from _layer_norm(f"{layer}.input_layernorm", d)
        yield from _layer_norm(f"{layer}.post_attention_layernorm", d)
    adapter, out = tower.adapter_width, tower.adapter_output
    yield _tensor(f"{prefix}.vision_adapter.mlp.fc1.weight", (_shard(adapter, tp), f), "column")
    yield _tensor(f"{prefix}.vision_adapter.mlp.fc2.weight", (out, _shard(adapter, tp)), "row")
    yield _tensor("multi_modal_projector.linear_1.weight", (_shard(tower.projector_width, tp), out), "column")
