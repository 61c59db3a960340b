"""A GGUF file's metadata as the config.json of the same model, so one reader (``core.hf_import``) prices both.

llama.cpp's converter (``convert_hf_to_gguf.py``) writes a config.json's fields as ``{arch}.*`` keys; this module
maps them back for the architectures listed in ``ARCHITECTURES``. A key under ``{arch}.`` that is not mapped here
and may change a figure (a sliding window, shared experts, a per-layer head count that varies) is refused by name,
never ignored. The vocabulary and the tied head come from the tensor table (``token_embd.weight``'s rows; no
``output.weight``: tied), which is what the weights are. Pure Python.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, NamedTuple

from mha_cli.core import gguf_families
from mha_cli.core.errors import BadInputError
from mha_cli.core.gguf import GgufHeader
from mha_cli.core.gguf_families import one_value, required_value
from mha_cli.core.hf_cache import DOWNLOAD_TOOL

CHECKED = ("attention.value_length", "rope.dimension_count")
"""Keys read only to check they say what the mapped fields already imply (head_dim for both)."""

Finish = Callable[[dict[str, Any], dict[str, Any], str, str], list[str]]
"""(config so far, ``{arch}.``-relative keys, prefix, origin) -> assumptions: an architecture's own reading of keys
that are not one config field each (``core.gguf_families``)."""


class GgufArchitecture(NamedTuple):
    """One GGUF architecture: the config.json it stands for, and the ``{arch}.`` keys it maps to its fields."""

    model_type: str
    architecture: str
    fields: dict[str, str]
    """``{arch}.``-relative key -> config.json field."""
    activation: str = "silu"
    """The gated MLP's activation its llama.cpp graph runs (GeGLU's tanh GELU for Gemma)."""
    required: dict[str, str] | None = None
    """Keys refused by name when missing (the figure they set has no default), each with what it sets."""
    checked: tuple[str, ...] = CHECKED
    """Keys checked to equal the key heads' width."""
    finish: Finish | None = None
    """Reads the keys ``fields`` does not map one to one (DeepSeek's MLA widths, Gemma 3's layer pattern)."""
    reads: tuple[str, ...] = ()
    """Keys ``finish`` reads (not refused as unmapped)."""


_DECODER = {
    "context_length": "max_position_embeddings", "embedding_length": "hidden_size", "block_count": "num_hidden_layers",
    "feed_forward_length": "intermediate_size", "attention.head_count": "num_attention_heads",
    "attention.head_count_kv": "num_key_value_heads", "attention.layer_norm_rms_epsilon": "rms_norm_eps",
    "rope.freq_base": "rope_theta", "attention.key_length": "head_dim", "vocab_size": "vocab_size",
}  # fmt: skip
"""The keys every decoder below writes (``gguf-py`` ``Keys.LLM`` and ``Keys.Attention``)."""
_MOE = {"expert_count": "num_experts", "expert_used_count": "num_experts_per_tok"}
_GEMMA_REQUIRED = {"attention.key_length": "the heads' width, not hidden_size / heads for Gemma"}
_DEEPSEEK2 = {
    **{key: field for key, field in _DECODER.items() if key not in ("attention.head_count_kv", "attention.key_length")},
    "leading_dense_block_count": "first_k_dense_replace", "attention.q_lora_rank": "q_lora_rank",
    "expert_feed_forward_length": "moe_intermediate_size", "expert_count": "n_routed_experts",
    "expert_used_count": "num_experts_per_tok", "expert_shared_count": "n_shared_experts",
    "expert_weights_scale": "routed_scaling_factor", "expert_weights_norm": "norm_topk_prob",
    "expert_group_count": "n_group", "expert_group_used_count": "topk_group",
}  # fmt: skip
"""DeepSeek-V2/V3's keys that are one config field each; the MLA widths and the router are ``gguf_families``'."""

