"""Weights priced from a config.json against transformers itself: each family's config class with small widths,
its causal LM built on the meta device (nothing allocated, nothing downloaded), its parameters counted.

The attention families, and the fixed-state families whose mixers and layers are all counted (Falcon-H1,
Granite-4.0-H, MiniMax, Jamba with its MoE on every other layer, Qwen3-Next and Qwen3.5 with their attention's output
gate), must equal it exactly; the rest are off by the amounts ``core.deployment.MIXER_WEIGHTS_NOTE`` states, which a
user sees.
"""

from __future__ import annotations

import contextlib
import warnings

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from mha_cli.core.hf_import import import_hf_config  # noqa: E402
from mha_cli.core.params import count_params  # noqa: E402

SMALL = {"hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
         "intermediate_size": 512, "vocab_size": 512}  # fmt: skip


def _counts(model_type: str) -> tuple[int, int]:
    """(transformers' parameters, ours) for ``model_type``'s config class at small widths."""
    config = transformers.AutoConfig.for_model(model_type)
    for field, value in SMALL.items():  # only the fields the family has (GPT-2 spells them n_embd, n_inner, ...)
        if getattr(config, field, None) is not None:
            setattr(config, field, value)
    for listed in ("layer_types", "layers_block_type"):  # per-layer lists the class filled for its default depth
        if isinstance(getattr(config, listed, None), list):
            with contextlib.suppress(AttributeError):  # a derived property on some classes
                setattr(config, listed, getattr(config, listed)[: SMALL["num_hidden_layers"]])
    if getattr(config, "mamba_d_head", None) is not None:  # the head width the class derived at its default width,
        width = getattr(config, "mamba_d_ssm", None) or config.mamba_expand * config.hidden_size  # which its own check
        config.mamba_d_head = width // config.mamba_n_heads  # (validate_architecture) refuses at the small one
    with warnings.catch_warnings(), torch.device("meta"):
        warnings.simplefilter("ignore")
        model = transformers.AutoModelForCausalLM.from_config(config)
    return sum(p.numel() for p in model.parameters()), count_params(import_hf_config(config.to_dict()).model).total


@pytest.mark.parametrize(
    "model_type",
    ["llama", "mistral", "mixtral", "qwen2", "qwen3", "qwen3_moe", "gemma", "gemma2", "gpt2", "falcon", "starcoder2",
     "llama4_text", "xglm", "stablelm", "seed_oss", "mellum", "ernie4_5",
     # post-norms (OLMo 2, OLMo 3, EXAONE 4), q/k norms over the whole projection (OLMo 2, OLMoE, MiniMax-M2),
     # sigmoid routing with a correction bias and shared experts (GLM-4.5, Solar Open, Sarvam, EXAONE MoE)
     "olmo2", "olmo3", "olmoe", "minimax_m2", "exaone4", "exaone_moe", "glm4_moe", "solar_open", "sarvam_moe",
     "sarvam_mla",
     "cohere", "cohere2"],  # bias-free LayerNorms
)  # fmt: skip
def test_attention_families_weigh_what_transformers_builds(model_type):
    reference, ours = _counts(model_type)
    assert ours == reference


@pytest.mark.parametrize(
    "model_type",
    ["falcon_h1", "granitemoehybrid", "minimax", "jamba", "qwen3_next", "qwen3_5_text", "qwen3_5_moe_text"],
)
def test_fixed_state_families_weigh_what_transformers_builds(model_type):
    from mha_cli.core.deployment import mixer_weights_note

    reference, ours = _counts(model_type)
    assert ours == reference
    config = transformers.AutoConfig.for_model(model_type)
    assert mixer_weights_note(import_hf_config(config.to_dict()).model) is None  # no note for an exact family


@pytest.mark.parametrize(
    ("model_type", "fields", "off_by"),
    [
        # GPT-Neo: learned positions, LayerNorm, plain GELU MLP with biases, no q/k/v bias; its global/local layers
        ("gpt_neo", {"hidden_size": 256, "num_layers": 4, "num_heads": 4, "vocab_size": 512,
                     "max_position_embeddings": 512, "attention_types": [[["global", "local"], 2]]}, 0),
        ("xglm", {"d_model": 256, "num_layers": 4, "attention_heads": 4, "ffn_dim": 1024, "vocab_size": 512}, 0),
        # MPT's LayerNorms and projections have no bias, even with no_bias false (transformers 5.24 builds none)
        ("mpt", {"d_model": 256, "n_layers": 4, "n_heads": 4, "vocab_size": 512, "max_seq_len": 512}, 0),
        ("mpt", {"d_model": 256, "n_layers": 4, "n_heads": 4, "vocab_size": 512, "max_seq_len": 512,
                 "no_bias": False}, 0),
    ],
)  # fmt: skip
def test_families_spelling_their_fields_their_own_way_weigh_what_transformers_builds(model_type, fields, off_by):
    config = transformers.AutoConfig.for_model(model_type, **fields)
    with warnings.catch_warnings(), torch.device("meta"):
        warnings.simplefilter("ignore")
        reference = sum(p.numel() for p in transformers.AutoModelForCausalLM.from_config(config).parameters())
    assert count_params(import_hf_config(config.to_dict()).model).total - reference == off_by


def test_ernie_moe_reads_its_own_expert_fields():
    """ERNIE 4.5 MoE spells its experts moe_num_experts / moe_k / moe_num_shared_experts and its MoE layers from
    moe_layer_start_index: priced as transformers builds it, but for the router's per-expert correction bias."""
    reference, ours = _counts("ernie4_5_moe")
    config = transformers.AutoConfig.for_model("ernie4_5_moe")
    moe_layers = SMALL["num_hidden_layers"] - config.moe_layer_start_index  # layers 1..3 of 4
    assert reference - ours == moe_layers * config.moe_num_experts  # moe_statics: one bias per expert


def test_phimoe_reads_its_lm_head_bias():
    """Phi-3.5-MoE publishes lm_head_bias true (transformers builds the bias, vLLM's PhiMoE always): it was refused as
    a field mha does not read (note62's lead); now its small copy weighs what transformers builds, bias and all."""
    fields = {**SMALL, "num_local_experts": 4, "num_experts_per_tok": 2, "lm_head_bias": True, "attention_bias": True}
    config = transformers.AutoConfig.for_model("phimoe", **fields)
    with warnings.catch_warnings(), torch.device("meta"):
        warnings.simplefilter("ignore")
        reference = sum(p.numel() for p in transformers.AutoModelForCausalLM.from_config(config).parameters())
    ours = import_hf_config(config.to_dict()).model
    assert ours.embeddings.lm_head_bias and count_params(ours).total == reference
    unbiased = import_hf_config({**config.to_dict(), "lm_head_bias": False}).model
    assert count_params(ours).total - count_params(unbiased).total == SMALL["vocab_size"]
