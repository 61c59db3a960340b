"""Every causal-LM family of the installed transformers: the cache it really allocates against `mha kv`.

For each model type transformers can build as a causal LM, a tiny config is made from the family's own config
class (its defaults, with the size fields it has shrunk: width 64, 8 layers, 4 heads, 2 KV heads of 16, a
window of 8, a few small experts, small linear-attention and state-space widths), the model is built with
random weights in fp32, a batch of 2 prompts of 12 tokens is run with the cache on, and every tensor the
returned cache holds is counted (keys, values, conv and recurrent states). `mha kv` reads the same config's
``to_dict()`` (as it reads a config.json) and prices 2 x 12 tokens in fp32, its fixed states and indexer keys as
transformers holds them (``--state-convention transformers``; `mha kv` defaults to the engine's). Each family lands in one class:

- exact: the figures are equal;
- window view: equal once sliding-window (and chunked) layers are priced as transformers keeps them: window - 1
  tokens right after a prefill longer than the window, or every token where its cache does not window the local
  layers (GPT-Neo); `mha kv` prices the window a serving engine keeps;
- refused: `mha kv` exits 2 with one line saying why (the line is shown);
- different: `mha kv` gives a figure that is not what transformers allocates (a silent wrong answer);
- not built: transformers itself could not build or run the tiny config (the error is shown; not ours).

Run: `python benchmarks/family_sweep.py [--json] [--only TYPE ...]` (1-3 minutes; nothing is downloaded).
tests/test_family_sweep.py runs it, with the decoder sweep on the same tiny models, and fails on any "different".
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from mha_cli.core.errors import MhaError  # noqa: E402
from mha_cli.core.hf_import import import_hf_config  # noqa: E402
from mha_cli.core.kv import kv_footprint  # noqa: E402

BATCH, PROMPT = 2, 12
WINDOW = 8
"""Shorter than the prompt, so sliding-window layers are priced at their window."""
TINY = {
    "hidden_size": 64, "num_hidden_layers": 8, "window_size": WINDOW, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
    "intermediate_size": 128, "vocab_size": 256, "sliding_window": WINDOW, "attention_chunk_size": WINDOW,
    "moe_intermediate_size": 32, "shared_expert_intermediate_size": 32, "num_experts": 4, "num_local_experts": 4,
    "n_routed_experts": 4, "moe_num_experts": 4, "num_experts_per_tok": 2, "moe_k": 2, "moe_topk": 2, "n_group": 1,
    "topk_group": 1, "kv_lora_rank": 16, "q_lora_rank": 24, "qk_rope_head_dim": 8, "qk_nope_head_dim": 16,
    "v_head_dim": 16, "index_head_dim": 16, "index_n_heads": 2, "linear_num_key_heads": 2,
    "linear_num_value_heads": 4, "linear_key_head_dim": 8, "linear_value_head_dim": 8, "linear_conv_kernel_dim": 4,
    "linear_num_heads": 4, "linear_head_dim": 8, "num_experts_per_token": 2,
    "mamba_n_heads": 4, "mamba_d_head": 16, "mamba_d_state": 8, "mamba_d_conv": 4, "mamba_n_groups": 1,
    "mamba_expand": 2, "ssm_state_size": 8, "state_size": 8, "conv_kernel": 4, "n_groups": 1, "expand": 2,
    "time_step_rank": 8, "mamba_dt_rank": 8, "d_model": 64, "n_layer": 8, "n_layers": 8, "n_head": 4,
    "n_heads": 4, "n_embd": 64, "n_positions": 256, "max_position_embeddings": 256, "num_heads": 4,
    "hidden_dim": 128, "ffn_hidden_size": 128, "kv_channels": 16, "global_attn_every_n_layers": 2,
    "first_k_dense_replace": 1, "num_kv_shared_layers": 0, "rotary_dim": 8, "pad_token_id": 0, "bos_token_id": 1,
    "eos_token_id": 2, "is_decoder": True,
}  # fmt: skip
"""Size fields of the families' config classes, shrunk, a class gets the ones it has; and ``is_decoder``, without
which BERT's descendants are bidirectional encoders with no cache."""
FAMILY_TINY = {
    "mamba2": {"num_heads": 8, "head_dim": 16},  # num_heads x head_dim = expand x hidden_size
    "falcon_h1": {"mamba_n_heads": 8, "mamba_d_ssm": 128}, "bamba": {"mamba_n_heads": 8, "attn_layer_indices": [3, 7]},
    "granitemoehybrid": {"mamba_n_heads": 8, "layer_types": ["mamba", "mamba", "mamba", "attention"] * 2},
    "zaya": {"num_experts_per_tok": 1}, "lfm2": {"layer_types": ["conv", "conv", "full_attention", "conv"] * 2}, "dots3_note_text": {"num_key_value_heads": 4},
}  # fmt: skip
"""What a family's config class checks beyond the shared fields (its own consistency rules)."""
UNWINDOWED_IN_TRANSFORMERS = {"gpt_neo"}
"""Families whose local layers transformers' cache keeps whole (GPT-Neo's cache has no sliding layers)."""
MAX_TINY_WEIGHTS = 20_000_000
"""A tiny config with more weights than this kept a size field of its own at full size: not run."""


