"""A recommended design as a transformers ``config.json`` (``mha recommend --out config.json --format hf``).

The model type is the transformers architecture that holds the design exactly, so that
``AutoModelForCausalLM.from_config`` builds a model with the recommendation's ``total_params``:

- MHA, GQA, MQA, dense: ``llama`` (RMSNorm, SwiGLU, RoPE, no biases, as the recommender designs); with a
  local:global window pattern (MHA028), ``ministral``: Llama's layers with transformers' ``layer_types`` and
  ``sliding_window``, whose ``architectures`` names ``MistralForCausalLM``: transformers builds the model by
  ``model_type`` (``MinistralForCausalLM``), vLLM by ``architectures``, and no vLLM or SGLang release read registers
  ``MinistralForCausalLM`` (``outputs/engine_flags/architectures.json``) while vLLM's ``MistralForCausalLM``
  (``models/llama.py``) reads ``layer_types`` from 0.10.1 (``core.engine.architectures_served.WINDOWS_FROM``);
- MoE with MHA/GQA/MQA: ``qwen3_moe`` (softmax top-k routing, QK-norm, which the recommender adds to its MoE
  designs for that reason; dense first layers as ``mlp_only_layers``; no shared experts, which are refused);
- MLA, dense or MoE: ``deepseek_v3`` (a dense MLA design sets ``first_k_dense_replace`` to every layer).

Pure Python: the dict is written as JSON; transformers is needed only to load it (tested in the dev suite).
"""

from __future__ import annotations

from typing import Any

from mha_cli.core.errors import BadInputError
from mha_cli.core.schemas import ModelSpec

HF_NOTES_KEY = "mha_notes"
"""The key a written config.json keeps recommend's notes under (the YAML's ``notes``: the rules fired, and an explicit
``--variant`` that check then judges as asked, MHA091 a warning). transformers keeps an unknown key as an attribute and vLLM ignores
it; mha reads it back (``core.sources``)."""
RMS_NORM_EPS = 1e-5
TRANSFORMERS_LAYER_TYPES = {"global": "full_attention", "local": "sliding_attention"}
"""Our layer kinds as transformers' ``layer_types`` name them (the recommender designs no chunked or linear ones)."""
LEGACY_ROPE_KEY = "rope_theta"
"""transformers 4.x's key for the RoPE base (``LlamaConfig.__init__(..., rope_theta=10000.0, rope_scaling=None)``,
e.g. transformers 4.44.2's ``configuration_llama.py``); it does not read transformers 5's ``rope_parameters``, so
without this key it builds RoPE at 10,000. vLLM from 0.12 requires ``transformers >= 4.56.0, < 5``. transformers 5
reads ``rope_parameters`` and accepts this key beside it, so the file states the base in both."""


def layer_types(model: ModelSpec) -> list[str]:
    """transformers' ``layer_types``: one name per layer."""
    return [TRANSFORMERS_LAYER_TYPES[model.layer_kind(i)] for i in range(model.n_layers)]


