"""GGUF keys that are not one config.json field each: how llama.cpp's converter (``convert_hf_to_gguf.py``) wrote
DeepSeek's MLA and router, and Gemma's layer pattern, read back into the fields of the config.json it came from.

Each reader takes (the config built so far, the ``{arch}.``-relative keys, the prefix, the origin), completes the
config in place and returns what it assumed. A key whose absence or value leaves a figure unknown is refused by
name. Pure Python.
"""

from __future__ import annotations

from typing import Any

from mha_cli.core.errors import BadInputError
from mha_cli.core.gguf import GgufArray

SOFTMAX, SIGMOID = 1, 2
"""``{arch}.expert_gating_func`` values (gguf-py ``ExpertGatingFuncType``)."""


def deepseek2(config: dict[str, Any], own: dict[str, Any], prefix: str, origin: str) -> list[str]:
    """DeepSeek-V2/V3 (and Kimi-K2, converted as ``deepseek2``): the MLA widths and the router.

    llama.cpp writes MLA as one shared KV head (``head_count_kv`` 1, ``key_length`` = kv_lora_rank +
    qk_rope_head_dim, ``value_length`` = kv_lora_rank) with the per-head widths in ``key_length_mla`` (qk_nope +
    qk_rope) and ``value_length_mla`` (v_head_dim); files converted before that (early 2025) have per-head
    ``key_length`` and ``value_length`` and as many KV heads as query heads. A sigmoid router
    (``expert_gating_func`` 2) is DeepSeek-V3's; softmax, or no such key (llama.cpp's default), DeepSeek-V2's."""
    rank = required_value(own, "attention.kv_lora_rank", prefix, origin, "the MLA latent's width")
    rope = required_value(own, "rope.dimension_count", prefix, origin, "the RoPE part of each key head")
    key = required_value(own, "attention.key_length", prefix, origin, "the key heads' width")
    value = required_value(own, "attention.value_length", prefix, origin, "the value heads' width")
    heads = config["num_attention_heads"]
    kv_heads = one_value(own.get("attention.head_count_kv", heads), f"{prefix}attention.head_count_kv", origin)
    assumed = []
    if "attention.key_length_mla" in own or "attention.value_length_mla" in own:  # MLA as one latent KV head
        key_mla = required_value(own, "attention.key_length_mla", prefix, origin, "the query-key heads' width")
        value_mla = required_value(own, "attention.value_length_mla", prefix, origin, "the value heads' width")
        if (kv_heads, key, value) != (1, rank + rope, rank):
            raise BadInputError(
                f"{origin}: {prefix}attention.head_count_kv, key_length and value_length are {kv_heads}, {key} and"
                f" {value}, not MLA's 1, {rank + rope} (kv_lora_rank + RoPE) and {rank}: a model this reader does"
                " not map"
            )
        nope, v_head_dim = key_mla - rope, value_mla
    else:  # converted before llama.cpp cached the latent: per-head K and V
        if kv_heads != heads:
            raise BadInputError(
                f"{origin}: {prefix}attention.head_count_kv is {kv_heads}, neither 1 (MLA's latent) nor the"
                f" {heads} query heads: a model this reader does not map"
            )
        nope, v_head_dim = key - rope, value
        assumed.append(
            "GGUF converted before llama.cpp cached MLA's latent (no key_length_mla): llama.cpp caches this file's"
            " per-head K and V; the KV priced here is the latent a serving engine caches (--mla-cache naive: the"
            " per-head one)"
        )
    if nope < 1:
        raise BadInputError(f"{origin}: {prefix}rope.dimension_count ({rope}) leaves no key width without RoPE")
    config.update(kv_lora_rank=rank, qk_rope_head_dim=rope, qk_nope_head_dim=nope, v_head_dim=v_head_dim)
    config.setdefault("q_lora_rank", None)  # no q_lora_rank key: q is one projection (DeepSeek-V2-Lite)
    assumed += _deepseek_router(config, own, prefix, origin)
    return assumed


def _deepseek_router(config: dict[str, Any], own: dict[str, Any], prefix: str, origin: str) -> list[str]:
    """The family by the router's scoring function, and the routing fields llama.cpp leaves out when they are off."""
    if "n_routed_experts" not in config:
        config["first_k_dense_replace"] = config["num_hidden_layers"]  # no experts: every layer dense
        return []
    required_value(own, "expert_feed_forward_length", prefix, origin, "an expert's width")
    required_value(own, "leading_dense_block_count", prefix, origin, "how many leading layers are dense")
    gating = own.get("expert_gating_func", SOFTMAX)
    if gating not in (SOFTMAX, SIGMOID):
        raise BadInputError(f"{origin}: {prefix}expert_gating_func is {gating}: a router this reader does not map")
    config["scoring_func"] = "sigmoid" if gating == SIGMOID else "softmax"
    config["norm_topk_prob"] = bool(config.get("norm_topk_prob", False))  # written only when true
    config.setdefault("routed_scaling_factor", 1.0)  # written only when set; llama.cpp scales by 1 without it
    config.setdefault("n_group", 1)
    config.setdefault("topk_group", 1)
    if gating == SIGMOID:
        config.update(model_type="deepseek_v3", architectures=["DeepseekV3ForCausalLM"], topk_method="noaux_tc")
        return ["router: sigmoid (expert_gating_func 2), DeepSeek-V3's"]
    config["topk_method"] = "group_limited_greedy" if config["n_group"] > 1 else "greedy"
    return [f"router: softmax, DeepSeek-V2's, {config['topk_method']} over {config['n_group']} expert group(s)"]


def gemma3(config: dict[str, Any], own: dict[str, Any], prefix: str, origin: str) -> list[str]:
    """Gemma 3: its sliding-window layers from ``attention.sliding_window_pattern`` when written (a period, or a
    flag per layer, true for a sliding layer), else Gemma 3's 5 local : 1 global, as llama.cpp runs it."""
    pattern = own.get("attention.sliding_window_pattern")
    if isinstance(pattern, list):
        if len(pattern) != config["num_hidden_layers"] or not all(isinstance(flag, bool) for flag in pattern):
            raise BadInputError(
                f"{origin}: {prefix}attention.sliding_window_pattern must hold one true/false per layer"
                f" ({config['num_hidden_layers']})"
            )
        config["layer_types"] = ["sliding_attention" if flag else "full_attention" for flag in pattern]
    elif pattern is not None:
        config["sliding_window_pattern"] = pattern
    return ["the vision tower, if the model has one, is in a separate mmproj GGUF file: not counted"]


def one_value(value: Any, key: str, origin: str) -> Any:
    """A key's value as one number: a per-layer list must say the same for every layer."""
    if isinstance(value, GgufArray):
        raise BadInputError(f"{origin}: {key} is a list of {value.length:,} entries: not a figure mha reads")
    if isinstance(value, list):
        if not value or any(entry != value[0] for entry in value):
            raise BadInputError(f"{origin}: {key} differs between layers ({value[:8]}...): not a model mha reads yet")
        return value[0]
    return value


def required_value(own: dict[str, Any], key: str, prefix: str, origin: str, what: str) -> Any:
    """``own[key]`` as one value, refused by name when the header leaves it out."""
    if key not in own:
        raise BadInputError(
            f"{origin}: the GGUF header has no {prefix}{key} ({what}): a figure would be a guess; give the model's"
            " config.json instead"
        )
    return one_value(own[key], prefix + key, origin)
