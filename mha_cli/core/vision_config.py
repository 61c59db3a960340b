"""A multimodal model's vision tower read from config.json's ``vision_config`` (``core.vision_tower`` lists it).

Gemma 3 (SigLIP), Gemma 4, Qwen2.5-VL, Qwen3-VL (and its MoE), Qwen3.5 / Qwen3.6 (dense and MoE: Qwen3-VL's tower
without DeepStack mergers), Llama 4 and Mistral 3 (Pixtral): the tower's widths and depth, and the largest
image (or video) vLLM profiles, which the model's processor files set, outside config.json: their published values
are assumed and said. A count the config leaves out takes transformers' default, also said. Pure Python.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mha_cli.core.errors import BadInputError
from mha_cli.core.schemas import VisionTowerSpec

QWEN2_5_VL_MAX_PIXELS = 12_845_056
"""Qwen2.5-VL's published ``preprocessor_config.json`` ``max_pixels`` (3,584 x 3,584; the processor's own default
is lower): vLLM's largest image is the one of the most pixels the processor keeps (``qwen2_vl.py``
``get_image_size_with_most_features``). It lives outside config.json, so it is assumed."""
QWEN3_VL_MAX_PIXELS = 16_777_216
"""Qwen3-VL's published ``preprocessor_config.json`` ``size.longest_edge`` (4,096 x 4,096): its largest image.
Qwen3.5's processor is Qwen3-VL's (vLLM 0.32 ``qwen3_5.py``: ``Qwen3_5ProcessingInfo(Qwen3VLProcessingInfo)``) and
its published files ship the same sizes (a ~16 MP ``longest_edge``: ml-explore/mlx-swift-lm PR #398, measured on
Qwen3.6-27B; the 16,384-token encoder budget of engine log 702, a Qwen3.5-9B start-up, agrees)."""
QWEN3_VL_VIDEO_MAX_PIXELS = 25_165_824
"""Qwen3-VL's published ``video_preprocessor_config.json`` ``size.longest_edge`` (Qwen3.5-4B's too: a public copy
of that file, search index id 58496177140): vLLM profiles a video of two frames of half these pixels each
(``qwen3_vl.py`` ``get_max_video_tokens``)."""

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
                    "projector_output_dim": 4096}  # fmt: skip
"""transformers' ``Llama4VisionConfig`` defaults."""
_PIXTRAL_DEFAULTS = {"hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24, "num_attention_heads": 16,
                     "num_channels": 3, "image_size": 1024, "patch_size": 16}  # fmt: skip
"""transformers' ``PixtralVisionConfig`` defaults."""
_GEMMA4_DEFAULTS = {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 16, "num_attention_heads": 12,
                    "num_key_value_heads": 12, "head_dim": 64, "pooling_kernel_size": 3, "patch_size": 16,
                    "position_embedding_size": 10_240}  # fmt: skip
"""transformers' ``Gemma4VisionConfig`` defaults."""
_MOONVIT_DEFAULTS = {"hidden_size": 1152, "num_hidden_layers": 27, "num_attention_heads": 16, "intermediate_size": 4304,
                     "patch_size": 14, "pos_emb_height": 64, "pos_emb_width": 64}  # fmt: skip
"""transformers' ``Kimi_K25VisionConfig`` defaults (5.25); the hub's remote-code configs spell the widths ``vt_*`` and
the position grid ``init_pos_emb_*``, read as well."""
MOONVIT_TOKENS = 16_384
"""The decoder tokens taken to stand for Kimi-K2.5's largest media item, vLLM's default encoder budget: vLLM profiles
a video chunk or an image at the processor's largest size (``kimi_k25.py`` ``get_dummy_mm_items``), which its media
processor files set, outside config.json; the encoder profiling is not priced for MoonViT, so no figure depends on
it but the tokens an item is said to take."""
GEMMA4_SOFT_TOKENS = 280
"""Decoder tokens of Gemma 4's largest image when vision_config has no ``default_output_length`` (vLLM 0.34
``gemma4_mm.py`` ``get_mm_max_tokens_per_item`` reads that field; Google's published configs set 280)."""
LLAMA4_MAX_TILES = 16
"""Llama 4's image processor ``max_patches``: vLLM's largest image is 16 tiles tall and one wide, plus the global
tile (``mllama4.py`` ``get_image_size_with_most_features``)."""
TOWER_FAMILIES = {"gemma3": "siglip", "gemma4": "gemma4", "qwen2_5_vl": "qwen2_5_vl", "qwen3_vl": "qwen3_vl", "qwen3_vl_moe": "qwen3_vl",
                  "qwen3_5": "qwen3_vl", "qwen3_5_moe": "qwen3_vl", "llama4": "llama4", "mistral3": "pixtral",
                  "kimi_k25": "moonvit"}  # fmt: skip
