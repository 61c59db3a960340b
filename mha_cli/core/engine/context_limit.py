"""The longest context vLLM and SGLang serve a model at without an override, as each derives it from config.json.

- vLLM (``_get_and_verify_max_len``, in ``config.py`` to 0.10 and ``config/model.py`` after): max_position_embeddings;
  under a RoPE scaling other than ``llama3`` (and ``su``/``longrope``) times its factor (``linear``, ``dynamic``), and
  for ``yarn`` up to 0.29 from original_max_position_embeddings; from 0.30.0 ``yarn`` (and DeepSeek's variants) no
  longer multiplies ("YaRN variants leave max_position_embeddings already scaled": read in the 0.29.0 and 0.30.0
  wheels); never for a ``gemma3`` model_type ("Gemma3's max_model_len (128K) is already scaled by RoPE scaling", its
  linear factor 8 left out). A ``--max-model-len`` above it raises ValueError unless
  ``VLLM_ALLOW_LONG_MAX_MODEL_LEN=1``.
- SGLang (``hf_transformers_utils.py`` ``get_context_length``): max_position_embeddings, times the scaling's factor
  only where the scaling names no original_max_position_embeddings and is not ``llama3`` (a linear or dynamic one);
  a ``--context-length`` above it raises ValueError unless ``SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1``.

So a YaRN-extended Qwen3 (max_position_embeddings 40,960, factor 4 over 32,768) starts at 131,072 tokens on vLLM
0.29 and at 40,960 on vLLM 0.30+ and SGLang. Pure Python.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mha_cli.core.engine.generations import Version
    from mha_cli.core.schemas import ModelSpec

OVERRIDES = {"vllm": "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1", "sglang": "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"}
"""The environment variable each engine takes to serve past its derived length."""


YARN_UNSCALED_FROM: Version = (0, 30)
"""The first vLLM release whose derived length leaves a YaRN scaling's factor out (module docstring)."""


def vllm_max_model_len(model: ModelSpec, release: Version | None = None) -> int | None:
    """vLLM ``release``'s derived max_model_len (None: the latest), tokens (None: the config states no context
    length)."""
    if model.context_length is None:
        return None
    scaling = None if model.rotary is None else model.rotary.scaling
    if scaling is None or scaling.type == "llama3" or "gemma3" in (model.family or ""):
        return model.context_length
    if scaling.type == "yarn":
        if release is None or release[:2] >= YARN_UNSCALED_FROM:
            return model.context_length
        if scaling.original_max_position_embeddings is not None:
            return int(scaling.original_max_position_embeddings * scaling.factor)
    return int(model.context_length * scaling.factor)


def sglang_context_length(model: ModelSpec) -> int | None:
    """SGLang's derived context length, tokens (None: the config states no context length)."""
    if model.context_length is None:
        return None
    scaling = None if model.rotary is None else model.rotary.scaling
    if scaling is None or scaling.type == "llama3" or scaling.original_max_position_embeddings is not None:
        return model.context_length
    return int(model.context_length * scaling.factor)


def past_derived_length(
    model: ModelSpec, tokens: int, engines: tuple[str, ...] = ("vllm", "sglang"), vllm_release: Version | None = None
) -> str | None:
    """Which of ``engines`` refuse a context of ``tokens`` for ``model`` without their override (vLLM's at
    ``vllm_release``, None: the latest), as one sentence; None when none does."""
    limits = {"vllm": vllm_max_model_len(model, vllm_release), "sglang": sglang_context_length(model)}
    refusing = [engine for engine in engines if (limit := limits.get(engine)) is not None and tokens > limit]
    if not refusing:
        return None
    names = {"vllm": "vLLM", "sglang": "SGLang"}
    each = "; ".join(f"{names[e]} derives {limits[e]:,}: run it with {OVERRIDES[e]}" for e in refusing)
    scaled = model.rotary is not None and model.rotary.scaling is not None
    extend = (
        "" if scaled or model.rotary is None else " (a model extended by RoPE scaling, as Qwen3 by YaRN, takes it in its"
        " config.json's rope_scaling, which mha reads)"
    )  # fmt: skip
    return (
        f"a context of {tokens:,} tokens is past the length derived from {model.name}'s config.json, and an engine"
        f" refuses such a launch line: {each}; the override serves the length, but outputs past the length the model"
        f" was trained to are not assured{extend}"
    )