ARCHITECTURES = {
    "llama": GgufArchitecture("llama", "LlamaForCausalLM", {**_DECODER, **_MOE}),
    "qwen2": GgufArchitecture("qwen2", "Qwen2ForCausalLM", _DECODER),
    "qwen3": GgufArchitecture("qwen3", "Qwen3ForCausalLM", _DECODER),
    "qwen3moe": GgufArchitecture(
        "qwen3_moe", "Qwen3MoeForCausalLM",
        {**_DECODER, **_MOE, "expert_feed_forward_length": "moe_intermediate_size"},
    ),
    "gemma2": GgufArchitecture(
        "gemma2", "Gemma2ForCausalLM",
        {**_DECODER, "attention.sliding_window": "sliding_window", "attn_logit_softcapping": "attn_logit_softcapping",
         "final_logit_softcapping": "final_logit_softcapping"},
        activation="gelu_pytorch_tanh",
        required={**_GEMMA_REQUIRED, "attention.sliding_window": "the window of every other layer"},
    ),
    "gemma3": GgufArchitecture(
        "gemma3_text", "Gemma3ForCausalLM",
        {**_DECODER, "attention.sliding_window": "sliding_window", "final_logit_softcapping": "final_logit_softcapping",
         "rope.freq_base_swa": "rope_local_base_freq"},
        activation="gelu_pytorch_tanh", required=_GEMMA_REQUIRED, finish=gguf_families.gemma3,
        reads=("attention.sliding_window_pattern",),
    ),
    "deepseek2": GgufArchitecture(
        "deepseek_v2", "DeepseekV2ForCausalLM", _DEEPSEEK2, checked=(), finish=gguf_families.deepseek2,
        reads=("attention.kv_lora_rank", "rope.dimension_count", "attention.key_length", "attention.value_length",
               "attention.key_length_mla", "attention.value_length_mla", "attention.head_count_kv",
               "expert_gating_func"),
    ),
}  # fmt: skip
"""GGUF ``general.architecture`` -> the config.json it was converted from. A Llama file with experts is Mixtral;
a ``deepseek2`` file with a sigmoid router is DeepSeek-V3 (Kimi-K2 too), ``gguf_families.deepseek2``."""

UNCHANGING = (
    "rope.scaling.finetuned",
    "rope.scaling.type",
    "rope.scaling.factor",
    "rope.scaling.original_context_length",
    "rope.scaling.yarn_log_multiplier",
    "rope.scaling.yarn_beta_fast",
    "rope.scaling.yarn_beta_slow",
)
"""Keys that change no byte figure (RoPE scaling changes the positions' angles, not what is cached or stored)."""


def gguf_config(header: GgufHeader, origin: str) -> tuple[dict[str, Any], list[str]]:
    """(config.json fields, assumptions) of the model ``header`` describes; ``BadInputError`` when it cannot. Every
    architecture mapped is a gated-MLP decoder (llama.cpp's graphs for them have no other MLP)."""
    arch = header.architecture
    if arch is None:
        raise BadInputError(f"{origin}: the GGUF file has no general.architecture: it does not say what model it holds")
    known = ARCHITECTURES.get(arch)
    if known is None:
        raise BadInputError(
            f"{origin}: GGUF architecture {arch!r} is not one mha reads ({', '.join(sorted(ARCHITECTURES))}): give the"
            f" model's config.json instead (`{DOWNLOAD_TOOL} ID config.json`)"
        )
    prefix = f"{arch}."
    own = {key[len(prefix) :]: value for key, value in header.metadata.items() if key.startswith(prefix)}
    understood = (*known.fields, *known.checked, *known.reads, *UNCHANGING)
    unread = sorted(key for key in own if key not in understood)
    if unread:
        raise BadInputError(
            f"{origin}: GGUF keys mha does not read and that may change a figure: {', '.join(prefix + k for k in unread)};"
            " give the model's config.json instead"
        )
    for key, what in (known.required or {}).items():
        required_value(own, key, prefix, origin, what)
    config: dict[str, Any] = {
        "model_type": known.model_type, "architectures": [known.architecture], "hidden_act": known.activation,
    }  # fmt: skip
    for key, field in known.fields.items():
        if key in own:
            config[field] = one_value(own[key], prefix + key, origin)
    if known.model_type == "llama":
        _llama_experts(config)
    for field in ("hidden_size", "num_hidden_layers", "num_attention_heads"):
        if not isinstance(config.get(field), int) or config[field] < 1:
            key = next(k for k, f in known.fields.items() if f == field)
            raise BadInputError(
                f"{origin}: {prefix}{key} is missing or not a positive count: a corrupt or partial header"
            )
    _check_head_dims(config, own, known.checked, prefix, origin)
    assumptions = known.finish(config, own, prefix, origin) if known.finish is not None else []
    assumptions = [*_from_tensors(header, config, origin), *assumptions]
    name = header.metadata.get("general.name")
    if isinstance(name, str) and name:
        assumptions.insert(0, f"GGUF file of {name!r} (architecture {arch}, GGUF v{header.version})")
    return config, assumptions