@dataclass(frozen=True)
class Row:
    model_type: str
    verdict: str
    allocated: int | None = None
    priced: int | None = None
    detail: str = ""


def _cache_tensors(cache: object) -> list:
    """Every floating-point tensor a cache object holds (its layers' keys, values and states), each counted once."""
    import torch

    seen: dict[int, torch.Tensor] = {}

    def walk(obj: object, depth: int) -> None:
        if depth > 6 or obj is None:
            return
        if isinstance(obj, torch.Tensor):
            if obj.numel() and obj.is_floating_point():  # K, V and states; not position counters
                seen.setdefault(id(obj), obj)
            return
        if isinstance(obj, list | tuple):
            for item in obj:
                walk(item, depth + 1)
        elif isinstance(obj, dict):
            for item in obj.values():
                walk(item, depth + 1)
        elif hasattr(obj, "__dict__") and type(obj).__module__.startswith("transformers"):
            for item in vars(obj).values():
                walk(item, depth + 1)

    walk(cache, 0)
    return list(seen.values())


def _tiny_config(model_type: str):
    from transformers import AutoConfig

    probe = AutoConfig.for_model(model_type)
    fields = probe.to_dict()
    overrides = {key: value for key, value in TINY.items() if key in fields}
    if "kv_lora_rank" in fields:  # MLA: head_dim is the RoPE part of a head; K and V have every head
        overrides["head_dim"] = TINY["qk_rope_head_dim"]
        overrides["num_key_value_heads"] = TINY["num_attention_heads"]
    layer_types = fields.get("layer_types", fields.get("layers_block_type"))  # Zamba2 spells it layers_block_type
    if isinstance(layer_types, list) and len(layer_types) != TINY["num_hidden_layers"] and len(layer_types) <= 64:
        overrides["num_hidden_layers"] = len(layer_types)  # a fixed pattern: keep its length, and every kind in it
    overrides.update(FAMILY_TINY.get(model_type, {}))
    for listed in ("layer_types", "layers_block_type"):  # a family's own pattern sets the depth
        if isinstance(FAMILY_TINY.get(model_type, {}).get(listed), list):
            overrides["num_hidden_layers"] = len(FAMILY_TINY[model_type][listed])
    return AutoConfig.for_model(model_type, **overrides)


def tiny_model(config):
    """transformers' causal LM for a tiny ``config``: random weights (seed 0, fp32), norms and biases moved off 1
    and 0 so that a decoder that skipped one would differ; refused when a size field was left at full size."""
    import torch
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        weights = sum(p.numel() for p in AutoModelForCausalLM.from_config(config).parameters())
    if weights > MAX_TINY_WEIGHTS:
        raise RuntimeError(f"{weights:,} weights: the config class has size fields this sweep does not shrink")
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32).eval()
    with torch.no_grad():
        for name, tensor in model.state_dict().items():
            if name.endswith("norm.weight") or name.endswith("bias"):
                tensor.add_(torch.randn_like(tensor) * 0.1)
    return model


Built = tuple[Any, Any] | Exception
"""A family's tiny (config, transformers model), or what transformers raised building them."""


def build_tiny(model_type: str) -> Built:
    """The family's tiny config and transformers' model for it (quietly), or the exception that stopped them."""
    try:
        with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            config = _tiny_config(model_type)
            return config, tiny_model(config)
    except Exception as exc:  # transformers could not build it: not a figure or decoder of ours to judge
        return exc


