"""A quantization config's exclusion entry that names a decoder layer the model does not have, or spells the decoder
as mha does not read it, is refused in one line (exit 2); entries for towers, MTP layers and Nemotron-H's
``backbone.layers`` blocks, and entries that do name a layer, keep pricing (core.layer_entries)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mha_cli.core.checkpoint_names import MHA_NAMES, QWEN3_5_IMAGE_TEXT_NAMES
from mha_cli.core.errors import BadInputError
from mha_cli.core.layer_entries import decoder_layer
from mha_cli.core.sources import load_source
from mha_cli.core.weight_bytes import rank_checkpoint_bytes

CONFIGS = Path("tests/fixtures/hf_configs")
TWO_LAYERS = json.loads((CONFIGS / "llama-3.2-1b.json").read_text()) | {"num_hidden_layers": 2}
"""Llama-3.2-1B cut to 2 layers: d 2048, 32 query and 8 KV heads of 64, d_ff 8192, 128,256 tied embeddings."""


def nvfp4(*excluded: str) -> dict:
    """ModelOpt NVFP4 as its hf_quant_config.json writes it (tests/fixtures/quantization, DeepSeek-R1-Distill)."""
    return {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16, "exclude_modules": list(excluded)}


def w4a16(*ignored: str) -> dict:
    weights = {"num_bits": 4, "type": "int", "symmetric": True, "strategy": "group", "group_size": 128}
    group = {"targets": ["Linear"], "weights": weights}
    return {"quant_method": "compressed-tensors", "config_groups": {"group_0": group}, "ignore": list(ignored)}


def written(tmp_path: Path, config: dict, quant: dict) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config | {"quantization_config": quant}))
    return path


def refused(cli, path: Path) -> str:
    result = cli.run("kv", str(path))
    assert result.exit_code == 2, result.output
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.output
    return result.stderr


def test_an_entry_naming_layer_3_of_a_2_layer_model_is_refused(cli, tmp_path):
    message = refused(cli, written(tmp_path, TWO_LAYERS, nvfp4("lm_head", "model.layers.3.mlp")))
    assert "'model.layers.3.mlp'" in message and "decoder layer 3" in message
    assert "model.layers.0 to model.layers.1" in message  # what an entry could name
    message = refused(cli, written(tmp_path, TWO_LAYERS, w4a16("re:model\\.layers\\.3\\..*")))
    assert "decoder layer 3" in message


def test_the_same_entry_on_layer_1_keeps_that_mlp_in_bf16(tmp_path):
    """By hand: q and o 2048 x 2048, k and v 512 x 2048, gate and up 8192 x 2048, down 2048 x 8192. NVFP4 is half a
    byte a weight, an fp8 scale per 16 and two fp32 scalars a matrix (9n/16 + 8 B); ModelOpt's plain name
    ``model.layers.1.mlp`` names every module holding it, so layer 1's three MLP matrices are bf16 (2 B a weight);
    the tied embedding and the 5 norms bf16."""
    attention, mlp = 2 * 2048 * 2048 + 2 * 512 * 2048, 3 * 8192 * 2048
    layer_0 = (attention + mlp) * 9 // 16 + 7 * 8
    layer_1 = attention * 9 // 16 + 4 * 8 + mlp * 2
    by_hand = layer_0 + layer_1 + 128_256 * 2048 * 2 + 5 * 2048 * 2
    assert by_hand == 666_128_472
    source = load_source(str(written(tmp_path, TWO_LAYERS, nvfp4("lm_head", "model.layers.1.mlp"))))
    assert source.deployment is not None and source.deployment.weight_scheme is not None
    assert rank_checkpoint_bytes(source.model, 1, source.deployment.weight_scheme, vocab_padding=1) == by_hand


def test_with_weight_dtype_the_config_is_not_read_and_said_so(tmp_path):
    source = load_source(str(written(tmp_path, TWO_LAYERS, nvfp4("model.layers.3.mlp"))), weight_dtype="bf16")
    assert source.deployment is None or source.deployment.weight_scheme is None
    assert any("quantization_config not read" in a and "layers.3" in a for a in source.assumptions)


def test_a_decoder_spelled_as_mha_does_not_read_it_is_refused(cli, tmp_path):
    """vLLM 0.15.1's Kimi-K2.5 text model spelling (``language_model.layers.N``) on a Llama checkpoint: layer 1
    exists, but the entry names none of it (the way a wrapper's prefix once let Kimi-K2.6 NVFP4's total pass)."""
    message = refused(cli, written(tmp_path, TWO_LAYERS, w4a16("language_model.layers.1.mlp.down_proj")))
    assert "'language_model.layers.1.'" in message and "'model.layers.1.'" in message


def test_entries_outside_the_decoder_layers_keep_pricing(tmp_path):
    """A vision tower's layer 5, an MTP module and the LM head on a 2-layer model: said, not refused."""
    tower = ["vision_tower.vision_model.encoder.layers.5.mlp.fc1", "model.visual.blocks.7.attn.qkv"]
    source = load_source(str(written(tmp_path, TWO_LAYERS, nvfp4("lm_head", *tower, "mtp.layers.0.self_attn"))))
    unmatched = next(a for a in source.assumptions if "has none of" in a)
    assert "mtp.layers.0.self_attn" in unmatched and "vision_tower" not in unmatched
    # trial 375 #6: a tower the config does not describe is said as such, not as modules the model "has none of"
    towers = next(a for a in source.assumptions if "names a vision or audio tower or its projector" in a)
    assert "vision_tower.vision_model.encoder.layers.5.mlp.fc1" in towers and "model.visual.blocks.7" in towers
    assert "that this config does not describe (no vision_config): not counted" in towers


