"""Read a Hugging Face ``config.json`` into a ``ModelSpec``, saying what it had to assume.

Rules the common calculators get wrong, handled here:
- an explicit ``head_dim`` wins over hidden_size / num_attention_heads (Gemma, Qwen3, Mistral NeMo);
- MQA flags (Falcon's ``multi_query``) and missing ``num_key_value_heads`` (MHA);
- MLA fields (``kv_lora_rank``, ``qk_rope_head_dim`` ...) make the model MLA, not MHA;
- sliding windows: ``layer_types`` when present, else the family's pattern field
  (``sliding_window_pattern``), else the family's known layout (Gemma 2 alternates);
- multimodal configs (Gemma 3) keep the language model under ``text_config``.
An unknown ``model_type`` still works when the standard fields are present; every default the
importer fills in is listed in ``ImportedModel.assumptions``.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from mha_cli.core.errors import BadInputError
from mha_cli.core.record import Record
from mha_cli.core.schemas import LayerKind, ModelSpec
from mha_cli.core.validation import describe_validation_error

KNOWN_MODEL_TYPES = {
    "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "gemma", "gemma2", "gemma3",
    "gemma3_text", "falcon", "gpt_oss", "deepseek_v2", "deepseek_v3", "phi3", "gpt2", "starcoder2", "olmo2",
}  # fmt: skip

# Older names of a family, as early config.json files spell them.
_FAMILY_ALIASES = {"RefinedWebModel": "falcon", "RefinedWeb": "falcon"}

_GATED_ACTIVATIONS = {"silu", "swiglu", "gelu_pytorch_tanh", "geglu"}


class ImportedModel(Record):
    """A model read from a config.json and the defaults that were assumed on the way."""

    model: ModelSpec
    model_type: str
    assumptions: list[str]


class _Reader:
    """Looks up the first present key among aliases and records what it had to assume."""

    def __init__(self, config: dict[str, Any], origin: str) -> None:
        self.config = config
        self.origin = origin
        self.assumptions: list[str] = []

    def get(self, *keys: str) -> Any:
        for key in keys:
            if self.config.get(key) is not None:
                return self.config[key]
        return None

    def require(self, what: str, *keys: str) -> Any:
        value = self.get(*keys)
        if value is None:
            raise BadInputError(f"{self.origin} has no {what} (looked for {', '.join(keys)})")
        return value

    def count(self, what: str, *keys: str) -> int:
        """A required positive whole number (``32`` or ``32.0``; not ``32.5``, ``0`` or ``"32"``)."""
        value = self.require(what, *keys)
        whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
        if isinstance(value, bool) or not whole or value <= 0:
            key = next(k for k in keys if self.config.get(k) is not None)
            raise BadInputError(f"{self.origin}: {key} must be a positive whole number, got {value!r}")
        return int(value)

    def assume(self, value: Any, note: str) -> Any:
        self.assumptions.append(note)
        return value


_HF_MARKERS = ("model_type", "architectures", "text_config", "hidden_size", "num_attention_heads", "n_head", "n_embd")


def looks_like_hf_config(data: dict[str, Any]) -> bool:
    """True for a Hugging Face config.json (as opposed to our own config file)."""
    return any(key in data for key in _HF_MARKERS)


def _layer_pattern(r: _Reader, model_type: str, n_layers: int) -> list[LayerKind] | None:
    layer_types = r.get("layer_types")
    if layer_types:
        if len(layer_types) != n_layers:
            raise BadInputError(f"layer_types has {len(layer_types)} entries but num_hidden_layers is {n_layers}")
        return ["local" if "sliding" in str(kind) else "global" for kind in layer_types]
    every_nth_global = r.get("sliding_window_pattern")
    if every_nth_global:
        period = r.count("sliding_window_pattern", "sliding_window_pattern")
        return ["local"] * (period - 1) + ["global"]
    if model_type == "gemma2":
        return r.assume(["local", "global"], "layer pattern: Gemma 2 alternates sliding-window and global layers")
    if model_type == "gemma3_text" or model_type == "gemma3":
        return r.assume(["local"] * 5 + ["global"], "layer pattern: Gemma 3 runs 5 local : 1 global")
    if model_type == "gpt_oss":
        return r.assume(["local", "global"], "layer pattern: gpt-oss alternates sliding-window and global layers")
    return None


def _sliding_window(r: _Reader) -> int | None:
    if r.get("use_sliding_window") is False:
        return None
    window = r.get("sliding_window")
    return r.count("sliding window", "sliding_window") if window else None


def _mla(r: _Reader) -> dict[str, Any] | None:
    rank = r.get("kv_lora_rank")
    if rank is None:
        return None
    return {
        "kv_lora_rank": rank,
        "qk_rope_head_dim": r.get("qk_rope_head_dim") or 0,
        "qk_nope_head_dim": r.require("qk_nope_head_dim (MLA)", "qk_nope_head_dim"),
        "v_head_dim": r.require("v_head_dim (MLA)", "v_head_dim"),
        "q_lora_rank": r.get("q_lora_rank"),
        "rope_interleave": r.get("rope_interleave") is not False,  # DeepSeek-V2 always, V3 by default
    }


def _moe(r: _Reader, n_layers: int) -> dict[str, Any] | None:
    n_experts = r.get("n_routed_experts", "num_local_experts", "num_experts")
    if not n_experts:
        return None
    d_ff_expert = r.get("moe_intermediate_size")
    if d_ff_expert is None:
        d_ff_expert = r.require("intermediate_size", "intermediate_size")
    return {
        "n_experts": n_experts,
        "n_active_experts": r.require("experts per token", "num_experts_per_tok", "num_experts_per_token"),
        "n_shared_experts": r.get("n_shared_experts") or (1 if r.get("shared_expert_intermediate_size") else 0),
        "d_ff_expert": d_ff_expert,
        "d_ff_shared": r.get("shared_expert_intermediate_size"),
        "n_dense_layers": min(n_layers, r.get("first_k_dense_replace") or _leading_dense_layers(r, n_layers)),
        "expert_bias": r.get("model_type") == "gpt_oss",
        "shared_expert_gate": r.get("model_type") == "qwen2_moe" and bool(r.get("shared_expert_intermediate_size")),
        **_routing(r, str(r.get("model_type"))),
    }


def _leading_dense_layers(r: _Reader, n_layers: int) -> int:
    """Qwen-MoE's dense layers (``mlp_only_layers``, ``decoder_sparse_step``) when they lead the stack.

    Other layouts (dense layers in the middle, every other layer sparse) are not modelled: every
    layer after the leading dense ones is read as MoE, and the assumption says so.
    """
    step = r.get("decoder_sparse_step") or 1
    dense = sorted(set(r.get("mlp_only_layers") or []) | {i for i in range(n_layers) if (i + 1) % step})
    leading = next((i for i in range(n_layers + 1) if i not in dense), n_layers)
    if len(dense) > leading:
        r.assumptions.append(
            f"dense MLP layers {dense} (mlp_only_layers / decoder_sparse_step) are not all leading:"
            f" read as {leading} leading dense layers, the rest MoE"
        )
    return leading


# Routing as each family's transformers module does it, where its config.json leaves a field out.
# DeepSeek-V3 always routes by sigmoid with noaux_tc; Mixtral always renormalises the top k.
_ROUTING_DEFAULTS: dict[str, dict[str, Any]] = {
    "deepseek_v3": {"scoring_func": "sigmoid", "topk_method": "noaux_tc", "norm_topk_prob": True,
                    "routed_scaling_factor": 2.5, "n_group": 8, "topk_group": 4},
    "deepseek_v2": {"scoring_func": "softmax", "topk_method": "greedy", "norm_topk_prob": False},
    "qwen2_moe": {"norm_topk_prob": False},
    "qwen3_moe": {"norm_topk_prob": False},
    "mixtral": {"norm_topk_prob": True},
}  # fmt: skip
_ROUTING_FIXED = {"deepseek_v3": ("scoring_func", "topk_method"), "mixtral": ("norm_topk_prob",)}


def _routing(r: _Reader, model_type: str) -> dict[str, Any]:
    """MoESpec's routing fields: the config's values, else the family's transformers defaults."""
    defaults = _ROUTING_DEFAULTS.get(model_type, {})
    routing: dict[str, Any] = {}
    for key in ("scoring_func", "topk_method", "norm_topk_prob", "routed_scaling_factor", "n_group", "topk_group"):
        value = r.get(key)
        if key in _ROUTING_FIXED.get(model_type, ()) or value is None:
            value = defaults.get(key)
        if value is not None:
            routing[key] = value
    return routing


