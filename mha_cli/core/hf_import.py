"""Read a Hugging Face ``config.json`` into a ``ModelSpec``, saying what it had to assume.

Rules the common calculators get wrong, handled here:
- an explicit ``head_dim`` wins over hidden_size / num_attention_heads (Gemma, Qwen3, Mistral NeMo);
- MQA flags (Falcon's ``multi_query``) and missing ``num_key_value_heads`` (MHA);
- MLA fields (``kv_lora_rank``, ``qk_rope_head_dim`` ...) make the model MLA, not MHA;
- sliding windows: ``layer_types`` when present, else the family's pattern field
  (``sliding_window_pattern``), else the family's known layout (Gemma 2 alternates);
- multimodal configs (Gemma 3) keep the language model under ``text_config``;
- Qwen2/Qwen3 slide only the layers from ``max_window_layers`` on;
- layer kinds (``LayerKinds`` section): chunked local attention (Llama-4), linear-attention and state-space
  layers with a fixed per-sequence state (Qwen3-Next, Jamba, Falcon-H1, Granite-4.0-H, MiniMax, Kimi-Linear),
  DeepSeek-V3.2's indexer key, K/V shared across layers (Gemma-3n).
A field a family's config.json leaves out takes the default of that family's transformers config class
(``FAMILY_DEFAULTS``: gemma-3-4b-it's ``text_config`` has no head counts). An unknown ``model_type`` still works
when the standard fields are present; every default the importer fills in is listed in
``ImportedModel.assumptions``.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from mha_cli.core.errors import BadInputError
from mha_cli.core.record import Record
from mha_cli.core.schemas import _MAX_LAYERS as MAX_LAYERS  # ModelSpec's bound, checked before lists are built
from mha_cli.core.schemas import LayerKind, ModelSpec
from mha_cli.core.validation import describe_validation_error

KNOWN_MODEL_TYPES = {
    "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "gemma", "gemma2", "gemma3",
    "gemma3_text", "falcon", "gpt_oss", "deepseek_v2", "deepseek_v3", "phi3", "gpt2", "starcoder2", "olmo2",
    "deepseek_v32", "llama4", "llama4_text", "qwen3_next", "jamba", "falcon_h1", "granitemoehybrid", "minimax",
    "kimi_linear", "gemma3n", "gemma3n_text", "cohere2", "smollm3", "qwen3_5", "qwen3_5_text", "qwen3_5_moe",
    "qwen3_5_moe_text", "ministral", "mpt", "gpt_neo", "xglm", "hunyuan_v1_moe",
}  # fmt: skip

# Older names of a family, as early config.json files spell them.
_FAMILY_ALIASES = {
    "RefinedWebModel": "falcon",
    "RefinedWeb": "falcon",
    "minimax_text_01": "minimax",
    "minimax_m1": "minimax",
}

_GATED_ACTIVATIONS = {"silu", "swiglu", "gelu_pytorch_tanh", "geglu"}


class ImportedModel(Record):
    """A model read from a config.json and the defaults that were assumed on the way."""

    model: ModelSpec
    model_type: str
    assumptions: list[str]


class _Reader:
    """Looks up the first present key among aliases and records what it had to assume."""

    def __init__(self, config: dict[str, Any], origin: str, defaults: tuple[str, dict[str, Any]] | None = None) -> None:
        self.config = config
        self.origin = origin
        self.assumptions: list[str] = []
        self.defaults_from, self.defaults = defaults or ("", {})

    def get(self, *keys: str) -> Any:
        """The first of ``keys`` the config sets; else the family's transformers default for it (said once)."""
        for key in keys:
            if self.config.get(key) is not None:
                return self.config[key]
        for key in keys:
            if self.defaults.get(key) is not None:
                value = self.defaults[key]
                self.assume(value, f"{key} absent: {value!r}, the {self.defaults_from} default")
                return value
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
            key = next((k for k in keys if self.config.get(k) is not None), keys[0])
            raise BadInputError(f"{self.origin}: {key} must be a positive whole number, got {value!r}")
        return int(value)

    def assume(self, value: Any, note: str) -> Any:
        if note not in self.assumptions:
            self.assumptions.append(note)
        return value


_HF_MARKERS = ("model_type", "architectures", "text_config", "hidden_size", "num_attention_heads", "n_head", "n_embd")


def looks_like_hf_config(data: dict[str, Any]) -> bool:
    """True for a Hugging Face config.json (as opposed to our own config file)."""
    return any(key in data for key in _HF_MARKERS)


def _layer_pattern(r: _Reader, model_type: str, n_layers: int) -> list[LayerKind] | None:
    """Each layer's kind when the config (or the family's known layout) says; ``None``: one kind for all."""
    listed = _listed_layer_kinds(r, model_type, n_layers)
    if listed is not None:
        return listed
    family = _family_layer_kinds(r, model_type, n_layers)
    if family is not None:
        return family
    every_nth_global = r.get("sliding_window_pattern")
    if every_nth_global:
        period = r.count("sliding_window_pattern", "sliding_window_pattern")
        return ["local"] * (period - 1) + ["global"] if period <= n_layers else ["local"] * n_layers  # bounded
    if model_type == "cohere2":
        return r.assume(["local"] * 3 + ["global"], "layer pattern: Cohere2 runs 3 local : 1 global (Cohere2Config)")
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


