"""Reading a model written before ``ModelSpec`` had parts: each flat field's place now.

Until December 2026 a model spec (a config file's ``model:``, a preset, an import) put every field at the top
level: ``n_heads: 32``, ``sliding_window: 4096``, ``tied_embeddings: true``. Each now lives in one part of the
model (``attention``, ``layers``, ``block``, ``embeddings``), under a name the part makes shorter where its prefix
repeated the part's (``attn_sinks`` is ``attention.sinks``). ``nest_flat_fields`` moves a flat spec's fields into
their parts, so an old file reads as it always did; a spec written now is nested (``mha`` writes only that form, and
the presets are written so). The family registry's layouts and the HF and GGUF importers still build their field
dicts in the flat form, which this map reads.
"""

from typing import Any

FLAT_FIELDS: dict[str, tuple[str, str]] = {
    # attention
    "n_heads": ("attention", "n_heads"),
    "n_kv_heads": ("attention", "n_kv_heads"),
    "head_dim": ("attention", "head_dim"),
    "variant": ("attention", "variant"),
    "global_n_kv_heads": ("attention", "global_n_kv_heads"),
    "global_head_dim": ("attention", "global_head_dim"),
    "global_k_eq_v": ("attention", "global_k_eq_v"),
    "mla": ("attention", "mla"),
    "qkv_bias": ("attention", "qkv_bias"),
    "o_bias": ("attention", "o_bias"),
    "last_o_bias": ("attention", "last_o_bias"),
    "qk_norm": ("attention", "qk_norm"),
    "qk_norm_span": ("attention", "qk_norm_span"),
    "qk_norm_type": ("attention", "qk_norm_type"),
    "attn_output_gate": ("attention", "output_gate"),
    "attn_softplus_gate": ("attention", "softplus_gate"),
    "attn_sinks": ("attention", "sinks"),
    "qkv_clip": ("attention", "qkv_clip"),
    "attn_scale": ("attention", "scale"),
    "attn_logit_softcap": ("attention", "logit_softcap"),
    "masked_window": ("attention", "masked_window"),
    "rope": ("attention", "rope"),
    "rope_local": ("attention", "rope_local"),
    "nope_layers": ("attention", "nope_layers"),
    "alibi": ("attention", "alibi"),
    # layers
    "layer_pattern": ("layers", "pattern"),
    "mlp_pattern": ("layers", "mlp_pattern"),
    "sliding_window": ("layers", "sliding_window"),
    "attention_chunk": ("layers", "attention_chunk"),
    "n_kv_shared_layers": ("layers", "n_kv_shared_layers"),
    "shared_kv_projections": ("layers", "shared_kv_projections"),
    "shared_d_ff": ("layers", "shared_d_ff"),
    # block
    "d_ff": ("block", "d_ff"),
    "mlp": ("block", "mlp"),
    "mlp_bias": ("block", "mlp_bias"),
    "activation": ("block", "activation"),
    "moe": ("block", "moe"),
    "norm": ("block", "norm"),
    "norm_bias": ("block", "norm_bias"),
    "norm_weights": ("block", "norm_weights"),
    "n_norms_per_layer": ("block", "n_norms"),
    "norm_placement": ("block", "norm_placement"),
    "norm_eps": ("block", "norm_eps"),
    "norm_weight_offset": ("block", "norm_weight_offset"),
    "first_input_norm": ("block", "first_input_norm"),
    "parallel_residual": ("block", "parallel_residual"),
    "normed_residual": ("block", "normed_residual"),
    "multipliers": ("block", "multipliers"),
    # embeddings
    "vocab_size": ("embeddings", "vocab_size"),
    "tied_embeddings": ("embeddings", "tied"),
    "position_embeddings": ("embeddings", "positions"),
    "position_offset": ("embeddings", "position_offset"),
    "sinusoidal_positions": ("embeddings", "sinusoidal"),
    "token_type_embeddings": ("embeddings", "token_types"),
    "scale_embeddings": ("embeddings", "scaled"),
    "embedding_size": ("embeddings", "width"),
    "embedding_norm": ("embeddings", "normed"),
    "final_norm": ("embeddings", "final_norm"),
    "lm_head_bias": ("embeddings", "lm_head_bias"),
    "lm_head_transform": ("embeddings", "lm_head_transform"),
    "lm_head_transform_bias": ("embeddings", "lm_head_transform_bias"),
    "lm_head_size": ("embeddings", "lm_head_size"),
    "final_logit_softcap": ("embeddings", "final_logit_softcap"),
    "logit_scale": ("embeddings", "logit_scale"),
    "per_layer_inputs": ("embeddings", "per_layer_inputs"),
}
"""Each flat (pre-parts) field: (its part, its name there)."""

PARTS = ("attention", "layers", "block", "embeddings")


def nest_flat_fields(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with every flat field moved into its part (``FLAT_FIELDS``); a nested spec comes back as it is.

    A field given both ways (``n_heads`` and ``attention.n_heads``) is refused, never silently chosen."""
    flat = [key for key in data if key in FLAT_FIELDS]
    if not flat:
        return data
    nested = {key: value for key, value in data.items() if key not in FLAT_FIELDS}
    for part in PARTS:  # an old file names each part's missing fields, not the part: "embeddings.vocab_size"
        nested.setdefault(part, {})
    for key in flat:
        part, name = FLAT_FIELDS[key]
        section = nested.get(part, {})
        if not isinstance(section, dict):
            raise ValueError(f"{key} is given beside a built {part} part: set it inside {part} as {name}")
        if name in section:
            raise ValueError(f"{key} is given twice: at the top level (the old flat form) and as {part}.{name}")
        nested[part] = {**section, name: data[key]}
    return nested


def flat_name(part: str, name: str) -> str:
    """The flat (pre-parts) name of ``part``'s field ``name``: what an old file called it."""
    for flat, place in FLAT_FIELDS.items():
        if place == (part, name):
            return flat
    raise KeyError(f"{part}.{name} has no flat name")