_ROPE_SCALING_FIELDS = (
    "factor", "original_max_position_embeddings", "low_freq_factor", "high_freq_factor",
    "beta_fast", "beta_slow", "mscale", "mscale_all_dim", "attention_factor", "truncate",
)  # fmt: skip


def _rope_parameters(r: _Reader) -> dict[str, Any]:
    """rope_theta, partial_rotary_factor and the scaling block, from either layout of config.json.

    transformers 5 writes ``rope_parameters`` (theta and scaling in one dict, per layer type for
    Gemma 3); older files have ``rope_theta`` beside ``rope_scaling``.
    """
    params = r.get("rope_parameters")
    if isinstance(params, dict) and all(isinstance(v, dict) for v in params.values()) and params:
        kind = "full_attention" if "full_attention" in params else next(iter(params))
        r.assumptions.append(f"rope_parameters per layer type: the {kind} layers' RoPE is used for every layer")
        params = params[kind]
    merged: dict[str, Any] = dict(params) if isinstance(params, dict) else {}
    if isinstance(r.get("rope_scaling"), dict):
        merged = {**r.get("rope_scaling"), **merged}
    for key in ("rope_theta", "partial_rotary_factor"):
        if merged.get(key) is None and r.get(key) is not None:
            merged[key] = r.get(key)
    return merged