def _kinds_fields(kinds: list[LayerKind] | None, window: int | None, chunk: int | None) -> dict[str, Any]:
    """``sliding_window``, ``attention_chunk`` and ``layer_pattern`` for these layer kinds (``None``: every layer
    local with a window, chunked with a chunk, else global). A window or chunk no layer uses is dropped, and
    local layers without a window attend globally (as transformers runs them)."""
    if kinds is not None:
        kinds = [("global" if k == "local" and not window else k) for k in kinds]
        kinds = [("global" if k == "chunked" and not chunk else k) for k in kinds]
        window = window if "local" in kinds else None
        chunk = chunk if "chunked" in kinds else None
        if len(set(kinds)) == 1 and kinds[0] != "linear":
            kinds = None
    fields: dict[str, Any] = {"sliding_window": window, "attention_chunk": chunk}
    if kinds is not None:
        fields["layer_pattern"] = _shortest_cycle(kinds)
    return {key: value for key, value in fields.items() if value is not None}


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


_GATED_SHARED_EXPERT = {"qwen2_moe", "qwen3_next", "qwen3_5_moe", "qwen3_5_moe_text"}
"""Families whose shared expert's output a sigmoid gate (d_model -> 1) scales."""


def _moe(r: _Reader, n_layers: int) -> dict[str, Any] | None:
    n_experts = r.get("n_routed_experts", "num_local_experts", "num_experts")
    if not n_experts:
        return None
    d_ff_expert = r.get("moe_intermediate_size")
    if d_ff_expert is None:
        d_ff_expert = r.require("intermediate_size", "intermediate_size")
    shared = r.get("n_shared_experts") or (1 if r.get("shared_expert_intermediate_size") else 0)
    shared_width = r.get("shared_expert_intermediate_size")
    if r.get("model_type") == "granitemoehybrid":  # GraniteMoeHybridMLP (shared_mlp) beside the experts
        shared, shared_width = 1, r.get("shared_intermediate_size") or d_ff_expert
    if str(r.get("model_type")).startswith("llama4"):  # Llama4TextMoe: one shared expert as wide as the routed ones
        shared = 1
    per_token_keys = ("num_experts_per_tok", "num_experts_per_token")
    if r.get("model_type") == "hunyuan_v1_moe":  # HunYuanMoEV1: moe_topk, and one shared MLP in every layer
        per_token_keys, shared = ("moe_topk",), 1
        n_experts = _uniform(r, "num_experts", n_experts)
        d_ff_expert = _uniform(r, "moe_intermediate_size", d_ff_expert)
    return {
        "n_experts": n_experts,
        "n_active_experts": _uniform(r, per_token_keys[0], r.require("experts per token", *per_token_keys)),
        "n_shared_experts": shared,
        "d_ff_expert": d_ff_expert,
        "d_ff_shared": shared_width,
        "n_dense_layers": min(
            n_layers,
            r.count("dense layers", "first_k_dense_replace")
            if r.get("first_k_dense_replace")
            else _leading_dense_layers(r, n_layers),
        ),
        "expert_bias": r.get("model_type") == "gpt_oss",
        "shared_expert_gate": r.get("model_type") in _GATED_SHARED_EXPERT
        and bool(r.get("shared_expert_intermediate_size")),
        **_routing(r, str(r.get("model_type"))),
    }


def _uniform(r: _Reader, key: str, value: Any) -> Any:
    """A count a config may list per layer (Hunyuan's moe_topk, num_experts): the one value every layer has."""
    if not isinstance(value, list):
        return value
    if not value or len(set(value)) > 1:
        raise BadInputError(f"{r.origin}: {key} varies by layer ({value[:4]}...): mha prices one value for every layer")
    return value[0]