"""The outer config's ``model_type`` -> the tower ``read_vision_tower`` reads for it."""
NO_DEEPSTACK = ("qwen3_5", "qwen3_5_moe")
"""Qwen3.5 / Qwen3.6: Qwen3-VL's tower whose DeepStack mergers transformers never builds (5.24
``Qwen3_5VisionModel.__init__`` deletes ``deepstack_merger_list``; ``Qwen3_5VisionConfig`` drops the field)."""


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
                "llama4": _LLAMA4_DEFAULTS, "pixtral": _PIXTRAL_DEFAULTS, "gemma4": _GEMMA4_DEFAULTS,
                "moonvit": _MOONVIT_DEFAULTS}[kind]  # fmt: skip

    def value(*keys: str) -> int:
        for key in keys:
            if vision.get(key) is not None:
                found = vision[key]
                if not isinstance(found, int) or isinstance(found, bool) or found <= 0:
                    raise BadInputError(f"{origin}: vision_config.{key} must be a positive integer, got {found!r}")
                return found
        assumed.append(f"vision_config.{keys[0]} absent: {defaults[keys[0]]}, transformers' default")
        return defaults[keys[0]]

    build = {"siglip": _siglip_tower, "llama4": _llama4_tower, "pixtral": _pixtral_tower, "gemma4": _gemma4_tower,
             "moonvit": _moonvit_tower}  # fmt: skip
    build = build.get(kind, _qwen_tower)
    return build(kind, config, vision, text_width, value, assumed), assumed


Value = Callable[..., int]
"""``read_vision_tower``'s reader of one vision_config count: its first key present, else transformers' default."""


def _vit_fields(value: Value, image: int, patch: int) -> dict[str, int]:
    """The fields a ViT tower (SigLIP, Llama 4's, Pixtral) states under Hugging Face's usual names."""
    return {
        "d_model": value("hidden_size"), "n_layers": value("num_hidden_layers"),
        "n_heads": value("num_attention_heads"), "d_ff": value("intermediate_size"), "patch_size": patch,
        "in_channels": value("num_channels"), "image_size": image,
    }  # fmt: skip