def _llama_experts(config: dict[str, Any]) -> None:
    """A Llama file with experts is Mixtral (llama.cpp converts Mixtral to architecture ``llama``)."""
    experts = config.pop("num_experts", 0)
    used = config.pop("num_experts_per_tok", 0)
    if experts:
        config.update(
            model_type="mixtral", architectures=["MixtralForCausalLM"], num_local_experts=experts,
            num_experts_per_tok=used,
        )  # fmt: skip


def _check_head_dims(
    config: dict[str, Any], own: dict[str, Any], checked: tuple[str, ...], prefix: str, origin: str
) -> None:
    """Value heads and the rotary span as wide as the key heads, as the mapped decoders have them."""
    head_dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    for key in checked:
        if key in own and one_value(own[key], prefix + key, origin) != head_dim:
            raise BadInputError(
                f"{origin}: {prefix}{key} is {own[key]}, not the key heads' {head_dim}: a model this reader does not map"
            )


def _from_tensors(header: GgufHeader, config: dict[str, Any], origin: str) -> list[str]:
    """The vocabulary (``token_embd.weight``'s rows) and the tied head (no ``output.weight``), from the table."""
    tensors = {tensor.name: tensor for tensor in header.tensors}
    embedding = tensors.get("token_embd.weight")
    if embedding is None:
        raise BadInputError(f"{origin}: the GGUF file has no token_embd.weight: not a decoder this reader maps")
    rows = embedding.shape[0]
    stated = config.get("vocab_size")
    if stated is not None and stated != rows:
        raise BadInputError(f"{origin}: vocab_size says {stated:,} and token_embd.weight has {rows:,} rows")
    config["vocab_size"] = rows
    config["tie_word_embeddings"] = "output.weight" not in tensors
    config["torch_dtype"] = "bfloat16"
    head = "tied to the embedding" if config["tie_word_embeddings"] else "output.weight"
    return [f"vocabulary {rows:,} (token_embd.weight's rows); head {head}"]


def type_mix(header: GgufHeader) -> str:
    """The file's ggml types by share of its bytes, largest first: ``Q4_K 71%, Q6_K 25%, F32 4%``."""
    by_type: dict[str, int] = {}
    for tensor in header.tensors:
        by_type[tensor.ggml_type.name] = by_type.get(tensor.ggml_type.name, 0) + tensor.bytes
    total = sum(by_type.values()) or 1
    ranked = sorted(by_type.items(), key=lambda item: -item[1])
    return ", ".join(f"{name} {100 * size / total:.0f}%" for name, size in ranked)


TENSOR_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern))
    for kind, pattern in (
        ("embedding", r"^token_embd\."), ("head", r"^output\.weight$"), ("rotary", r"^rope_freqs\."),
        ("norms", r"_norm\.(?:weight|bias)$"), ("router", r"\.(?:ffn_gate_inp|exp_probs_b)\."), ("experts", r"\.ffn_\w+_exps\."),
        ("shared_experts", r"\.ffn_\w+_shexp\."), ("mlp", r"\.ffn_(?:gate|up|down)\."), ("attention", r"\.attn_\w+\."),
    )
)  # fmt: skip
"""llama.cpp's tensor names (``gguf-py`` ``TENSOR_NAMES``) as the checkpoint headers' kinds
(``core.checkpoint_headers.KIND_NAMES``), first match wins."""
LINEAR_KINDS = ("attention", "mlp", "experts", "shared_experts")


def gguf_tensor_kind(name: str) -> str:
    """The kind of the GGUF tensor called ``name`` (``TENSOR_KINDS``; ``other`` when none matches)."""
    return next((kind for kind, pattern in TENSOR_KINDS if pattern.search(name)), "other")


def nearest_format(header: GgufHeader) -> str:
    """The named weight format nearest the file's linear layers (bits per value over them): bf16 from 12 bits, int8
    from 6 (Q6_K's 6.56 is nearer int8's 8.x than int4's 4.x), else int4. It sets how tensor parallelism shares the bytes and what the cost model reads per value."""
    values = stored = 0
    for tensor in header.tensors:
        if gguf_tensor_kind(tensor.name) in LINEAR_KINDS:
            values += tensor.values
            stored += tensor.bytes
    bits = 8 * stored / values if values else 16.0
    return "bf16" if bits >= 12 else "int8" if bits >= 6 else "int4"