def _leading_dense_layers(r: _Reader, n_layers: int) -> int:
    """Qwen-MoE's dense layers (``mlp_only_layers``, ``decoder_sparse_step``) when they lead the stack.

    Other layouts (dense layers in the middle, every other layer sparse) are not modelled: every
    layer after the leading dense ones is read as MoE, and the assumption says so.
    """
    step = r.get("decoder_sparse_step") or 1
    dense = set(r.get("mlp_only_layers") or []) | {i for i in range(n_layers) if (i + 1) % step}
    period = r.get("expert_layer_period")  # Jamba: MoE on every period-th layer from the offset
    if period:
        offset = r.get("expert_layer_offset") or 0
        dense |= {i for i in range(n_layers) if (i - offset) % period}
    leading = next((i for i in range(n_layers + 1) if i not in dense), n_layers)
    if len(dense) > leading:
        r.assumptions.append(
            f"dense MLP layers {sorted(dense)} (mlp_only_layers / decoder_sparse_step / expert_layer_period) are not"
            f" all leading: read as {leading} leading dense layers, the rest MoE (weights overstated)"
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


_OTHER_QK_NORMS = {"llama4", "llama4_text", "cohere", "cohere2"}
"""Families whose ``use_qk_norm`` is not a per-head RMSNorm with weights (Llama 4: an L2 norm without weights;
Cohere: a LayerNorm per head); not read as ``qk_norm``."""
_INTERLEAVED_ROPE = {"ernie4_5", "ernie4_5_moe", "helium"}
"""Families whose RoPE rotates interleaved pairs (their modeling's rotate_half stacks (-x2, x1) over x[::2], x[1::2])."""


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
    if model_type in _INTERLEAVED_ROPE:
        rope["interleaved"] = True
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
    if model_type == "mpt":  # MPT's attention options live in attn_config (kv_n_heads: grouped KV heads)
        grouped = (r.config.get("attn_config") or {}).get("kv_n_heads")
        return int(grouped) if isinstance(grouped, int) and grouped > 0 else n_heads
    n_kv = r.get("num_key_value_heads", "num_kv_heads")
    if n_kv is None:
        return r.assume(n_heads, "num_key_value_heads absent: MHA (one KV head per query head)")
    return r.count("num_key_value_heads", "num_key_value_heads", "num_kv_heads")


def _learned_positions(r: _Reader, model_type: str) -> int:
    """Rows of a learned position table (GPT-2's and GPT-Neo's wpe); 0 for RoPE, ALiBi or sinusoidal positions."""
    if model_type == "gpt2":
        return r.get("n_positions") or 0
    if model_type == "gpt_neo":
        return r.get("max_position_embeddings") or 0
    return 0


def family_layout(model_type: str) -> dict[str, Any]:
    """Facts a family's config.json does not spell out: MLP kind, norms, biases, tying."""
    if model_type == "cohere2":  # parallel attention + MLP after one LayerNorm
        return {"norm": "layernorm", "n_norms_per_layer": 1}
    if model_type == "gpt2":
        return {"mlp": "plain", "mlp_bias": True, "norm": "layernorm", "qkv_bias": True, "o_bias": True}
    if model_type == "falcon":
        return {"mlp": "plain", "norm": "layernorm", "n_norms_per_layer": 1}
    if model_type in ("gemma2", "gemma3", "gemma3_text"):
        return {"n_norms_per_layer": 4, "qk_norm": model_type != "gemma2"}
    if model_type in ("qwen3", "qwen3_moe", "mellum", "exaone_moe", "hunyuan_v1_dense", "hunyuan_v1_moe") or (
        model_type in _GATED_DELTANET
    ):
        return {"qk_norm": True}  # per-head RMSNorm of q and k (Qwen3-Next and Qwen3.5 too)
    if model_type == "stablelm":  # LayerNorm (with bias) before attention and MLP
        return {"norm": "layernorm"}
    if model_type in ("qwen2", "qwen2_moe"):
        return {"qkv_bias": True}
    if model_type == "gpt_oss":
        return {"qkv_bias": True, "o_bias": True}
    if model_type == "gpt_neo":  # GPT-2's block: LayerNorm, plain GELU MLP with biases, no q/k/v bias
        return {"mlp": "plain", "mlp_bias": True, "norm": "layernorm", "o_bias": True}
    if model_type == "xglm":  # fairseq's block: LayerNorm, plain GELU MLP, biases everywhere, sinusoidal positions
        return {"mlp": "plain", "mlp_bias": True, "norm": "layernorm", "qkv_bias": True, "o_bias": True}
    if model_type == "mpt":  # LayerNorm, plain GELU MLP, no biases (no_bias), ALiBi positions
        return {"mlp": "plain", "norm": "layernorm"}
    if model_type == "starcoder2":  # c_fc -> GELU -> c_proj, LayerNorm, biases everywhere (use_bias, default true)
        return {"mlp": "plain", "norm": "layernorm", "qkv_bias": True, "o_bias": True, "mlp_bias": True}
    return {}


_TIED_BY_DEFAULT = {
    "gpt2",
    "gemma",
    "gemma2",
    "gemma3",
    "gemma3_text",
    "falcon",
    "gemma3n",
    "gemma3n_text",
    "cohere2",
    "smollm3",
}


def import_hf_config(config: dict[str, Any], *, name: str = "hf-model", origin: str = "config.json") -> ImportedModel:
    """Build a ``ModelSpec`` from a parsed config.json (read from ``origin``); ``BadInputError`` if it cannot."""
    if isinstance(config.get("text_config"), dict):
        config = {
            **config["text_config"],
            "model_type": config["text_config"].get("model_type", config.get("model_type")),
        }
    r = _Reader(config, origin, FAMILY_DEFAULTS.get(str(config.get("model_type"))))
    model_type = str(r.get("model_type") or "unknown")
    if model_type in _FAMILY_ALIASES:
        r.assumptions.append(f"model_type {model_type!r} read as {_FAMILY_ALIASES[model_type]!r}")
        model_type = _FAMILY_ALIASES[model_type]
    if model_type not in KNOWN_MODEL_TYPES:
        r.assumptions.append(f"model_type {model_type!r} is not a known family: read the standard fields only")

    _refuse_encoder_decoder(r)
    _refuse_unread_fields(r, model_type)
    if model_type in REFUSED_FAMILIES:
        raise BadInputError(f"{origin}: model_type {model_type!r}: {REFUSED_FAMILIES[model_type]}, so it is refused")
    names = _FAMILY_FIELD_NAMES.get(model_type, {})
    d_model = r.count("hidden size", "hidden_size", "n_embd", "d_model")
    n_layers = r.count("layer count", "num_hidden_layers", "n_layer", "num_layers", *names.get("layers", ()))
    if n_layers > MAX_LAYERS:  # before any per-layer list is built
        raise BadInputError(f"{origin}: {n_layers:,} layers; a model may have at most {MAX_LAYERS:,}")
    n_heads = r.count("attention head count", "num_attention_heads", "n_head", *names.get("heads", ()))
    vocab = r.get("vocab_size")
    if vocab is None:  # a KV figure does not need it: price the cache, say the weights leave the embeddings out
        vocab = r.assume(1, "vocab_size absent: embeddings not counted (weights understated by vocab x hidden_size)")
    layout = family_layout(model_type)

    d_ff = _dense_width(r, model_type)
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
        "position_embeddings": _learned_positions(r, model_type),
        "context_length": r.get("max_position_embeddings", "n_positions", "max_sequence_length"),
        **layout,
    }
    if r.get("attention_bias") is not None:
        fields["qkv_bias"] = fields["o_bias"] = bool(r.get("attention_bias"))
    if r.get("attention_out_bias") is not None:  # Seed-OSS: biases on q/k/v, none on o
        fields["o_bias"] = bool(r.get("attention_out_bias"))
    if r.get("use_qk_norm") is True and model_type not in _OTHER_QK_NORMS:
        fields["qk_norm"] = True
    if model_type == "starcoder2" and r.get("use_bias") is False:
        fields["qkv_bias"] = fields["o_bias"] = fields["mlp_bias"] = False
    if model_type == "falcon" and r.get("bias"):
        fields["qkv_bias"] = fields["o_bias"] = fields["mlp_bias"] = True

    mla = _mla(r)
    if mla is not None:
        fields["mla"] = mla
    else:
        fields["n_kv_heads"] = _kv_heads(r, model_type, n_heads)
        head_dim = r.get("head_dim", "kv_channels", "dim_head")  # Megatron/ChatGLM and others spell it so
        if head_dim is not None:
            fields["head_dim"] = head_dim
        elif d_model % n_heads == 0:
            r.assumptions.append(f"head_dim absent: hidden_size / num_attention_heads = {d_model // n_heads}")

    window = _sliding_window(r)
    if model_type == "gpt_neo" and window is None and r.get("window_size"):  # GPT-Neo's local layers
        window = r.count("window_size", "window_size")
    chunk = _attention_chunk(r, model_type)
    kinds = _layer_pattern(r, model_type, n_layers) if (window or chunk or _has_layer_kinds(r, model_type)) else None
    if kinds is not None:
        kinds = kinds[:n_layers]  # a family cycle longer than the model: its first n_layers entries (transformers)
    fields.update(_kinds_fields(kinds, window, chunk))
    fields.update(_fixed_state_fields(r, model_type, d_model, n_layers, fields))
    _refuse_unread_mixers(r, model_type, fields)

    moe = _moe(r, n_layers)
    if moe is not None:
        fields["moe"] = moe
    rope = _rope(r, model_type)
    if rope is not None:
        fields["rope"] = rope
    if _norm_eps(r) is not None:
        fields["norm_eps"] = _norm_eps(r)
    _refuse_other_value_width(r, fields)
    try:
        model = ModelSpec.model_validate(fields)
    except ValidationError as exc:
        raise BadInputError(f"{origin} describes an invalid model: {describe_validation_error(exc)}") from exc
    return ImportedModel(model=model, model_type=model_type, assumptions=r.assumptions)