def _siglip_tower(
    kind: str, config: dict[str, Any], vision: dict[str, Any], text_width: int, value: Value, assumed: list[str]
) -> VisionTowerSpec:
    """Gemma 3's SigLIP: one image of mm_tokens_per_image decoder tokens from (image / patch)^2 patches."""
    if vision.get("vision_use_head", True):  # transformers' default builds one; vLLM's Gemma 3 never does
        assumed.append(
            "vision_config.vision_use_head: SigLIP's pooling head not counted (vLLM's Gemma 3 builds none:"
            " SiglipVisionModel's use_head=False)"
        )
    image, patch = value("image_size"), value("patch_size")
    tokens = config.get("mm_tokens_per_image") or 256
    if not config.get("mm_tokens_per_image"):
        assumed.append("mm_tokens_per_image absent: 256, transformers' Gemma3Config default")
    return VisionTowerSpec(
        kind="siglip", **_vit_fields(value, image, patch), projector_width=text_width,
        tokens_per_image=int(tokens), patches_per_image=(image // patch) ** 2,
    )  # fmt: skip


def _qwen_tower(
    kind: str, config: dict[str, Any], vision: dict[str, Any], text_width: int, value: Value, assumed: list[str]
) -> VisionTowerSpec:
    """Qwen2.5-VL's and Qwen3-VL's ViTs: the largest image their published processor keeps, merge^2 patches a
    token; Qwen3-VL's learned positions, DeepStack mergers and its two-frame video."""
    patch, merge = value("patch_size"), value("spatial_merge_size")
    pixels = QWEN2_5_VL_MAX_PIXELS if kind == "qwen2_5_vl" else QWEN3_VL_MAX_PIXELS
    tokens = pixels // (patch * merge) ** 2
    assumed.append(
        f"vision: the largest image is {pixels:,} pixels ({tokens:,} tokens), the largest size of the model's"
        " published preprocessor_config.json (not in config.json)"
    )
    qwen3 = {}
    if kind == "qwen3_vl":
        stacked = _deepstack_layers(str(config.get("model_type")), vision, assumed)
        video = QWEN3_VL_VIDEO_MAX_PIXELS // value("temporal_patch_size") // (patch * merge) ** 2
        assumed.append(
            f"vision: the largest video is 2 frames of {QWEN3_VL_VIDEO_MAX_PIXELS // 2:,} pixels ({video:,}"
            " tokens), from the model's published video_preprocessor_config.json (Qwen3-VL's size)"
        )
        qwen3 = {"positions": value("num_position_embeddings"), "deepstack_mergers": len(stacked),
                 "video_tokens": video}  # fmt: skip
    return VisionTowerSpec(
        kind=kind, d_model=value("hidden_size"), n_layers=value("depth"), n_heads=value("num_heads"),
        d_ff=value("intermediate_size"), patch_size=patch, in_channels=value("in_channels", "in_chans"),
        temporal_patch_size=value("temporal_patch_size"), spatial_merge_size=merge,
        projector_width=value("out_hidden_size"), tokens_per_image=tokens, patches_per_image=tokens * merge**2,
        **qwen3,
    )  # fmt: skip


def _deepstack_layers(model_type: str, vision: dict[str, Any], assumed: list[str]) -> list[Any]:
    """The encoder layers whose outputs a DeepStack merger feeds to the decoder: none for Qwen3.5 / Qwen3.6,
    whatever the config lists (said when it lists some)."""
    stacked = vision.get("deepstack_visual_indexes") or []
    if not isinstance(stacked, list):
        raise BadInputError("vision_config.deepstack_visual_indexes must be a list of layers")
    if model_type in NO_DEEPSTACK and stacked:
        assumed.append(
            f"vision_config.deepstack_visual_indexes {stacked} not counted: transformers' Qwen3.5 tower builds no"
            " DeepStack mergers (vLLM 0.32's Qwen3_VisionTransformer would build them)"
        )
    return [] if model_type in NO_DEEPSTACK else stacked


def _llama4_tower(
    kind: str, config: dict[str, Any], vision: dict[str, Any], text_width: int, value: Value, assumed: list[str]
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
        kind="llama4", **_vit_fields(value, image, patch), projector_width=text_width, tokens_per_image=tokens,
        patches_per_image=tiles * (per_tile + 1), adapter_width=value("projector_input_dim"),
        adapter_output=value("projector_output_dim"), positions=per_tile + 1,
    )  # fmt: skip


def _pixtral_tower(
    kind: str, config: dict[str, Any], vision: dict[str, Any], text_width: int, value: Value, assumed: list[str]
) -> VisionTowerSpec:
    """Mistral 3's Pixtral tower: the largest image ``image_size`` pixels a side (vLLM takes the processor's
    ``size.longest_edge``, outside config.json: assumed to be vision_config's ``image_size``, and said), its
    (side / patch)^2 patches merged ``spatial_merge_size``^2 a decoder token (``mistral3.py``
    ``Mistral3HFEncoderInfo.get_patch_grid_size``; the [IMG_BREAK] tokens between rows take no embedding)."""
    layer = config.get("vision_feature_layer", -1)
    if layer != -1:  # vLLM builds the tower only to that layer (init_vision_tower_for_mistral3), transformers whole
        raise BadInputError(f"vision_feature_layer {layer!r}: Mistral 3's tower is listed for -1 (every layer)")
    if config.get("multimodal_projector_bias"):
        raise BadInputError("multimodal_projector_bias is set: Mistral 3's projector is listed without bias")
    merge = config.get("spatial_merge_size", 2)
    if not isinstance(merge, int) or isinstance(merge, bool) or merge <= 0:
        raise BadInputError(f"spatial_merge_size must be a positive integer, got {merge!r}")
    image, patch = value("image_size"), value("patch_size")
    side = -(-image // (patch * merge))  # vLLM's ncols = (width - 1) // (patch x merge) + 1
    assumed.append(
        f"vision: the largest image is {image:,} pixels a side ({side * side:,} tokens), vision_config.image_size as"
        " the processor's size.longest_edge (not in config.json)"
    )
    return VisionTowerSpec(
        kind="pixtral", **_vit_fields(value, image, patch), spatial_merge_size=merge, projector_width=text_width,
        tokens_per_image=side * side, patches_per_image=side * side * merge * merge,
    )  # fmt: skip


def _gemma4_tower(
    kind: str, config: dict[str, Any], vision: dict[str, Any], text_width: int, value: Value, assumed: list[str]
) -> VisionTowerSpec:
    """Gemma 4's tower: patches of ``patch_size`` pixels, ``pooling_kernel_size``^2 of them pooled into one decoder
    token, ``default_output_length`` tokens for the largest image."""
    tokens = vision.get("default_output_length")
    if tokens is None:
        tokens = GEMMA4_SOFT_TOKENS
        assumed.append(f"vision_config.default_output_length absent: {tokens}, Google's published value")
    elif not isinstance(tokens, int) or isinstance(tokens, bool) or tokens <= 0:
        raise BadInputError(f"vision_config.default_output_length must be a positive integer, got {tokens!r}")
    assumed.append(
        "vision: vLLM's encoder profiling of Gemma 4 at start-up is not priced (it sizes the encoder's chunks from"
        " the memory then free: gemma4_mm.py _encoder_chunk), only the tower's weights"
    )
    return VisionTowerSpec(
        kind="gemma4", d_model=value("hidden_size"), n_layers=value("num_hidden_layers"),
        n_heads=value("num_attention_heads"), head_dim=value("head_dim"), n_kv_heads=value("num_key_value_heads"),
        d_ff=value("intermediate_size"), patch_size=value("patch_size"), positions=value("position_embedding_size"),
        projector_width=text_width, tokens_per_image=tokens,
        patches_per_image=tokens * value("pooling_kernel_size") ** 2,
        audio_tower=isinstance(config.get("audio_config"), dict),
    )  # fmt: skip


def _moonvit_tower(
    kind: str, config: dict[str, Any], vision: dict[str, Any], text_width: int, value: Value, assumed: list[str]
) -> VisionTowerSpec:
    """Kimi-K2.5's MoonViT (transformers 5.25 ``Kimi_K25VisionModel``, vLLM ``kimi_k25_vit.py``
    ``MoonViT3dPretrainedModel``): a conv patch embedding with bias, a square grid of learned positions, pre-LN
    blocks of biased q/k/v/out and a plain fc1/fc2 MLP, a final LayerNorm; the projector ``patchmerger``: a LayerNorm
    over one patch, then two biased layers from ``merge^2`` patches to the same width and to the decoder's
    (``KimiK25MultiModalProjector``; vLLM's ``patchmergerv2``, unbiased with an RMSNorm after, is refused)."""
    projector = vision.get("mm_projector_type", "patchmerger")
    if projector != "patchmerger":
        raise BadInputError(
            f"vision_config.mm_projector_type {projector!r}: Kimi-K2.5's tower is listed with its 'patchmerger'"
            " projector only"
        )
    merge = vision.get("merge_kernel_size", [2, 2])
    if not (isinstance(merge, list) and len(merge) == 2 and merge[0] == merge[1] and isinstance(merge[0], int)
            and not isinstance(merge[0], bool) and merge[0] > 0):  # fmt: skip
        raise BadInputError(f"vision_config.merge_kernel_size must be two equal positive integers, got {merge!r}")
    height, width = value("pos_emb_height", "init_pos_emb_height"), value("pos_emb_width", "init_pos_emb_width")
    if height != width:
        raise BadInputError(f"vision_config's position grid {height} x {width}: MoonViT's is listed square")
    patches = MOONVIT_TOKENS * merge[0] ** 2
    assumed.append(
        "vision: the encoder profiling an engine runs at start-up for Kimi-K2.5's tower (vLLM's: a video chunk or an"
        " image at its processor's largest size) is not priced, only the tower's and the projector's weights"
    )
    return VisionTowerSpec(
        kind="moonvit", d_model=value("hidden_size", "vt_hidden_size"),
        n_layers=value("num_hidden_layers", "vt_num_hidden_layers"),
        n_heads=value("num_attention_heads", "vt_num_attention_heads"),
        d_ff=value("intermediate_size", "vt_intermediate_size"), patch_size=value("patch_size"),
        positions=height * width, spatial_merge_size=merge[0], projector_width=text_width,
        tokens_per_image=MOONVIT_TOKENS, patches_per_image=patches,
    )  # fmt: skip