def _rope(r: _Reader, model_type: str) -> dict[str, Any] | None:
    """The spec's ``rope`` block; ``None`` for learned or ALiBi positions."""
    if model_type == "gpt2":
        return None
    if r.get("alibi"):
        r.assumptions.append(
            "alibi: ALiBi position biases are not modelled; the built decoder applies RoPE (theta 10,000)"
        )
        return None
    params = _rope_parameters(r)
    theta = params.get("rope_theta")
    if theta is None:
        theta = r.assume(10000.0, "rope_theta absent: 10,000 (the RoPE default)")
    rope: dict[str, Any] = {"theta": float(theta)}
    if params.get("partial_rotary_factor") is not None:
        rope["partial_rotary_factor"] = float(params["partial_rotary_factor"])
    kind = params.get("rope_type", params.get("type"))
    if kind in (None, "default"):
        return rope
    if kind not in ("linear", "llama3", "yarn"):
        r.assumptions.append(f"rope_scaling type {kind!r} is not modelled: unscaled RoPE frequencies")
        return rope
    scaling = {key: params[key] for key in _ROPE_SCALING_FIELDS if params.get(key) is not None}
    if kind == "yarn" and "factor" not in scaling and scaling.get("original_max_position_embeddings"):
        context = r.require("max_position_embeddings (yarn)", "max_position_embeddings")
        scaling["factor"] = context / scaling["original_max_position_embeddings"]
    rope["scaling"] = {"type": kind, **scaling}
    return rope


def _norm_eps(r: _Reader) -> float | None:
    eps = r.get("rms_norm_eps", "layer_norm_epsilon", "layer_norm_eps", "norm_epsilon")
    return None if eps is None else float(eps)


def _kv_heads(r: _Reader, model_type: str, n_heads: int) -> int:
    if model_type == "falcon":
        if r.get("new_decoder_architecture"):  # Falcon-40B/180B: grouped KV heads
            if r.get("num_kv_heads", "n_head_kv") is None:
                return r.assume(n_heads, "num_kv_heads absent: one KV head per query head (the falcon default)")
            return r.count("num_kv_heads", "num_kv_heads", "n_head_kv")
        if r.get("multi_query") is None:
            return r.assume(1, "multi_query absent: MQA, the falcon default")
    if r.get("multi_query"):
        return 1
    n_kv = r.get("num_key_value_heads", "num_kv_heads")
    if n_kv is None:
        return r.assume(n_heads, "num_key_value_heads absent: MHA (one KV head per query head)")
    return r.count("num_key_value_heads", "num_key_value_heads", "num_kv_heads")


def _family_layout(model_type: str) -> dict[str, Any]:
    """Facts a family's config.json does not spell out: MLP kind, norms, biases, tying."""
    if model_type == "gpt2":
        return {"mlp": "plain", "mlp_bias": True, "norm": "layernorm", "qkv_bias": True, "o_bias": True}
    if model_type == "falcon":
        return {"mlp": "plain", "norm": "layernorm", "n_norms_per_layer": 1}
    if model_type in ("gemma2", "gemma3", "gemma3_text"):
        return {"n_norms_per_layer": 4, "qk_norm": model_type != "gemma2"}
    if model_type in ("qwen3", "qwen3_moe"):
        return {"qk_norm": True}
    if model_type in ("qwen2", "qwen2_moe"):
        return {"qkv_bias": True}
    if model_type == "gpt_oss":
        return {"qkv_bias": True, "o_bias": True}
    return {}


_TIED_BY_DEFAULT = {"gpt2", "gemma", "gemma2", "gemma3", "gemma3_text", "falcon"}


