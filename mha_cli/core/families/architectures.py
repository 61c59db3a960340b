"""Families by the class a config.json's ``architectures`` names, as vLLM's model registry resolves them.

vLLM picks a model's implementation by ``architectures`` (``vllm/model_executor/models/registry.py``), not by
``model_type``: Kimi-K2 (``model_type: kimi_k2``) is served as ``DeepseekV3ForCausalLM``, a fine-tune that renames
its ``model_type`` as the class it names. ``core.hf_import`` reads such a config as the family of its architecture
when its ``model_type`` is no family's, and says so. Pure Python.

``ARCHITECTURES`` holds each registered family's causal-LM class as transformers names it
(``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES``; a class several model types share maps to the family that defines it) and
the older names vLLM's registry also accepts for the same implementation. ``tests/test_family_architectures.py``
checks it against the installed transformers.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from mha_cli.core.families import Family, family

ARCHITECTURES: dict[str, str] = {
    # transformers' causal-LM class of each registered family -> its model_type
    "ApertusForCausalLM": "apertus", "ArceeForCausalLM": "arcee", "AXK1ForCausalLM": "axk1", "AXK2ForCausalLM": "axk2",
    "BambaForCausalLM": "bamba", "BeamForCausalLM": "beam", "BertLMHeadModel": "bert",
    "BertGenerationDecoder": "bert-generation", "BigBirdForCausalLM": "big_bird", "BioGptForCausalLM": "biogpt",
    "BloomForCausalLM": "bloom", "CamembertForCausalLM": "camembert", "CodeGenForCausalLM": "codegen",
    "CohereForCausalLM": "cohere", "Cohere2ForCausalLM": "cohere2", "Cohere2MoeForCausalLM": "cohere2_moe",
    "CTRLLMHeadModel": "ctrl", "CwmForCausalLM": "cwm", "Data2VecTextForCausalLM": "data2vec-text",
    "DeepseekV2ForCausalLM": "deepseek_v2", "DeepseekV3ForCausalLM": "deepseek_v3",
    "DeepseekV32ForCausalLM": "deepseek_v32", "ElectraForCausalLM": "electra", "ErnieForCausalLM": "ernie",
    "Ernie4_5ForCausalLM": "ernie4_5", "Ernie4_5_MoeForCausalLM": "ernie4_5_moe", "Exaone4ForCausalLM": "exaone4",
    "ExaoneMoeForCausalLM": "exaone_moe", "FalconForCausalLM": "falcon", "FalconH1ForCausalLM": "falcon_h1",
    "FlexOlmoForCausalLM": "flex_olmo", "FlintForCausalLM": "flint", "GemmaForCausalLM": "gemma",
    "Gemma2ForCausalLM": "gemma2", "Gemma3ForConditionalGeneration": "gemma3", "Gemma3ForCausalLM": "gemma3_text",
    "Gemma3nForConditionalGeneration": "gemma3n", "Gemma3nForCausalLM": "gemma3n_text",
    "Gemma4ForConditionalGeneration": "gemma4", "Gemma4ForCausalLM": "gemma4_text",
    "Gemma4UnifiedForConditionalGeneration": "gemma4_unified", "Gemma4UnifiedForCausalLM": "gemma4_unified_text",
    "GlmForCausalLM": "glm",
    "Glm4ForCausalLM": "glm4", "Glm4MoeForCausalLM": "glm4_moe", "Glm4MoeLiteForCausalLM": "glm4_moe_lite",
    "GlmMoeDsaForCausalLM": "glm_moe_dsa", "GPT2LMHeadModel": "gpt2", "GPTBigCodeForCausalLM": "gpt_bigcode",
    "GPTNeoForCausalLM": "gpt_neo", "GPTNeoXForCausalLM": "gpt_neox",
    "GPTNeoXJapaneseForCausalLM": "gpt_neox_japanese", "GptOssForCausalLM": "gpt_oss", "GPTJForCausalLM": "gptj",
    "GraniteForCausalLM": "granite", "GraniteSWAForCausalLM": "granite_swa", "GraniteMoeForCausalLM": "granitemoe",
    "GraniteMoeSWAForCausalLM": "granitemoe_swa", "GraniteMoeHybridForCausalLM": "granitemoehybrid",
    "HeliumForCausalLM": "helium", "HunYuanDenseV1ForCausalLM": "hunyuan_v1_dense",
    "HunYuanMoEV1ForCausalLM": "hunyuan_v1_moe", "HYV3ForCausalLM": "hy_v3", "HyperCLOVAXForCausalLM": "hyperclovax",
    "Jais2ForCausalLM": "jais2", "JambaForCausalLM": "jamba", "KimiLinearForCausalLM": "kimi_linear",
    "Kolibri1ForCausalLM": "kolibri1", "LagunaForCausalLM": "laguna", "Lfm2ForCausalLM": "lfm2",
    "LlamaForCausalLM": "llama", "Llama4ForCausalLM": "llama4_text", "MegatronBertForCausalLM": "megatron-bert",
    "xLSTMForCausalLM": "xlstm", "RwkvForCausalLM": "rwkv", "MambaForCausalLM": "mamba", "Mamba2ForCausalLM": "mamba2", "FalconMambaForCausalLM": "falcon_mamba",
    "MellumForCausalLM": "mellum", "MiMoV2FlashForCausalLM": "mimo_v2_flash", "MiniCPM3ForCausalLM": "minicpm3",
    "MiniMaxForCausalLM": "minimax", "MiniMaxM2ForCausalLM": "minimax_m2", "MinistralForCausalLM": "ministral",
    "Ministral3ForCausalLM": "ministral3", "MistralForCausalLM": "mistral", "MixtralForCausalLM": "mixtral",
    "ModernBertDecoderForCausalLM": "modernbert-decoder", "MptForCausalLM": "mpt", "NemotronForCausalLM": "nemotron",
    "NemotronHForCausalLM": "nemotron_h", "OlmoForCausalLM": "olmo", "Olmo2ForCausalLM": "olmo2",
    "Olmo3ForCausalLM": "olmo3", "OlmoeForCausalLM": "olmoe", "OpenAIGPTLMHeadModel": "openai-gpt",
    "OPTForCausalLM": "opt", "PersimmonForCausalLM": "persimmon", "PhiForCausalLM": "phi", "Phi3ForCausalLM": "phi3",
    "PhimoeForCausalLM": "phimoe", "Qwen2ForCausalLM": "qwen2", "Qwen2MoeForCausalLM": "qwen2_moe",
    "Qwen3ForCausalLM": "qwen3", "Qwen3_5ForCausalLM": "qwen3_5_text", "Qwen3_5MoeForCausalLM": "qwen3_5_moe_text",
    "Qwen3MoeForCausalLM": "qwen3_moe", "Qwen3NextForCausalLM": "qwen3_next", "RemBertForCausalLM": "rembert",
    "RobertaForCausalLM": "roberta", "RobertaPreLayerNormForCausalLM": "roberta-prelayernorm",
    "RoCBertForCausalLM": "roc_bert", "RoFormerForCausalLM": "roformer", "SeedOssForCausalLM": "seed_oss",
    "SmolLM3ForCausalLM": "smollm3", "SolarOpenForCausalLM": "solar_open", "StableLmForCausalLM": "stablelm",
    "Starcoder2ForCausalLM": "starcoder2", "VaultGemmaForCausalLM": "vaultgemma", "XGLMForCausalLM": "xglm",
    "XLMRobertaForCausalLM": "xlm-roberta", "XLMRobertaXLForCausalLM": "xlm-roberta-xl", "XmodForCausalLM": "xmod",
    "YoutuForCausalLM": "youtu",
    # older names vLLM's registry (_TEXT_GENERATION_MODELS) serves with the same implementation
    "LLaMAForCausalLM": "llama", "AquilaModel": "llama", "AquilaForCausalLM": "llama",
    "InternLMForCausalLM": "llama", "XverseForCausalLM": "llama", "InternLM3ForCausalLM": "internlm3",
    "IQuestCoderForCausalLM": "iquestcoder", "ExaoneForCausalLM": "exaone", "ExaoneMoEForCausalLM": "exaone_moe",
    "RWForCausalLM": "falcon", "MPTForCausalLM": "mpt", "StableLMEpochForCausalLM": "stablelm",
    "PhiMoEForCausalLM": "phimoe", "MiniMaxText01ForCausalLM": "minimax", "MiniMaxM1ForCausalLM": "minimax",
    # multimodal wrappers whose text_config is a registered family (vLLM serves each under this class)
    "Qwen2VLForConditionalGeneration": "qwen2_vl", "Qwen2_5_VLForConditionalGeneration": "qwen2_5_vl",
    "Qwen3VLForConditionalGeneration": "qwen3_vl", "Qwen3VLMoeForConditionalGeneration": "qwen3_vl_moe",
}  # fmt: skip
"""Architecture class -> the ``model_type`` of the registered family that reads its configs."""


class ByArchitecture(NamedTuple):
    """The family an ``architectures`` entry names."""

    family: Family
    model_type: str
    """The ``model_type`` the config is read as (``deepseek_v3``)."""
    architecture: str
    """The entry that named it (``DeepseekV3ForCausalLM``)."""


def family_of_architectures(architectures: Any) -> ByArchitecture | None:
    """The registered family of the first of ``architectures`` (a config.json's list) that names one; None if none
    does (or the field is not a list of names)."""
    if not isinstance(architectures, list):
        return None
    for name in architectures:
        model_type = ARCHITECTURES.get(name) if isinstance(name, str) else None
        found = family(model_type) if model_type is not None else None
        if found is not None:
            return ByArchitecture(found, model_type, name)
    return None