UNREAD_FIELDS: dict[str, str] = {
    "per_layer_config": "per-layer head counts, widths or latents",
    "cross_attention_layers": "cross-attention layers (their cache holds the encoder's tokens, not the prompt's)",
    "attn_layer_indices": "which layers are attention (the others keep a fixed state)",
    "hybrid_override_pattern": "which layers are attention, Mamba or MLP (Nemotron-H)",
    "full_attn_idxs": "which layers attend to every token (LFM2)",
    "conv_L_cache": "a short-convolution state per layer (LFM2)",
    "attention_window_size": "the window of a recurrent model's attention layers (RecurrentGemma)",
    "index_n_heads": "an indexer key cache (DeepSeek-V3.2's sparse attention)",
    "index_head_dim": "an indexer key cache (DeepSeek-V3.2's sparse attention)",
    "swa_head_dim": "the head width of the sliding-window layers apart from the others'",
    "swa_num_key_value_heads": "the KV heads of the sliding-window layers apart from the others'",
    "prompt_length": "virtual prompt tokens the cache holds ahead of the text (CPM-Ant)",
}
"""Fields that change the cache or the model and that the importer does not read (outside the families that do):
a config carrying one is refused naming it, never priced as if it were absent."""
_INDEXED_MLA = ("deepseek_v32", "glm_moe_dsa", "axk2")
"""MLA families with DeepSeek-V3.2's lightning indexer (GLM-5's glm_moe_dsa, A.X K2): its key cache is read."""
READ_BY_FAMILY: dict[str, set[str]] = {family: {"index_head_dim", "index_n_heads"} for family in _INDEXED_MLA}
REFUSED_FAMILIES: dict[str, str] = {
    "mimo_v2_flash": "its sliding-window layers hold twice num_key_value_heads (transformers' MiMo-V2-Flash"
    " attention), a per-kind head count mha does not price",
}
"""Families whose cache differs from what their config.json's standard fields say, in ways mha does not price."""
ENCODER_DECODER_FAMILIES = {
    "bart", "bigbird_pegasus", "blenderbot", "blenderbot-small", "marian", "mbart", "mvp", "pegasus", "plbart",
    "prophetnet", "t5", "mt5", "umt5", "whisper", "trocr", "m2m_100", "nllb-moe", "fsmt", "led", "longt5",
}  # fmt: skip
"""Families whose configs describe an encoder-decoder model (their decoder-only CausalLM classes included)."""
_FAMILY_FIELD_NAMES: dict[str, dict[str, tuple[str, ...]]] = {
    "mpt": {"layers": ("n_layers",), "heads": ("n_heads",)},
    "gpt_neo": {"heads": ("num_heads",)},
    "xglm": {"heads": ("attention_heads",)},
}
"""How older families spell the layer and head counts (read for these families only: ``num_heads`` is a
state-space head count in Mamba-2's config)."""