def failure(exc: Exception) -> str:
    """One line for what stopped transformers."""
    return f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:120]}"


def _allocated(model, config) -> int:
    """Bytes of every tensor the cache holds after a prefill of BATCH x PROMPT tokens, fp32."""
    import torch

    vocab = getattr(config, "vocab_size", None) or getattr(config.get_text_config(), "vocab_size", 256)
    ids = torch.randint(0, min(vocab, 256), (BATCH, PROMPT))
    with torch.no_grad():
        out = model(input_ids=ids, use_cache=True)
    cache = getattr(out, "past_key_values", None)
    if cache is None:
        raise RuntimeError("the forward pass returned no cache")
    return sum(t.numel() * t.element_size() for t in _cache_tensors(cache))


def _priced(config_dict: dict, model_type: str, *, view: str = "engine") -> int:
    """`mha kv`'s figure; ``view`` "window - 1": local and chunked layers at window - 1 tokens; "unwindowed": every
    layer holding every token (transformers' GPT-Neo cache does not window its local layers)."""
    model = import_hf_config(config_dict, name=model_type).model
    update: dict = {}
    if view == "window - 1":
        if model.layers.sliding_window is not None:
            update["sliding_window"] = max(1, model.layers.sliding_window - 1)
        if model.layers.attention_chunk is not None:
            update["attention_chunk"] = max(1, model.layers.attention_chunk - 1)
    elif view == "unwindowed" and model.layers.sliding_window is not None:
        update = {"sliding_window": None, "pattern": None}
    model = model.model_copy(update={"layers": model.layers.model_copy(update=update)})
    return kv_footprint(
        model, seq_len=PROMPT, batch=BATCH, kv_dtype="fp32", state_convention="transformers"
    ).total_bytes


def sweep_one(model_type: str, built: Built | None = None) -> Row:
    """The family's class (``built``: its tiny model already built, shared with the decoder sweep)."""
    built = build_tiny(model_type) if built is None else built
    if isinstance(built, Exception):
        return Row(model_type, "not built", detail=failure(built))
    config, model = built
    try:
        with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            allocated = _allocated(model, config)
    except Exception as exc:  # transformers could not run it
        return Row(model_type, "not built", detail=failure(exc))
    config_dict = config.to_dict()
    try:
        priced = _priced(config_dict, model_type)
    except MhaError as exc:
        return Row(model_type, "refused", allocated, detail=exc.message[:160])
    if priced == allocated:
        return Row(model_type, "exact", allocated, priced)
    views = ("window - 1", "unwindowed") if model_type in UNWINDOWED_IN_TRANSFORMERS else ("window - 1",)
    for view in views:
        if _priced(config_dict, model_type, view=view) == allocated:
            return Row(model_type, "window view", allocated, priced, f"transformers holds the {view} view")
    return Row(model_type, "different", allocated, priced, f"{priced - allocated:+,} B")


def causal_lm_types() -> list[str]:
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    return sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)


def run_sweep(
    argv: list[str] | None, description: str, sweep: Callable[[str], Any], figures: Callable[[Any], str]
) -> int:
    """The command line both sweeps share: ``sweep(model_type)`` per family (``--only`` some), a row each with
    ``figures(row)`` between its verdict and detail, and the count of each verdict; ``--json`` for the rows."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--only", nargs="*", help="model types to sweep (default: every causal-LM family)")
    args = parser.parse_args(argv)
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    rows = [sweep(t) for t in (args.only or causal_lm_types())]
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.verdict] = counts.get(row.verdict, 0) + 1
    if args.json:
        print(json.dumps({"rows": [asdict(r) for r in rows], "counts": counts}, indent=2))
        return 0
    for row in rows:
        print(f"{row.model_type:<28} {row.verdict:<18} {figures(row)}  {row.detail}")
    print(" ".join(f"{verdict}: {n}" for verdict, n in sorted(counts.items())), f"(of {len(rows)})")
    return 0


def _figures(row: Row) -> str:
    return f"{row.allocated or 0:>9,} {'' if row.priced is None else format(row.priced, ','):>9}"


def main(argv: list[str] | None = None) -> int:
    return run_sweep(argv, __doc__.splitlines()[0], sweep_one, _figures)


if __name__ == "__main__":
    sys.exit(main())
