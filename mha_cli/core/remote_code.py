"""Which checkpoints a serving engine loads only when told to run the checkpoint's own code (``--trust-remote-code``).

vLLM, SGLang and TensorRT-LLM read a checkpoint's config and tokenizer through transformers' ``AutoConfig`` and
``AutoTokenizer``. Where either is a class transformers lacks, the checkpoint ships it as Python code named in an
``auto_map``, which transformers runs only with ``trust_remote_code=True``; without the flag the server stops before
loading a weight (vLLM 0.34's ``tokenizers/hf.py``: "consider setting `trust_remote_code=True` ... or using the
`--trust-remote-code` flag"). Two reasons, both read from what the checkpoint's config.json writes:

- **its tokenizer is code**: Moonshot's Kimi checkpoints (``model_type`` ``kimi_k2``, ``kimi_k25``, ``kimi_linear``)
  ship a tiktoken tokenizer as ``tokenization_kimi.py`` beside ``tiktoken.model`` (the Kimi-K2-Thinking checkpoint's
  file list, docs.vllm.ai/projects/ascend Kimi-K2-Thinking tutorial); vLLM's recipes start each with the flag
  (recipes.vllm.ai moonshotai/Kimi-K2-Instruct, moonshotai/Kimi-K2.5, moonshotai/Kimi-Linear-48B-A3B-Instruct).
  vLLM's own config classes for them (``transformers_utils/config.py``: ``kimi_k2`` is ``DeepseekV3Config``) do not
  load a tokenizer;
- **its config class is code**: a ``model_type`` transformers has no class for (MiniMax-Text-01's
  ``minimax_text_01``, MiniMax-M1's ``minimax_m1``, RWKV-5 to 7, a family mha reads by its ``architectures``) whose
  config names its own ``AutoConfig`` in ``auto_map``. MiniMax's vLLM guide starts MiniMax-M1 with the flag
  (platform.minimaxi.com, text-vllm-deployment).

A checkpoint whose ``auto_map`` duplicates a class transformers has (MiniMax-M2's ``minimax_m2``, DeepSeek-V3's
``deepseek_v3``: transformers 4.51 and later) needs no flag: vLLM's recipe for MiniMax-M2 starts it without. Pure
Python, no transformers import.
"""

from __future__ import annotations

from typing import Any

from mha_cli.core.families import OLD_NAMES, family

TOKENIZER_AS_CODE = {
    "kimi_k2": "Kimi-K2",
    "kimi_k25": "Kimi-K2.5",
    "kimi_linear": "Kimi-Linear",
}
"""``model_type`` -> the models whose tokenizer is the checkpoint's ``tokenization_kimi.py`` (the module docstring)."""
FAMILIES_WITHOUT_TRANSFORMERS_CLASS = frozenset({"rwkv5", "rwkv6", "rwkv7"})
"""Families mha registers that transformers has no config class for (their checkpoints carry it as code)."""
PRESET_MODEL_TYPES = {
    "kimi-k2": ("kimi_k2", "configuration_deepseek.DeepseekV3Config"),
    "kimi-linear-48b-a3b": ("kimi_linear", "configuration_kimi.KimiLinearConfig"),
    "minimax-text-01": ("minimax_text_01", "configuration_minimax_text_01.MiniMaxText01Config"),
}
"""The ``model_type`` and ``auto_map`` ``AutoConfig`` a preset's checkpoint writes, where it needs the flag (the
``config.json`` of moonshotai/Kimi-K2-Instruct, moonshotai/Kimi-Linear-48B-A3B-Instruct, MiniMaxAI/MiniMax-Text-01)."""


def _without_transformers_class(model_type: str) -> bool:
    """Whether transformers has no config class for ``model_type``: a spelling mha reads as another family's
    (``minimax_text_01`` as ``minimax``), a family transformers lacks, or none mha registers."""
    return model_type in OLD_NAMES or model_type in FAMILIES_WITHOUT_TRANSFORMERS_CLASS or family(model_type) is None


def remote_code_reason(model_type: str, auto_config: str | None) -> str | None:
    """Why a checkpoint whose config.json writes ``model_type`` (and names ``auto_config`` as its ``AutoConfig`` in
    ``auto_map``, None if none) loads only with ``--trust-remote-code``; None when it loads without."""
    if model_type in TOKENIZER_AS_CODE:
        return (
            f"{TOKENIZER_AS_CODE[model_type]}'s tokenizer is the checkpoint's own code (tokenization_kimi.py), which"
            " transformers has no class for"
        )
    if auto_config is not None and _without_transformers_class(model_type):
        return (
            f"transformers has no config class for model_type {model_type!r}: the checkpoint's own ({auto_config},"
            " its auto_map) is run"
        )
    return None


def config_remote_code(config: dict[str, Any]) -> str | None:
    """``remote_code_reason`` for a parsed config.json (a multimodal one's text model too)."""
    for part in (config, config.get("text_config")):
        if not isinstance(part, dict) or not isinstance(part.get("model_type"), str):
            continue
        auto_map = part.get("auto_map")  # its own: the outer one names the wrapper's class (review 341 #13)
        auto_config = auto_map.get("AutoConfig") if isinstance(auto_map, dict) else None
        why = remote_code_reason(part["model_type"], auto_config if isinstance(auto_config, str) else None)
        if why is not None:
            return why
    return None


def preset_remote_code(preset: str) -> str | None:
    """``remote_code_reason`` for the checkpoint preset ``preset`` describes (``PRESET_MODEL_TYPES``)."""
    written = PRESET_MODEL_TYPES.get(preset)
    return None if written is None else remote_code_reason(*written)