def _refuse_unread_mixers(r: _Reader, model_type: str, fields: dict[str, Any]) -> None:
    """Layers whose ``layer_types`` name a state mixer (alone, or beside attention as ``hybrid``) in a family whose
    mixer is not read here: refused naming them, never priced as attention-only or as an empty state."""
    if fields.get("recurrent") is not None:
        return
    types = r.config.get("layer_types") or r.config.get("layers_block_type") or []
    mixers = sorted({str(t) for t in types if isinstance(t, str) and t in _MIXER_LAYER_TYPES})
    if mixers:
        raise BadInputError(
            f"{r.origin}: layer_types has {', '.join(mixers)} layers, whose state mixer mha does not read for"
            f" model_type {model_type!r}: a figure without their fixed state would be wrong, so it is refused"
        )


def _refuse_encoder_decoder(r: _Reader) -> None:
    """An encoder-decoder config (BART, Marian, Pegasus, T5...) is refused saying so, before any field is read."""
    if r.config.get("is_encoder_decoder") or r.config.get("model_type") in ENCODER_DECODER_FAMILIES:
        raise BadInputError(
            f"{r.origin}: an encoder-decoder model (model_type {r.config.get('model_type')!r}): mha prices"
            " decoder-only models, whose cache holds the prompt's tokens, not an encoder's"
        )


def _refuse_unread_fields(r: _Reader, model_type: str) -> None:
    """No silent wrong answer: refuse a config whose fields would change the figures in ways not read here (before
    any other field is read, so the refusal names the field, not a count the family spells otherwise)."""
    read = READ_BY_FAMILY.get(model_type, set())
    for field, what in UNREAD_FIELDS.items():
        if r.config.get(field) not in (None, False, [], {}, 0, "") and field not in read:
            raise BadInputError(
                f"{r.origin}: {field!r} sets {what}, which mha does not read for model_type {model_type!r}: a figure"
                " that ignored it would be wrong, so it is refused (remove the field only if it is unused)"
            )


def _refuse_other_value_width(r: _Reader, fields: dict[str, Any]) -> None:
    """Outside MLA, K and V are priced at one width: a v_head_dim unlike head_dim is refused."""
    v_head_dim = r.config.get("v_head_dim")
    head_dim = fields.get("head_dim") or fields["d_model"] // max(1, fields["n_heads"])
    if "mla" not in fields and v_head_dim is not None and str(v_head_dim) != str(head_dim):
        raise BadInputError(
            f"{r.origin}: v_head_dim {v_head_dim} differs from the key head_dim {head_dim}; mha prices K and V at"
            " one width outside MLA, so it is refused"
        )


def _shortest_cycle(pattern: list[LayerKind]) -> list[LayerKind]:
    """The shortest prefix that repeats to ``pattern`` (a full list when nothing repeats)."""
    border = [0] * len(pattern)  # border[i]: longest proper prefix of pattern[: i + 1] that is also its suffix
    for i in range(1, len(pattern)):  # KMP's failure function: linear (10,000 layers in milliseconds)
        k = border[i - 1]
        while k and pattern[i] != pattern[k]:
            k = border[k - 1]
        border[i] = k + (pattern[i] == pattern[k])
    return pattern[: len(pattern) - border[-1]] if pattern else pattern  # shortest period = length - longest border


# Layer kinds and fixed-state mixers (the 2025-26 families) ----------------------------------------------