def import_hf_config(config: dict[str, Any], *, name: str = "hf-model", origin: str = "config.json") -> ImportedModel:
    """Build a ``ModelSpec`` from a parsed config.json (read from ``origin``); ``BadInputError`` if it cannot."""
    if isinstance(config.get("text_config"), dict):
        config = {
            **config["text_config"],
            "model_type": config["text_config"].get("model_type", config.get("model_type")),
        }
    r = _Reader(config, origin)
    model_type = str(r.get("model_type") or "unknown")
    if model_type in _FAMILY_ALIASES:
        r.assumptions.append(f"model_type {model_type!r} read as {_FAMILY_ALIASES[model_type]!r}")
        model_type = _FAMILY_ALIASES[model_type]
    if model_type not in KNOWN_MODEL_TYPES:
        r.assumptions.append(f"model_type {model_type!r} is not a known family: read the standard fields only")

    d_model = r.count("hidden size", "hidden_size", "n_embd", "d_model")
    n_layers = r.count("layer count", "num_hidden_layers", "n_layer", "num_layers")
    n_heads = r.count("attention head count", "num_attention_heads", "n_head")
    vocab = r.require("vocabulary size", "vocab_size")
    layout = _family_layout(model_type)

    d_ff = r.get("intermediate_size", "n_inner", "ffn_hidden_size")
    if d_ff is None:
        d_ff = r.assume(4 * d_model, f"intermediate_size absent: 4 * hidden_size = {4 * d_model}")
    if "mlp" not in layout:
        activation = str(r.get("hidden_act", "hidden_activation", "activation_function") or "silu")
        layout["mlp"] = "gated" if activation in _GATED_ACTIVATIONS else "plain"
        if r.get("hidden_act", "hidden_activation", "activation_function") is None:
            r.assumptions.append("hidden_act absent: gated (SwiGLU) MLP")

    tied = r.get("tie_word_embeddings")
    if tied is None:
        if model_type in KNOWN_MODEL_TYPES:
            tied = model_type in _TIED_BY_DEFAULT
            default = f"the {model_type} default"
        else:
            tied, default = True, "transformers' PretrainedConfig default"
        r.assumptions.append(f"tie_word_embeddings absent: {'tied' if tied else 'untied'}, {default}")

    fields: dict[str, Any] = {
        "name": name,
        "source": f"Hugging Face config.json (model_type {model_type})",
        "d_model": d_model,
        "n_layers": n_layers,
        "n_heads": n_heads,
        "vocab_size": vocab,
        "d_ff": d_ff,
        "tied_embeddings": tied,
        "position_embeddings": (r.get("n_positions") or 0) if model_type == "gpt2" else 0,
        "context_length": r.get("max_position_embeddings", "n_positions", "max_sequence_length"),
        **layout,
    }
    if r.get("attention_bias") is not None:
        fields["qkv_bias"] = fields["o_bias"] = bool(r.get("attention_bias"))
    if model_type == "falcon" and r.get("bias"):
        fields["qkv_bias"] = fields["o_bias"] = fields["mlp_bias"] = True

    mla = _mla(r)
    if mla is not None:
        fields["mla"] = mla
    else:
        fields["n_kv_heads"] = _kv_heads(r, model_type, n_heads)
        head_dim = r.get("head_dim")
        if head_dim is not None:
            fields["head_dim"] = head_dim
        elif d_model % n_heads == 0:
            r.assumptions.append(f"head_dim absent: hidden_size / num_attention_heads = {d_model // n_heads}")

    window = _sliding_window(r)
    if window:
        fields["sliding_window"] = window
        pattern = _layer_pattern(r, model_type, n_layers)
        if pattern and "local" not in pattern:
            fields.pop("sliding_window")
        elif pattern and "global" in pattern:
            fields["layer_pattern"] = _shortest_cycle(pattern)

    moe = _moe(r, n_layers)
    if moe is not None:
        fields["moe"] = moe
    rope = _rope(r, model_type)
    if rope is not None:
        fields["rope"] = rope
    if _norm_eps(r) is not None:
        fields["norm_eps"] = _norm_eps(r)
    try:
        model = ModelSpec.model_validate(fields)
    except ValidationError as exc:
        raise BadInputError(f"{origin} describes an invalid model: {describe_validation_error(exc)}") from exc
    return ImportedModel(model=model, model_type=model_type, assumptions=r.assumptions)


def _shortest_cycle(pattern: list[LayerKind]) -> list[LayerKind]:
    """The shortest prefix that repeats to ``pattern`` (a full list when nothing repeats)."""
    n = len(pattern)
    for period in range(1, n + 1):
        if all(pattern[i] == pattern[i % period] for i in range(n)):
            return pattern[:period]
    return pattern  # pragma: no cover - period n always matches