def test_a_regex_that_may_match_a_tower_is_not_judged(tmp_path):
    source = load_source(str(written(tmp_path, TWO_LAYERS, w4a16("re:.*layers\\.5\\..*"))))
    assert any("has none of" in a and "layers" in a for a in source.assumptions)


def test_nemotron_h_backbone_blocks_keep_pricing(tmp_path):
    """Nemotron-H's checkpoints name blocks ``backbone.layers.B`` (B up to 51 for 29 of mha's layers): not mha's
    decoder spelling, so its entries are said as before, never refused."""
    config = json.loads((CONFIGS / "nvidia-nemotron-3-nano-30b-a3b.json").read_text())
    source = load_source(str(written(tmp_path, config, nvfp4("lm_head", "backbone.layers.40.mixer*"))))
    assert source.model.n_layers == 29
    assert any("backbone.layers.40.mixer*" in a for a in source.assumptions)


def test_an_mtp_layer_numbered_after_the_decoder_keeps_pricing(cli, tmp_path):
    """DeepSeek-V3 cut to 2 layers, its one MTP layer numbered 2 (``num_nextn_predict_layers``: vLLM's
    ``deepseek_mtp.py`` loads ``model.layers.{num_hidden_layers}``): excluding it is fine; layer 3 is refused."""
    config = json.loads((CONFIGS / "deepseek-v3.json").read_text()) | {"num_hidden_layers": 2}
    source = load_source(str(written(tmp_path, config, nvfp4("lm_head", "model.layers.2*"))))
    assert source.deployment is not None and source.deployment.weight_scheme is not None
    message = refused(cli, written(tmp_path, config, nvfp4("model.layers.3*")))
    assert "decoder layer 3" in message and "MTP" in message


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("model.layers.3.mlp", ("model.", 3)),
        ("model.layers.12*", ("model.", 12)),
        ("layers.0.self_attn", ("", 0)),
        ("model.language_model.layers.4.mlp*", ("model.", 4)),  # a wrapper's prefix read as mha's (weight_scheme)
        ("language_model.model.layers.0*", ("model.", 0)),
        ("language_model.layers.2.mlp", ("language_model.", 2)),
        ("re:model\\.layers\\.7\\.mlp.*", ("model.", 7)),
        ("re:^model\\.layers\\.\\d+\\.mlp\\.gate$", ("model.", None)),  # every layer's
        ("re:.*layers\\.0\\.", None),  # may match a tower's layer 0
        ("vision_tower.encoder.layers.3", None),
        ("backbone.layers.3.mixer", None),
        ("mtp.layers.0", None),
        ("model.layers.*.self_attn", None),  # no layer named
        ("lm_head", None),
    ],
)
def test_which_entries_name_a_decoder_layer(entry, expected):
    assert decoder_layer(entry, MHA_NAMES) == expected


def test_an_image_text_checkpoint_s_own_prefix_is_its_decoder():
    assert decoder_layer("model.language_model.layers.4.mlp", QWEN3_5_IMAGE_TEXT_NAMES) == ("model.language_model.", 4)


def test_kimi_k2_6_nvfp4_s_wrong_total_would_have_been_refused(monkeypatch):
    """Before mha read Kimi-K2.5's wrapper spelling (``language_model.model.``: weight_scheme.TEXT_MODEL_PREFIXES),
    every entry of nvidia/Kimi-K2.6-NVFP4's list named nothing and the total passed 13.2 GB short; with only Gemma 4's
    prefix read, as then, the first entry is refused."""
    from mha_cli.core import weight_scheme

    monkeypatch.setattr(weight_scheme, "TEXT_MODEL_PREFIXES", (("model.language_model.", "model."),))
    with pytest.raises(BadInputError, match=r"'language_model.model.layers.0\*' spells decoder layer 0"):
        load_source(str(CONFIGS / "kimi-k2.6-nvfp4.json"))