_TF = "transformers 5.24"
FAMILY_DEFAULTS: dict[str, tuple[str, dict[str, Any]]] = {
    # Defaults of each family's transformers config class, for the fields a KV figure reads. A config.json that
    # leaves one out gets the value the class would fill in, and the output says so.
    "gemma3_text": (f"Gemma3TextConfig ({_TF})", {
        "vocab_size": 262208, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
        "sliding_window": 4096, "max_position_embeddings": 131072, "hidden_activation": "gelu_pytorch_tanh",
    }),
    "gemma3n_text": (f"Gemma3nTextConfig ({_TF})", {
        "vocab_size": 262400, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 256,
        "sliding_window": 512, "num_kv_shared_layers": 15, "hidden_activation": "gelu_pytorch_tanh",
    }),
    "llama4_text": (f"Llama4TextConfig ({_TF})", {
        "vocab_size": 202048, "num_key_value_heads": 8, "head_dim": 128, "attention_chunk_size": 8192,
        "no_rope_layer_interval": 4, "num_experts_per_tok": 1,
    }),
    "qwen2": (f"Qwen2Config ({_TF})", {"max_window_layers": 28}),
    "qwen3": (f"Qwen3Config ({_TF})", {"max_window_layers": 28}),
    "qwen3_next": (f"Qwen3NextConfig ({_TF})", {
        "head_dim": 256, "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_key_head_dim": 128,
        "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4, "full_attention_interval": 4,
    }),
    "qwen3_5_text": (f"Qwen3_5TextConfig ({_TF})", {
        "head_dim": 256, "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_key_head_dim": 128,
        "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4, "full_attention_interval": 4,
    }),
    "qwen3_5_moe_text": (f"Qwen3_5MoeTextConfig ({_TF})", {
        "head_dim": 256, "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_key_head_dim": 128,
        "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4, "full_attention_interval": 4,
    }),
    "jamba": (f"JambaConfig ({_TF})", {
        "attn_layer_period": 8, "attn_layer_offset": 4, "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_expand": 2,
        "num_experts_per_tok": 2,
    }),
    "minimax": (f"MiniMaxConfig ({_TF})", {"num_experts_per_tok": 2}),
    "falcon_h1": (f"FalconH1Config ({_TF})", {
        "mamba_n_heads": 128, "mamba_n_groups": 1, "mamba_d_state": 256, "mamba_d_conv": 4, "mamba_expand": 2,
    }),
    "granitemoehybrid": (f"GraniteMoeHybridConfig ({_TF})", {
        "mamba_n_heads": 128, "mamba_n_groups": 1, "mamba_d_state": 256, "mamba_d_conv": 4, "mamba_expand": 2,
    }),
    "kimi_linear": (f"KimiLinearConfig ({_TF})", {"qk_rope_head_dim": 64}),
    "deepseek_v32": (f"DeepseekV32Config ({_TF})", {"index_head_dim": 128}),
    "cohere2": (f"Cohere2Config ({_TF})", {"sliding_window": 4096}),
}  # fmt: skip
FAMILY_DEFAULTS["gemma3"] = FAMILY_DEFAULTS["gemma3_text"]
FAMILY_DEFAULTS["gemma3n"] = FAMILY_DEFAULTS["gemma3n_text"]
FAMILY_DEFAULTS["llama4"] = FAMILY_DEFAULTS["llama4_text"]
FAMILY_DEFAULTS["qwen2_moe"] = FAMILY_DEFAULTS["qwen2"]
FAMILY_DEFAULTS["qwen3_moe"] = FAMILY_DEFAULTS["qwen3"]
FAMILY_DEFAULTS["qwen3_5"] = FAMILY_DEFAULTS["qwen3_5_text"]
FAMILY_DEFAULTS["qwen3_5_moe"] = FAMILY_DEFAULTS["qwen3_5_moe_text"]

_KIND_OF_LAYER_TYPE: dict[str, LayerKind] = {
    "full_attention": "global", "attention": "global", "hybrid": "global", "indexed_attention": "global",
    "sliding_attention": "local", "hybrid_sliding": "local", "chunked_attention": "chunked",
    "linear_attention": "linear", "mamba": "linear", "conv": "linear",
}  # fmt: skip
"""transformers' ``layer_types`` names (``hybrid``: attention beside a state mixer, Falcon-H1)."""
_MIXER_LAYER_TYPES = {"hybrid", "hybrid_sliding", "linear_attention", "mamba", "conv"}
"""Layer types that keep a fixed state: a family that lists them must have its mixer read (``recurrent``)."""

_GATED_DELTANET = {"qwen3_next", "qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text"}
_STATE_FAMILIES = {"jamba", "falcon_h1", "granitemoehybrid", "minimax", "kimi_linear"} | _GATED_DELTANET
_LLAMA4 = ("llama4", "llama4_text")


def _dense_width(r: _Reader, model_type: str) -> Any:
    """The dense MLP width: Llama-4 calls it intermediate_size_mlp (intermediate_size is an expert's); Gemma-3n
    lists one per layer (the widest is taken, said so)."""
    if model_type in _LLAMA4 and r.get("intermediate_size_mlp") is not None:
        return r.get("intermediate_size_mlp")
    if model_type == "granitemoehybrid" and r.get("shared_intermediate_size") is not None:  # its shared_mlp
        return r.get("shared_intermediate_size")
    if model_type == "mpt" and r.get("expansion_ratio") is not None:  # MPT: d_ff = expansion_ratio x d_model
        return r.count("expansion_ratio", "expansion_ratio") * r.count("hidden size", "d_model")
    width = r.get("intermediate_size", "n_inner", "ffn_hidden_size", *(("ffn_dim",) if model_type == "xglm" else ()))
    if isinstance(width, list) and width:
        widest = max(width)
        if len(set(width)) > 1:
            r.assume(widest, f"intermediate_size varies by layer: the widest, {widest}, is used for every layer")
        return widest
    return width


def _attention_chunk(r: _Reader, model_type: str) -> int | None:
    """Llama-4's attention_chunk_size (its RoPE layers attend within chunks)."""
    if model_type not in _LLAMA4 and r.config.get("attention_chunk_size") is None:
        return None
    return r.count("attention_chunk_size", "attention_chunk_size") if r.get("attention_chunk_size") else None