def hf_config(model: ModelSpec, *, max_position_embeddings: int) -> dict[str, Any]:
    """The ``config.json`` dict for ``model``; refuses a spec no supported architecture holds exactly."""
    if (
        model.attention.qkv_bias
        or model.attention.o_bias
        or model.block.mlp_bias
        or model.block.norm != "rmsnorm"
        or model.block.mlp != "gated"
    ):
        raise BadInputError("--format hf writes Llama-style designs only (RMSNorm, SwiGLU, no biases)")
    if model.embeddings.positions:
        raise BadInputError("--format hf does not write learned positions")
    positions = model.attention.alibi or model.embeddings.sinusoidal
    gpt_style = (
        model.block.parallel_residual
        or model.embeddings.normed
        or model.embeddings.lm_head_bias
        or model.attention.last_o_bias
    )
    if positions or gpt_style or not model.embeddings.final_norm or model.block.norm_placement == "post_residual":
        raise BadInputError("--format hf does not write ALiBi, sinusoidal positions or GPT-style blocks and heads")
    rope = model.rotary
    if rope is None or rope.scaling is not None or rope.partial_rotary_factor != 1 or rope.interleaved:
        raise BadInputError("--format hf writes RoPE on every head dimension, unscaled, only (the design's, MHA042)")
    windowed = model.layers.sliding_window is not None
    if windowed and (
        model.attention.mla is not None or model.block.moe is not None or model.layers.attention_chunk is not None
    ):
        raise BadInputError("--format hf writes sliding windows for dense MHA/GQA/MQA designs only (ministral)")
    common: dict[str, Any] = {
        "hidden_size": model.d_model,
        "num_hidden_layers": model.n_layers,
        "num_attention_heads": model.attention.n_heads,
        "vocab_size": model.embeddings.vocab_size,
        "max_position_embeddings": max_position_embeddings,
        "rms_norm_eps": RMS_NORM_EPS,
        "rope_parameters": {"rope_type": "default", "rope_theta": rope.theta},
        LEGACY_ROPE_KEY: rope.theta,
        "tie_word_embeddings": model.embeddings.tied,
        "hidden_act": "silu",
        "attention_bias": False,
        "dtype": "bfloat16",
    }
    if model.attention.mla is not None:
        return _deepseek_v3(model, common)
    common.update(num_key_value_heads=model.attention.n_kv_heads, head_dim=model.attention.head_dim)
    if model.block.moe is not None:
        return _qwen3_moe(model, common)
    if model.attention.qk_norm:
        raise BadInputError("--format hf: a dense design with QK-norm has no llama equivalent")
    if windowed:
        return {
            "architectures": ["MistralForCausalLM"],  # what vLLM loads it as (module docstring)
            "model_type": "ministral",
            **common,
            "intermediate_size": model.block.d_ff,
            "sliding_window": model.layers.sliding_window,
            "layer_types": layer_types(model),
        }
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        **common,
        "intermediate_size": model.block.d_ff,
        "mlp_bias": False,
    }


def _qwen3_moe(model: ModelSpec, common: dict[str, Any]) -> dict[str, Any]:
    moe = model.block.moe
    assert moe is not None
    if moe.n_shared_experts:
        raise BadInputError(
            "--format hf: qwen3_moe has no shared experts: drop --shared-experts, or write our config (--format mha)"
        )
    if not model.attention.qk_norm:
        raise BadInputError("--format hf: qwen3_moe has QK-norm on every layer")
    return {
        "architectures": ["Qwen3MoeForCausalLM"],
        "model_type": "qwen3_moe",
        **common,
        "intermediate_size": model.block.d_ff,
        "moe_intermediate_size": moe.d_ff_expert,
        "num_experts": moe.n_experts,
        "num_experts_per_tok": moe.n_active_experts,
        "decoder_sparse_step": 1,
        "mlp_only_layers": list(range(moe.n_dense_layers)),  # the first layers dense, d_ff wide
        "norm_topk_prob": True,
    }


def _deepseek_v3(model: ModelSpec, common: dict[str, Any]) -> dict[str, Any]:
    mla, moe = model.attention.mla, model.block.moe
    assert mla is not None
    experts = {
        "n_routed_experts": moe.n_experts if moe else 1,
        "num_experts_per_tok": moe.n_active_experts if moe else 1,
        "n_shared_experts": moe.n_shared_experts if moe else 0,
        "moe_intermediate_size": moe.d_ff_expert if moe else model.block.d_ff,
        "first_k_dense_replace": moe.n_dense_layers if moe else model.n_layers,
        "n_group": 1,
        "topk_group": 1,
        "norm_topk_prob": True,
        "routed_scaling_factor": 1.0,
    }
    return {
        "architectures": ["DeepseekV3ForCausalLM"],
        "model_type": "deepseek_v3",
        **common,
        "num_key_value_heads": model.attention.n_heads,
        "intermediate_size": model.block.d_ff,
        "kv_lora_rank": mla.kv_lora_rank,
        "q_lora_rank": mla.q_lora_rank,
        "qk_rope_head_dim": mla.qk_rope_head_dim,
        "qk_nope_head_dim": mla.qk_nope_head_dim,
        "v_head_dim": mla.v_head_dim,
        # no multi-token-prediction layers, in DeepSeek-V3's own field (its config.json: 1), which vLLM's
        # speculative config reads (hf_config_override: deepseek_mtp's n_predict)
        "num_nextn_predict_layers": 0,
        **experts,
    }
