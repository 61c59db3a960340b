"""A config.json of no registered family: priced from its standard fields only when it has no other field a figure
may depend on; otherwise refused naming the fields (``core.hf_unread``). Multimodal configs say which towers
their weights leave out; Llama's ``mlp_bias`` is read."""

from __future__ import annotations

import re

import pytest

from mha_cli.core.decoder_omissions import omitted_details
from mha_cli.core.errors import BadInputError
from mha_cli.core.hf_import import import_hf_config
from mha_cli.core.kv import kv_footprint
from mha_cli.core.params import count_params

LLAMA_COPY = {
    "model_type": "my_llama", "architectures": ["MyLlamaForCausalLM"], "hidden_size": 4096, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
    "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "max_position_embeddings": 8192, "hidden_act": "silu",
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "use_cache": True, "attention_dropout": 0.0,
    "bos_token_id": 128000, "eos_token_id": 128001, "initializer_range": 0.02, "pretraining_tp": 1,
    "transformers_version": "4.40.0", "add_cross_attention": False,
}  # fmt: skip
"""Llama-3-8B's config.json under a model_type mha does not know, with bookkeeping and training fields."""


def test_a_copy_of_a_known_decoder_under_an_unknown_name_is_priced_from_its_standard_fields():
    imported = import_hf_config(dict(LLAMA_COPY))
    said = "model_type 'my_llama' is not a known family: read the standard fields only (a Llama-style decoder;"
    assert any(line.startswith(said) and "not counted" in line for line in imported.assumptions)
    assert omitted_details(imported.model) == [  # and the decoder built from it says it is not the family's
        "model_type 'my_llama' is not a family mha knows: the decoder is built as a Llama-style decoder from its"
        " standard fields, and has not been compared with the family's own modeling code"
    ]
    footprint = kv_footprint(imported.model, seq_len=1, batch=1, kv_dtype="bf16")
    assert footprint.total_bytes == 131_072  # Llama-3-8B's published 128 KiB per token
    assert count_params(imported.model).total == 8_030_261_248  # Meta-Llama-3-8B's parameter count
    unnamed = import_hf_config({key: value for key, value in LLAMA_COPY.items() if key != "model_type"})
    said = "no model_type: read the standard fields only"  # trial 389 #4: not said as the file's 'unknown'
    assert any(line.startswith(said) for line in unnamed.assumptions)
    assert not any("'unknown'" in line for line in unnamed.assumptions)


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        ({"type_vocab_size": 2}, "type_vocab_size"),  # BERT's token-type embeddings
        ({"use_parallel_residual": True}, "use_parallel_residual"),  # GPT-NeoX's parallel block
        ({"word_embed_proj_dim": 512, "do_layer_norm_before": False}, "word_embed_proj_dim, do_layer_norm_before"),
        ({"add_cross_attention": True}, "add_cross_attention"),  # the plain decoder's value is false
    ],
)
def test_an_unknown_family_with_a_field_no_reader_understood_is_refused_naming_it(extra, named):
    with pytest.raises(BadInputError) as refused:
        import_hf_config({**LLAMA_COPY, **extra})
    message = str(refused.value)
    assert f"fields mha does not read: {named};" in message
    assert "\n" not in message and "model_type 'my_llama' is not a family mha knows" in message


def test_the_refusal_names_six_fields_and_counts_the_rest():
    extra = {f"field_{i}": i for i in range(1, 9)}
    with pytest.raises(BadInputError, match=r"field_1, field_2, field_3, field_4, field_5, field_6 and 2 more;"):
        import_hf_config({**LLAMA_COPY, **extra})


def test_a_known_family_names_the_fields_its_config_class_does_not_define():
    config = {**LLAMA_COPY, "model_type": "llama", "type_vocab_size": 2, "moe_layer_freq": 1}
    imported = import_hf_config(config)
    assert imported.model.family == "llama" and imported.unread == ["type_vocab_size", "moe_layer_freq"]
    note = "not read: type_vocab_size, moe_layer_freq (LlamaConfig (transformers 5.24) builds the model without them"
    assert any(line.startswith(note) for line in imported.assumptions)


@pytest.mark.parametrize(
    ("model_type", "extra", "named"),
    [
        ("gpt_bigcode", {"scale_attn_weights": False}, "scale_attn_weights = False (mha builds True)"),
        ("stablelm", {"use_parallel_residual": True}, "use_parallel_residual = True (mha builds False)"),  # 12B
        ("gpt2", {"scale_attn_by_inverse_layer_idx": True}, "scale_attn_by_inverse_layer_idx = True (mha builds"),
    ],
)
def test_a_field_of_the_family_left_unread_is_refused_at_a_value_mha_does_not_build(model_type, extra, named):
    config = {**LLAMA_COPY, "model_type": model_type, **extra}
    with pytest.raises(BadInputError, match=re.escape(f"model_type {model_type!r} sets {named}")):
        import_hf_config(config)
    assert import_hf_config({**config, **dict.fromkeys(extra)}).model.family == model_type  # null: the default