def _has_layer_kinds(r: _Reader, model_type: str) -> bool:
    """Whether the config describes layers of different kinds even without a sliding window or chunk."""
    listed = ("layer_types", "layers_block_type", "attn_type_list", "linear_attn_config", "attention_layers")
    return model_type in _STATE_FAMILIES or any(r.config.get(key) is not None for key in listed)


def _listed_layer_kinds(r: _Reader, model_type: str, n_layers: int) -> list[LayerKind] | None:
    """Layer kinds spelled out per layer: ``layer_types`` (or Granite's ``layers_block_type``), MiniMax's
    ``attn_type_list`` (0 lightning, 1 softmax), Kimi-Linear's 1-based ``linear_attn_config`` layer lists."""
    types = r.config.get("layer_types") or r.config.get("layers_block_type")
    if model_type == "gpt_neo" and not types and r.config.get("attention_layers"):  # "global" / "local" per layer
        neo = {"global": "full_attention", "local": "sliding_attention"}
        types = [neo.get(str(kind), str(kind)) for kind in r.config["attention_layers"]]
    if model_type == "minimax" and not types and r.config.get("attn_type_list"):
        types = ["full_attention" if flag else "linear_attention" for flag in r.config["attn_type_list"]]
    linear = r.config.get("linear_attn_config") or {}
    if model_type == "kimi_linear" and not types and linear.get("kda_layers") is not None:
        full = {int(layer) - 1 for layer in linear.get("full_attn_layers") or []}
        types = ["full_attention" if i in full else "linear_attention" for i in range(n_layers)]
    if not types:
        return None
    if not isinstance(types, list):
        raise BadInputError(f"{r.origin}: layer_types must be a list with one layer type per layer")
    if len(types) != n_layers:
        raise BadInputError(f"{r.origin}: layer_types has {len(types)} entries but num_hidden_layers is {n_layers}")
    unknown = sorted({str(t) for t in types} - set(_KIND_OF_LAYER_TYPE))
    if unknown:
        raise BadInputError(f"{r.origin}: unknown layer type(s) {', '.join(unknown)} in layer_types")
    return [_KIND_OF_LAYER_TYPE[str(t)] for t in types]


def _family_layer_kinds(r: _Reader, model_type: str, n_layers: int) -> list[LayerKind] | None:
    """Layer kinds a family derives from its own fields, as its transformers config class does."""
    if model_type in ("qwen2", "qwen2_moe", "qwen3", "qwen3_moe") and _sliding_window(r):
        first_sliding = min(n_layers, r.count("max_window_layers", "max_window_layers"))
        return ["global"] * first_sliding + ["local"] * (n_layers - first_sliding)
    if model_type in _LLAMA4:  # layers with RoPE attend within chunks, every 4th (NoPE) globally
        uses_rope = r.config.get("no_rope_layers") or [
            int((i + 1) % r.count("no_rope_layer_interval", "no_rope_layer_interval") != 0) for i in range(n_layers)
        ]
        return ["chunked" if flag else "global" for flag in uses_rope]
    if model_type in _GATED_DELTANET:
        every = r.count("full_attention_interval", "full_attention_interval")
        return ["global" if (i + 1) % every == 0 else "linear" for i in range(n_layers)]
    if model_type == "jamba":
        period = r.count("attn_layer_period", "attn_layer_period")
        offset = r.get("attn_layer_offset") or 0
        return ["global" if i % period == offset else "linear" for i in range(n_layers)]
    if model_type in ("gemma3n", "gemma3n_text"):
        return ["global" if (i + 1) % 5 == 0 else "local" for i in range(n_layers)]
    if model_type == "falcon_h1":  # attention and Mamba-2 side by side in every layer
        return ["global"] * n_layers
    if model_type == "granitemoehybrid":  # GraniteMoeHybridConfig: every layer Mamba-2 without layer_types
        return r.assume(["linear"] * n_layers, "layer_types absent: every layer Mamba-2 (GraniteMoeHybridConfig)")
    return None


def _fixed_state_fields(
    r: _Reader, model_type: str, d_model: int, n_layers: int, fields: dict[str, Any]
) -> dict[str, Any]:
    """``recurrent`` (the fixed-state mixer), ``n_kv_shared_layers`` and DeepSeek-V3.2's indexer."""
    out: dict[str, Any] = {}
    recurrent = _recurrent(r, model_type, d_model, fields)
    if recurrent is not None:
        out["recurrent"] = recurrent
    if model_type in ("gemma3n", "gemma3n_text"):
        shared = r.get("num_kv_shared_layers") or 0
        if shared:
            out["n_kv_shared_layers"] = r.count("num_kv_shared_layers", "num_kv_shared_layers")
    if "mla" in fields and model_type in _INDEXED_MLA:
        fields["mla"]["indexer"] = {"index_head_dim": r.count("index_head_dim", "index_head_dim")}
    return out


