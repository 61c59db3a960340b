"""Vision towers (``core.vision_tower``): hand counts of small towers, their split over tensor-parallel ranks, and
every tensor's name and shape against transformers' own model built from the same config.json on the meta device
(Gemma 3's SigLIP and projector, Gemma 4's tower and embedder, Qwen2.5-VL's ViT and merger, Qwen3-VL's ViT and its DeepStack mergers, Qwen3.5's
and Qwen3.6's ViT without them, Llama 4's tiled ViT, adapter and projector, Mistral 3's Pixtral and patch merger, Kimi-K2.5's MoonViT). A family whose tower is not listed is
named."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest

from mha_cli.core.hf_import import import_hf_config
from mha_cli.core.params import count_params, params_per_rank
from mha_cli.core.vision_config import read_vision_tower
from mha_cli.core.vision_tower import tower_params, tower_tensors
from tests.benchmark_modules import load_benchmark

ROOT = Path(__file__).resolve().parents[1]
GEMMA3 = ROOT / "tests" / "fixtures" / "hf_configs" / "gemma-3-4b-it.json"
GEMMA4 = ROOT / "tests" / "fixtures" / "hf_configs" / "gemma-4-26b-a4b.json"
QWEN2_5_VL = ROOT / "tests" / "fixtures" / "vision" / "qwen2.5-vl-7b-instruct.json"
QWEN3_VL = ROOT / "tests" / "fixtures" / "vision" / "qwen3-vl-8b-instruct.json"
QWEN3_VL_MOE = ROOT / "tests" / "fixtures" / "vision" / "qwen3-vl-30b-a3b-instruct.json"
LLAMA4 = ROOT / "tests" / "fixtures" / "vision" / "llama-4-scout-17b-16e.json"
MISTRAL3 = ROOT / "tests" / "fixtures" / "vision" / "mistral-small-3.2-24b-instruct.json"
QWEN3_5 = ROOT / "tests" / "fixtures" / "hf_configs" / "qwen3.5-4b.json"
QWEN3_6 = ROOT / "tests" / "fixtures" / "hf_configs" / "qwen3.6-27b.json"
SMALL = {"hidden_size": 8, "intermediate_size": 16, "num_attention_heads": 2, "num_heads": 2, "depth": 2,
         "num_hidden_layers": 2, "patch_size": 14, "image_size": 28, "out_hidden_size": 12}  # fmt: skip


def _tower(model_type: str, **vision):
    spec, _ = read_vision_tower({"model_type": model_type, "vision_config": {**SMALL, **vision}}, 12, "test")
    assert spec is not None
    return spec


def test_siglip_hand_count():
    """8 wide, 2 layers, MLP 16, 28-pixel images of 14-pixel patches, a 12-wide decoder."""
    patch = 8 * 3 * 14 * 14 + 8  # conv weight and bias
    positions = (28 // 14) ** 2 * 8
    layer = 2 * 8 + 4 * (8 * 8 + 8) + 2 * 8 + (8 * 16 + 16) + (16 * 8 + 8)  # norm, q k v o, norm, fc1, fc2
    post_norm = 2 * 8
    projector = 8 * 12 + 8  # mm_input_projection_weight, mm_soft_emb_norm
    assert tower_params(_tower("gemma3")) == patch + positions + 2 * layer + post_norm + projector == 6064
    # tp 2: q, k, v, fc1 (weights and biases) and the out and fc2 weights halved; the rest whole
    split = 2 * (3 * (8 * 8 + 8) + 8 * 8 + (8 * 16 + 16) + 16 * 8)
    assert tower_params(_tower("gemma3"), 2) == 6064 - split // 2 == 5512


def test_gemma4_hand_count():
    """8 wide, 2 layers of 2 heads of 4, gated MLP 16, 14-pixel patches, 5 positions per axis, a 12-wide decoder;
    every rank holds it whole (vLLM replicates transformers' tower)."""
    tower = _tower("gemma4", head_dim=4, num_key_value_heads=2, position_embedding_size=5, default_output_length=7)
    embedder = 2 * 5 * 8 + 8 * 3 * 14 * 14  # a position table per axis, the unbiased patch projection
    layer = 4 * 8 * 8 + 2 * 4 + 3 * 16 * 8 + 4 * 8  # q k v o, q and k norms over a head, gate up down, four norms
    projector = 12 * 8  # embed_vision's matrix; its norm has no weight
    assert tower_params(tower) == embedder + 2 * layer + projector == 6240
    assert tower_params(tower, 4) == 6240
    assert (tower.tokens_per_image, tower.patches_per_image) == (7, 7 * 3 * 3)  # 3 x 3 patches pooled a token


def test_gemma4_tower_heads_need_not_tile_its_width():
    """transformers builds q (heads x head_dim) and k, v (KV heads x head_dim) whatever the width: 3 heads of 5 and
    one KV head over a width of 8; an absent default_output_length is Google's 280, said."""
    tower = _tower("gemma4", num_attention_heads=3, head_dim=5, num_key_value_heads=1, position_embedding_size=5)
    layer = (15 * 8 + 2 * 5 * 8 + 8 * 15) + 2 * 5 + 3 * 16 * 8 + 4 * 8  # q k v o, q and k norms, MLP, norms
    assert tower_params(tower) == 2 * 5 * 8 + 8 * 3 * 14 * 14 + 2 * layer + 12 * 8 == 6372
    spec, assumed = read_vision_tower({"model_type": "gemma4", "vision_config": SMALL}, 12, "test")
    assert spec is not None and spec.tokens_per_image == 280
    assert any("default_output_length absent: 280" in line for line in assumed)
    assert any("encoder profiling of Gemma 4 at start-up is not priced" in line for line in assumed)


def test_qwen2_5_vl_hand_count():
    """8 wide, 2 blocks, gated MLP 16, 2-pixel patches over 2 frames, 2 x 2 patches merged, a 12-wide decoder."""
    tower = _tower("qwen2_5_vl", patch_size=2, temporal_patch_size=2, spatial_merge_size=2)
    patch = 8 * 3 * 2 * 2 * 2  # Conv3d, no bias
    block = 2 * 8 + (24 * 8 + 24) + (8 * 8 + 8) + 2 * (16 * 8 + 16) + (16 * 8 + 8)  # norms, qkv, proj, gate up down
    merger = 8 + (32 * 32 + 32) + (12 * 32 + 12)  # ln_q, 4 patches' width to itself, then to the decoder's
    assert tower_params(tower) == patch + 2 * block + merger == 3108
    assert (
        tower.tokens_per_image == 12_845_056 // (2 * 2) ** 2 and tower.patches_per_image == 4 * tower.tokens_per_image
    )


def test_qwen3_vl_hand_count():
    """Qwen2.5-VL's small tower with a biased patch embedding, 4 learned positions, LayerNorms, a plain MLP and one
    DeepStack merger (its norm over the 4 merged patches)."""
    vision = {"patch_size": 2, "temporal_patch_size": 2, "spatial_merge_size": 2, "num_position_embeddings": 4,
              "deepstack_visual_indexes": [1]}  # fmt: skip
    tower = _tower("qwen3_vl", **vision)
    patch = 8 * 3 * 2 * 2 * 2 + 8
    positions = 4 * 8
    block = 2 * 2 * 8 + (24 * 8 + 24) + (8 * 8 + 8) + (16 * 8 + 16) + (16 * 8 + 8)  # norms, qkv, proj, fc1, fc2
    merger = 2 * 8 + (32 * 32 + 32) + (12 * 32 + 12)
    deepstack = 2 * 32 + (32 * 32 + 32) + (12 * 32 + 12)
    assert tower_params(tower) == patch + positions + 2 * block + merger + deepstack == 4416
    assert _tower("qwen3_vl_moe", **vision) == tower  # the MoE decoder's tower is the same


def test_qwen3_5_hand_count_has_no_deepstack_mergers():
    """Qwen3.5's tower is Qwen3-VL's without DeepStack mergers, even where its vision_config lists some layers
    (transformers' Qwen3_5VisionModel deletes the list), which is said; the MoE decoder's tower is the same."""
    vision = {"patch_size": 2, "temporal_patch_size": 2, "spatial_merge_size": 2, "num_position_embeddings": 4}
    qwen3_vl = _tower("qwen3_vl", **vision)
    tower = _tower("qwen3_5", **vision, deepstack_visual_indexes=[1])
    assert tower == qwen3_vl and tower.deepstack_mergers == 0
    assert tower_params(tower) == 4416 - (2 * 32 + (32 * 32 + 32) + (12 * 32 + 12)) == 2900  # less the one merger
    assert _tower("qwen3_5_moe", **vision) == tower
    _, assumed = read_vision_tower({"model_type": "qwen3_5", "vision_config": {**SMALL, "deepstack_visual_indexes": [1]}},
                                   12, "test")  # fmt: skip
    assert any("deepstack_visual_indexes [1] not counted" in line for line in assumed)


@pytest.mark.parametrize("model_type", ["qwen3_5", "qwen3_5_moe"])
def test_a_small_qwen3_5_tower_equals_transformers_own(model_type):
    """transformers' own Qwen3.5 (and Qwen3.5-MoE) vision model, built from a small vision config with random
    weights: its tensors are the inventory's, names and shapes, with the DeepStack layers it is given ignored."""
    pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    vision = {"depth": 2, "hidden_size": 8, "intermediate_size": 16, "num_heads": 2, "out_hidden_size": 12,
              "patch_size": 2, "temporal_patch_size": 2, "spatial_merge_size": 2, "num_position_embeddings": 4,
              "deepstack_visual_indexes": [1]}  # fmt: skip
    prefix = "Qwen3_5Moe" if model_type == "qwen3_5_moe" else "Qwen3_5"
    modeling = getattr(transformers.models, model_type)
    config = getattr(transformers, f"{prefix}VisionConfig")(**vision)
    model = getattr(getattr(modeling, f"modeling_{model_type}"), f"{prefix}VisionModel")(config)
    built = {f"model.visual.{name}": tuple(p.shape) for name, p in model.named_parameters()}
    spec, _ = read_vision_tower({"model_type": model_type, "vision_config": vision}, 12, "test")
    assert spec is not None
    assert built == {t.name: t.shape for t in tower_tensors(spec)}
    assert sum(p.numel() for p in model.parameters()) == tower_params(spec) == 2900


def test_llama4_hand_count():
    """8 wide, 2 layers, MLP 16, 28-pixel tiles of 14-pixel patches (4 and a class token), an adapter 12 wide out to
    10, a 12-wide decoder; 16 tiles and the global one of 4 x 0.5^2 = 1 token each."""
    tower = _tower("llama4", projector_input_dim=12, projector_output_dim=10)
    embeddings = 8 + 5 * 8 + 8 * 3 * 14 * 14 + 2 * 2 * 8  # class token, positions, unfold (no bias), pre/post norms
    layer = 4 * (8 * 8 + 8) + (16 * 8 + 16) + (8 * 16 + 8) + 2 * 2 * 8  # q k v o, fc1, fc2, two LayerNorms
    adapter = 12 * 16 + 10 * 12  # fc1 from the MLP's width, fc2, no biases
    projector = 12 * 10
    assert tower_params(tower) == embeddings + 2 * layer + adapter + projector == 6416
    assert (tower.tokens_per_image, tower.patches_per_image) == (17, 17 * 5)


def test_pixtral_hand_count():
    """8 wide, 2 layers, gated MLP 16, 28-pixel images of 14-pixel patches merged 2 x 2, a 12-wide decoder; no
    biases anywhere (trial 245: Mistral Small's tower was left out)."""
    tower, _ = read_vision_tower({"model_type": "mistral3", "spatial_merge_size": 2, "vision_config": SMALL}, 12, "t")
    assert tower is not None
    embeddings = 8 * 3 * 14 * 14 + 8  # patch_conv, ln_pre
    layer = 2 * 8 + 4 * 8 * 8 + 3 * 8 * 16  # two RMSNorms, q k v o, gate up down
    projector = 8 + 8 * 32 + 12 * 8 + 12 * 12  # norm, merging_layer (4 patches to one), linear_1, linear_2
    assert tower_params(tower) == embeddings + 2 * layer + projector == 6528
    # tp 2: q, k, v, gate, up by rows, o and down by inputs, linear_1 and linear_2 likewise; the rest whole
    assert tower_params(tower, 2) == 6528 - (2 * (4 * 8 * 8 + 3 * 8 * 16) + 12 * 8 + 12 * 12) // 2 == 5768
    assert (tower.tokens_per_image, tower.patches_per_image) == (1, 4)  # (28 / 28)^2 merged, (28 / 14)^2 patches


def test_mistral3_tower_equals_transformers_and_its_text_model_stays_untied():
    """Mistral Small 3.2's Pixtral tower and projector: transformers' tensors exactly (439M, the published 24B's
    vision share). transformers 5.25's Mistral3Config ties the output head by default (tie_word_embeddings True
    on the outer config) where vLLM builds the text config's MistralForCausalLM untied (MistralConfig's False) and
    the checkpoint stores lm_head: mha prices it untied, one 131,072 x 5,120 head more than transformers builds."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = json.loads(MISTRAL3.read_text())
    spec = import_hf_config(copy.deepcopy(config)).model
    with torch.device("meta"):
        model = transformers.Mistral3ForConditionalGeneration(transformers.Mistral3Config(**copy.deepcopy(config)))
    prefixes = ("model.vision_tower.", "model.multi_modal_projector.")
    built = {name: tuple(p.shape) for name, p in model.named_parameters() if name.startswith(prefixes)}
    assert spec.vision is not None and built == {t.name: t.shape for t in tower_tensors(spec.vision)}
    assert count_params(spec).vision_tower == sum(p.numel() for n, p in model.named_parameters() if n in built)
    assert count_params(spec).vision_tower == 438_958_080
    total = sum(p.numel() for p in model.parameters())
    assert count_params(spec).total == total + 131_072 * 5_120 == 24_011_361_280


def test_mistral3_tower_is_left_out_text_only_and_its_odd_settings_refused():
    config = json.loads(MISTRAL3.read_text())
    with pytest.raises(Exception, match="vision_feature_layer -2"):
        import_hf_config({**config, "vision_feature_layer": -2})
    with pytest.raises(Exception, match="multimodal_projector_bias"):
        import_hf_config({**config, "multimodal_projector_bias": True})


def test_the_tower_is_counted_in_the_weights_not_in_the_active_ones():
    with_tower = import_hf_config(json.loads(GEMMA3.read_text())).model
    text_only = with_tower.model_copy(update={"vision": None})
    counts, text = count_params(with_tower), count_params(text_only)
    assert counts.vision_tower == 419_816_304 == counts.total - text.total
    assert counts.active == text.active and counts.embeddings == text.embeddings
    # every rank holds the replicated parts (embeddings, norms, the projector) and its share of the rest
    assert params_per_rank(with_tower, 2) - params_per_rank(text_only, 2) == tower_params(with_tower.vision, 2)


@pytest.mark.parametrize(
    ("path", "model_class", "config_class"),
    [
        (GEMMA3, "Gemma3ForConditionalGeneration", "Gemma3Config"),
        (GEMMA4, "Gemma4ForConditionalGeneration", "Gemma4Config"),
        (QWEN2_5_VL, "Qwen2_5_VLForConditionalGeneration", "Qwen2_5_VLConfig"),
        (QWEN3_VL, "Qwen3VLForConditionalGeneration", "Qwen3VLConfig"),
        (QWEN3_VL_MOE, "Qwen3VLMoeForConditionalGeneration", "Qwen3VLMoeConfig"),
        (LLAMA4, "Llama4ForConditionalGeneration", "Llama4Config"),
        (QWEN3_5, "Qwen3_5ForConditionalGeneration", "Qwen3_5Config"),
        (QWEN3_6, "Qwen3_5ForConditionalGeneration", "Qwen3_5Config"),
    ],
    ids=["gemma3", "gemma4", "qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe", "llama4", "qwen3_5", "qwen3_6"],
)
def test_every_tower_tensor_equals_transformers(path, model_class, config_class):
    """transformers' whole model on the meta device: its tower and projector hold exactly the inventory's tensors,
    and its parameter count is mha's exactly: the Qwen decoders' text families included, with Qwen2.5-VL's q/k/v
    biases, 28 x (3584 + 2 x 512) = 129,024, and Qwen3-VL's q/k norms, 36 x 2 x 128 = 9,216, which a Llama-style
    reading of their text model_types left out (``test_the_qwen_vl_decoders_are_read_as_their_families``)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = json.loads(path.read_text())
    spec = import_hf_config(copy.deepcopy(config)).model
    with torch.device("meta"):
        model = getattr(transformers, model_class)(getattr(transformers, config_class)(**copy.deepcopy(config)))
    tower_prefixes = ("model.vision_tower.", "model.multi_modal_projector.", "model.visual.", "vision_model.",
                      "multi_modal_projector.", "model.embed_vision.")  # fmt: skip
    built = {name: tuple(p.shape) for name, p in model.named_parameters() if name.startswith(tower_prefixes)}
    assert spec.vision is not None
    assert built == {t.name: t.shape for t in tower_tensors(spec.vision)}
    total = sum(p.numel() for p in model.parameters())
    assert count_params(spec).total == total


def test_an_unlisted_tower_is_named():
    config = {"model_type": "llava", "text_config": {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
              "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100}, "vision_config": {}}  # fmt: skip
    imported = import_hf_config(config)
    assert imported.model.vision is None
    assert any("vision_config and the projectors are not counted" in line for line in imported.assumptions)


@pytest.mark.parametrize("typed", ["meta-llama/Llama-4-Scout-17B-16E-Instruct", "Llama-4-Scout-17B-16E-Instruct"])
def test_an_id_priced_as_a_text_preset_says_the_tower_it_leaves_out(typed, tmp_path, monkeypatch):
    """Llama-4-Scout's id, not cached, was priced as the text preset with no word of the 872M tower vLLM loads
    (newuser trial 250); its published config.json counts it (``test_every_tower_tensor_equals_transformers``)."""
    from mha_cli.core.sources import load_source

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    source = load_source(typed)
    assert source.model.vision is None
    assert any("vision tower and projector (871,932,416 parameters" in note for note in source.assumptions)
    tower = import_hf_config(json.loads(LLAMA4.read_text())).model.vision
    assert tower is not None and tower_params(tower) == 871_932_416


def test_a_flat_multimodal_config_does_not_call_its_read_tower_unread():
    """Qwen2.5-VL's config.json as first published (text fields at the top, beside vision_config) counted the tower
    and also said 'not read: vision_config' (newuser trial 250)."""
    config = json.loads(QWEN2_5_VL.read_text())
    flat = {**config["text_config"], "model_type": "qwen2_5_vl", "architectures": config["architectures"],
            "vision_config": config["vision_config"]}  # fmt: skip
    imported = import_hf_config(flat)
    assert imported.model.vision is not None and tower_params(imported.model.vision) == 676_550_144
    assert not any("not read: vision_config" in note for note in imported.assumptions)


FP8_DYNAMIC = {"config_groups": {"group_0": {"input_activations": {"dynamic": True, "num_bits": 8, "strategy": "token",
               "symmetric": True, "type": "float"}, "targets": ["Linear"], "weights": {"dynamic": False, "num_bits": 8,
               "strategy": "channel", "symmetric": True, "type": "float"}}}, "format": "float-quantized",
               "ignore": ["re:.*lm_head", "re:visual.*"], "quant_method": "compressed-tensors"}  # fmt: skip
"""RedHatAI-style FP8-dynamic for Qwen2.5-VL: every Linear in fp8 but the head and the tower."""


def test_an_ignore_entry_for_the_tower_is_said_as_the_towers():
    """'re:visual.*' was said to name 'modules the model has none of' beside a tower counted at 677M (newuser trial
    250): it names the tower, which is priced in bf16 whatever the scheme says."""
    import tempfile

    from mha_cli.core.sources import load_source

    config = {**json.loads(QWEN2_5_VL.read_text()), "quantization_config": FP8_DYNAMIC}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "config.json"
        path.write_text(json.dumps(config))
        notes = load_source(str(path)).assumptions
    assert any("quantization_config names the vision tower (re:visual.*)" in note for note in notes)
    assert not any("has none of" in note and "visual" in note for note in notes)


def test_a_sparse_text_config_is_refused_saying_so():
    """llava-1.5-7b-hf's text_config names a model type and a vocabulary and leaves the size to LlamaConfig's
    defaults; it was refused as 'has no hidden size (looked for hidden_size, n_embd, d_model)' (newuser trial 250)."""
    from mha_cli.core.errors import BadInputError

    config = {"model_type": "llava", "architectures": ["LlavaForConditionalGeneration"], "vision_config": {},
              "text_config": {"model_type": "llama", "max_position_embeddings": 4096, "vocab_size": 32064}}  # fmt: skip
    with pytest.raises(BadInputError, match="its text_config \\(model_type 'llama'\\) sets no hidden_size"):
        import_hf_config(config)


def test_text_only_limits_gemma4_s_audio_too(cli, tmp_path):
    """vLLM marks Gemma 4's audio tower apart (gemma4_mm.py: _mark_tower_model(vllm_config, "audio")): --text-only
    wrote image 0 and video 0 only, so an E2B-style config with audio_config still loaded and profiled its audio tower
    (review 360 #3). Its limits now hold audio 0 too; the 26B-A4B, without audio_config, keeps image and video."""
    config = {**json.loads(GEMMA4.read_text()), "audio_config": {"model_type": "gemma4_audio"}}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    spec = import_hf_config(copy.deepcopy(config)).model
    assert spec.vision is not None and spec.vision.audio_tower
    line = cli.json("plan", str(path), "--target", "h100", "--tp", "1", "--closed-form", "--text-only")["launch"]
    assert """--limit-mm-per-prompt '{"image":0,"video":0,"audio":0}'""" in line["vllm"]
    plain = cli.json("plan", str(GEMMA4), "--target", "h100", "--tp", "1", "--closed-form", "--text-only")["launch"]
    assert """--limit-mm-per-prompt '{"image":0,"video":0}'""" in plain["vllm"]


@pytest.mark.parametrize(
    ("fixture", "first_skipping"),
    [(ROOT / "tests" / "fixtures" / "vision" / "gemma-3-27b-it.json", "vllm@0.15"), (QWEN2_5_VL, "vllm@0.11")],
)
def test_text_only_keeps_the_tower_on_releases_that_load_it_regardless(cli, fixture, first_skipping):
    """vLLM 0.10 builds Gemma 3's and Qwen2.5-VL's towers whatever the limits; 0.11 drops Qwen2.5-VL's at limit 0
    (self.visual = None), Gemma 3's from 0.15 (_mark_tower_model): --text-only took the tower out on every release
    (trial 366 #6)."""
    args = ("kv", str(fixture), "--target", "h100", "--seq", "8k", "--text-only")
    old = cli.json(*args, "--engine", "vllm@0.10")["memory"]["weight_bytes_per_device"]
    new = cli.json(*args, "--engine", first_skipping)["memory"]["weight_bytes_per_device"]
    spec = import_hf_config(json.loads(fixture.read_text())).model
    assert spec.vision is not None
    assert old - new == tower_params(spec.vision) * 2  # the bf16 tower, on one rank


KIMI_K25 = ROOT / "tests" / "fixtures" / "hf_configs" / "kimi-k2.5.json"


def test_kimi_k2_5_s_moonvit_equals_transformers_and_the_checkpoint():
    """Trial 375 #2: Kimi-K2.5's tower was not counted. Its MoonViT (27 blocks of 1,152, MLP 4,304, patches of 14, a
    64 x 64 position grid) and patch-merger projector (4 patches of 1,152 to 4,608, then to the decoder's 7,168) are
    transformers 5.25's Kimi_K25ForConditionalGeneration tensor for tensor, the hub's vt_* and init_pos_emb_* fields
    read under transformers' names: 471,143,920 weights, 942,287,840 B in bf16, what a dump of the checkpoint holds
    beyond its language model (tests/test_weight_scheme.py)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from transformers.models.kimi_k25 import modeling_kimi_k25

    spec = import_hf_config(json.loads(KIMI_K25.read_text())).model
    assert spec.vision is not None and spec.vision.kind == "moonvit"
    text = {"model_type": "deepseek_v3", "hidden_size": 7168, "num_hidden_layers": 1, "vocab_size": 64,
            "intermediate_size": 64, "first_k_dense_replace": 1}  # fmt: skip
    hub = json.loads(KIMI_K25.read_text())[
        "vision_config"
    ]  # its vt_* names, as transformers names them (review 378 #6)
    vision = {name: hub[key] for key, name in load_benchmark("zoo_sweep")._KIMI_VISION_NAMES.items() if key in hub}
    assert vision["hidden_size"] == 1152 and vision["pos_emb_height"] == 64
    config = transformers.Kimi_K25Config(vision_config=vision, text_config=text)
    with torch.device("meta"):
        model = modeling_kimi_k25.Kimi_K25ForConditionalGeneration(config)
    built = {name: tuple(p.shape) for name, p in model.named_parameters()
             if name.startswith(("model.vision_tower.", "model.mm_projector."))}  # fmt: skip
    assert built == {t.name: t.shape for t in tower_tensors(spec.vision)}
    assert tower_params(spec.vision) == sum(math.prod(shape) for shape in built.values()) == 471_143_920


def test_kimi_k2_5_s_tower_splits_by_its_heads_and_is_whole_where_tp_does_not_divide_them():
    """vLLM's ``is_vit_use_data_parallel``: MoonViT's 16 heads split over 8 ranks (q, k, v, fc1 by columns, the out
    projection and fc2 by rows, the projector whole), and over 3 ranks, which do not divide them, the encoder runs data
    parallel: whole on every rank."""
    tower = import_hf_config(json.loads(KIMI_K25.read_text())).model.vision
    assert tower is not None
    d, f, merged = 1152, 4304, 4 * 1152
    replicated = d * 3 * 14 * 14 + d + 64 * 64 * d + 27 * 6 * d + 2 * d + 2 * d  # norms, the out and fc2 biases
    replicated += merged * merged + merged + 7168 * merged + 7168
    split = 27 * (4 * d * d + 3 * d + 2 * d * f + f)  # q, k, v, out; their column biases; fc1, fc2; fc1's bias
    assert tower_params(tower, 8) == replicated + split // 8 == 111_273_934
    assert tower_params(tower, 3) == tower_params(tower) == 471_143_920


def test_kimi_k2_5_s_tower_is_dropped_text_only_from_vllm_0_16():
    """vLLM 0.15.0's kimi_k25.py builds the tower whatever the limits; 0.16.0 marks it a tower of the vision_chunk
    modality (``_mark_tower_model``), left out when that modality is limited to 0 (--text-only here)."""
    from typer.testing import CliRunner

    from mha_cli.cli.app import app

    runner = CliRunner()
    args = ["kv", str(KIMI_K25), "--target", "8xh200", "--tp", "8", "--seq", "8k", "--text-only", "--json"]
    old = json.loads(runner.invoke(app, [*args, "--engine", "vllm@0.15"]).stdout)["memory"]["weight_bytes_per_device"]
    new = json.loads(runner.invoke(app, [*args, "--engine", "vllm@0.16"]).stdout)["memory"]["weight_bytes_per_device"]
    assert old - new == 111_273_934 * 2
    # the modality vLLM reads for it, as the launch line writes it (review 378 #2: refused as unknown before)
    limited = [*args[:-2], "--limit-mm-per-prompt", "vision_chunk=0", "--json", "--engine", "vllm@0.16"]
    assert json.loads(runner.invoke(app, limited).stdout)["memory"]["weight_bytes_per_device"] == new