@pytest.mark.parametrize(
    ("model_type", "field", "config_class"),
    [("stablelm", "use_qkv_bias", "StableLmConfig"), ("ernie4_5", "use_bias", "Ernie4_5Config")],
)
def test_bias_switches_of_a_family_are_read_and_counted_as_transformers_builds_them(model_type, field, config_class):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = getattr(transformers, config_class)(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, intermediate_size=96,
        vocab_size=256, **{field: True},
    )  # fmt: skip
    with torch.device("meta"):
        reference = sum(p.numel() for p in transformers.AutoModelForCausalLM.from_config(config).parameters())
    spec = import_hf_config(config.to_dict()).model
    assert spec.attention.qkv_bias and count_params(spec).total == reference


def test_mlp_bias_is_read_and_counted():
    base = import_hf_config({**LLAMA_COPY, "model_type": "llama"}).model
    biased = import_hf_config({**LLAMA_COPY, "model_type": "llama", "mlp_bias": True}).model
    assert biased.block.mlp_bias and not base.block.mlp_bias
    # three projections a layer: gate and up (d_ff each), down (d_model)
    assert count_params(biased).total - count_params(base).total == 32 * (2 * 14336 + 4096)


def test_mlp_bias_equals_transformers_count():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, intermediate_size=96,
        vocab_size=256, mlp_bias=True,
    )  # fmt: skip
    with torch.device("meta"):
        reference = sum(p.numel() for p in transformers.AutoModelForCausalLM.from_config(config).parameters())
    assert count_params(import_hf_config(config.to_dict()).model).total == reference


def test_a_multimodal_config_says_which_towers_its_weights_leave_out():
    config = {
        "model_type": "gemma3",
        "text_config": {**LLAMA_COPY, "model_type": "llama"},
        "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 1152},
        "audio_config": {"model_type": "whisper", "d_model": 1280},
        "quantization_config": {"quant_method": "fp8"},
    }
    imported = import_hf_config(config)
    said = [line for line in imported.assumptions if "not counted" in line]
    assert said == [
        "vision_config.vision_use_head: SigLIP's pooling head not counted (vLLM's Gemma 3 builds none:"
        " SiglipVisionModel's use_head=False)",  # transformers' default for a vision_config that does not say
        "weights: audio_config and its projector not counted (vision_config's tower is)",
    ]
    assert imported.model.vision is not None and imported.model.vision.d_model == 1152  # Gemma 3's tower is read


@pytest.mark.parametrize(
    "extra",
    [
        {"use_bfloat16": False, "tf_legacy_loss": False, "_from_model_config": True},  # transformers 4.x bookkeeping
        {"sliding_window": None, "sliding_window_pattern": 6},  # a pattern with no window says nothing
        {"use_sliding_window": False, "sliding_window": 4096, "max_window_layers": 28},  # Qwen2's switch off
    ],
)
def test_fields_that_change_no_figure_are_not_refused_for_an_unknown_family(extra):
    imported = import_hf_config({**LLAMA_COPY, **extra})
    assert kv_footprint(imported.model, seq_len=1, batch=1, kv_dtype="bf16").total_bytes == 131_072


def test_an_unknown_mla_family_is_not_refused_for_the_head_fields_mla_does_not_use():
    config = {
        **LLAMA_COPY, "model_type": "kimi_k2_like", "kv_lora_rank": 512, "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128, "v_head_dim": 128, "q_lora_rank": 1536, "head_dim": 64,
    }  # fmt: skip
    model = import_hf_config(config).model
    assert model.attention.mla is not None
    assert kv_footprint(model, seq_len=1, batch=1, kv_dtype="bf16").total_bytes == 32 * (512 + 64) * 2


def test_an_unknown_family_s_chunked_attention_is_refused_and_its_window_said():
    """Trial 354 #6: attention_chunk_size on an unknown model_type was priced as chunking every layer (Llama 4, the
    one family that chunks, does 3 layers in 4), unsaid; a sliding_window on every layer (Mistral's convention) was
    priced unsaid too."""
    with pytest.raises(BadInputError, match="its config sets fields mha does not read: attention_chunk_size"):
        import_hf_config({**LLAMA_COPY, "attention_chunk_size": 8192})
    windowed = import_hf_config({**LLAMA_COPY, "sliding_window": 4096})
    assert windowed.model.layers.sliding_window == 4096
    assert (
        "sliding_window 4096: every layer slides by it (Mistral's convention), model_type 'my_llama' being no family"
        " mha knows; one that windows some layers only caches more"
    ) in windowed.assumptions
    assert not any("Mistral's convention" in line for line in import_hf_config(dict(LLAMA_COPY)).assumptions)