def _ssm_dtype(r: _Reader) -> dict[str, Any]:
    """A config's own ``mamba_ssm_dtype`` (Qwen3.5 states float32): fp32, or a 16-bit activation dtype."""
    named = r.config.get("mamba_ssm_dtype")
    if named is None:
        return {}
    if str(named) in ("float32", "fp32"):
        return {"state_dtype": "fp32"}
    if str(named) in ("bfloat16", "bf16", "float16", "fp16"):
        return {"state_dtype": "activation"}
    raise BadInputError(f"{r.origin}: mamba_ssm_dtype {named!r} is not float32, bfloat16 or float16")


def _mixer_biases(r: _Reader, *, out_proj: str) -> dict[str, bool]:
    """A Mamba mixer's biases as transformers reads them: conv ``mamba_conv_bias`` (default true), in_proj
    ``mamba_proj_bias`` (default false), out_proj the field ``out_proj`` names (default false)."""
    return {
        "conv_bias": bool(r.config.get("mamba_conv_bias", True)),
        "in_proj_bias": bool(r.config.get("mamba_proj_bias", False)),
        "out_proj_bias": bool(r.config.get(out_proj, False)),
    }


def _recurrent(r: _Reader, model_type: str, d_model: int, fields: dict[str, Any]) -> dict[str, Any] | None:
    """The fixed state one linear-attention / state-space layer keeps, in the family's own fields."""
    if model_type in _GATED_DELTANET:  # Gated DeltaNet: state (v heads, k dim, v dim), conv over q, k, v
        k_heads = r.count("linear_num_key_heads", "linear_num_key_heads")
        v_heads = r.count("linear_num_value_heads", "linear_num_value_heads")
        k_dim = r.count("linear_key_head_dim", "linear_key_head_dim")
        v_dim = r.count("linear_value_head_dim", "linear_value_head_dim")
        return {
            "kind": "gated_deltanet", "n_heads": v_heads, "head_dim": k_dim, "state_dim": v_dim,
            "conv_dim": 2 * k_heads * k_dim + v_heads * v_dim,
            "conv_kernel": r.count("linear_conv_kernel_dim", "linear_conv_kernel_dim"), **_ssm_dtype(r),
        }  # fmt: skip
    if model_type == "jamba":  # Mamba-1: d_inner channels, each a d_state vector; conv over d_inner
        inner = r.count("mamba_expand", "mamba_expand") * d_model
        dt_rank = r.get("mamba_dt_rank")
        return {
            "kind": "mamba", "n_heads": inner, "head_dim": 1, "state_dim": r.count("mamba_d_state", "mamba_d_state"),
            "conv_dim": inner, "conv_kernel": r.count("mamba_d_conv", "mamba_d_conv"),
            **({} if dt_rank in (None, "auto") else {"dt_rank": r.count("mamba_dt_rank", "mamba_dt_rank")}),
            **_mixer_biases(r, out_proj="mamba_proj_bias"),
        }  # fmt: skip
    if model_type in ("falcon_h1", "granitemoehybrid"):  # Mamba-2: (heads, head dim, d_state), conv over x, B, C
        inner = r.get("mamba_d_ssm") if model_type == "falcon_h1" else None
        inner = inner or r.count("mamba_expand", "mamba_expand") * d_model
        heads = r.count("mamba_n_heads", "mamba_n_heads")
        head_dim = r.get("mamba_d_head")
        head_dim = inner // heads if head_dim in (None, "auto") else head_dim
        d_state = r.count("mamba_d_state", "mamba_d_state")
        groups = r.count("mamba_n_groups", "mamba_n_groups")
        falcon = model_type == "falcon_h1"  # its out_proj's bias is projectors_bias; its gated norm is optional
        return {
            "kind": "mamba2", "n_heads": heads, "head_dim": head_dim, "state_dim": d_state, "n_groups": groups,
            "conv_dim": inner + 2 * groups * d_state,
            "conv_kernel": r.count("mamba_d_conv", "mamba_d_conv"), "on_attention_layers": falcon,
            **_mixer_biases(r, out_proj="projectors_bias" if falcon else "mamba_proj_bias"),
            **({"output_norm": bool(r.config.get("mamba_rms_norm", False))} if falcon else {}),
        }  # fmt: skip
    if model_type == "minimax":  # lightning attention: one (head_dim, head_dim) K^T V sum per head, no conv
        head_dim = fields.get("head_dim") or d_model // fields["n_heads"]
        return {
            "kind": "lightning", "n_heads": fields["n_heads"], "head_dim": head_dim, "state_dim": head_dim,
            "state_dtype": "activation",
        }  # fmt: skip
    if model_type == "kimi_linear":  # KDA: (heads, head_dim, head_dim) state, short convs on q, k and v
        linear = r.config.get("linear_attn_config") or {}
        heads = linear.get("num_heads") or r.assume(32, "linear_attn_config.num_heads absent: 32 (KimiLinearConfig)")
        head_dim = linear.get("head_dim") or r.assume(128, "linear_attn_config.head_dim absent: 128 (KimiLinearConfig)")
        kernel = linear.get("short_conv_kernel_size") or r.assume(
            4, "linear_attn_config.short_conv_kernel_size absent: 4 (KimiLinearConfig)"
        )
        return {
            "kind": "kda", "n_heads": heads, "head_dim": head_dim, "state_dim": head_dim,
            "conv_dim": 3 * heads * head_dim, "conv_kernel": kernel,
        }  # fmt: skip
    return None
