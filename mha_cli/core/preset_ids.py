"""Presets by the names users type: the Hugging Face ids of the checkpoints each preset describes, and their short
names (the id's name part, any case: ``llama-3.1-8b-instruct``).

An id resolves through the local Hugging Face cache first (``core.sources``); a preset stands in for it only when
its config.json is not cached. Each preset's own checkpoint (the one its ``source`` names) comes first; the others
listed have the same config.json but for token ids (an -Instruct repo differs in ``eos_token_id``). A checkpoint
whose config differs in any figure is not listed: google/gemma-2-9b-it scales attention by 224 ** -0.5, not
gemma-2-9b's 256 ** -0.5.
"""

from __future__ import annotations

from functools import cache

PRESET_IDS: dict[str, str] = {
    # Hugging Face id: preset
    "openai-community/gpt2": "gpt2",
    "meta-llama/Llama-2-7b-hf": "llama-2-7b",
    "meta-llama/Llama-2-13b-hf": "llama-2-13b",
    "meta-llama/Llama-2-70b-hf": "llama-2-70b",
    "meta-llama/Meta-Llama-3-8B": "llama-3-8b",
    "meta-llama/Meta-Llama-3-8B-Instruct": "llama-3-8b",
    "meta-llama/Meta-Llama-3-70B": "llama-3-70b",
    "meta-llama/Meta-Llama-3-70B-Instruct": "llama-3-70b",
    "meta-llama/Llama-3.1-8B": "llama-3.1-8b",
    "meta-llama/Llama-3.1-8B-Instruct": "llama-3.1-8b",
    "meta-llama/Meta-Llama-3.1-8B-Instruct": "llama-3.1-8b",  # the repo's name before Meta renamed it
    "meta-llama/Llama-3.1-70B": "llama-3.1-70b",
    "meta-llama/Llama-3.1-70B-Instruct": "llama-3.1-70b",
    "meta-llama/Meta-Llama-3.1-70B-Instruct": "llama-3.1-70b",
    "meta-llama/Llama-3.3-70B-Instruct": "llama-3.1-70b",  # Llama 3.1 70B's architecture, retrained
    "meta-llama/Llama-3.1-405B": "llama-3.1-405b",
    "meta-llama/Llama-3.1-405B-Instruct": "llama-3.1-405b",
    "meta-llama/Llama-3.2-1B": "llama-3.2-1b",
    "meta-llama/Llama-3.2-1B-Instruct": "llama-3.2-1b",
    "mistralai/Mistral-7B-v0.1": "mistral-7b-v0.1",
    "mistralai/Mistral-Nemo-Base-2407": "mistral-nemo-12b",
    "microsoft/Phi-3-mini-4k-instruct": "phi-3-mini",
    "Qwen/Qwen2.5-7B": "qwen2.5-7b",
    "Qwen/Qwen3-0.6B": "qwen3-0.6b",
    "Qwen/Qwen3-8B": "qwen3-8b",
    "google/gemma-2-9b": "gemma-2-9b",
    # Gemma 3's 4B-27B checkpoints, -pt and -it, are multimodal: the text model and its SigLIP tower (the -it
    # presets; the text presets gemma-3-27b and gemma-3-4b leave the tower out, ~417M parameters vLLM loads)
    "google/gemma-3-27b-it": "gemma-3-27b-it",
    "google/gemma-3-27b-pt": "gemma-3-27b-it",  # the same config (its text_config priced as the -it's; audit5)
    "tiiuae/falcon-7b": "falcon-7b",
    "openai/gpt-oss-20b": "gpt-oss-20b",
    "openai/gpt-oss-120b": "gpt-oss-120b",
    "Qwen/Qwen3-30B-A3B": "qwen3-30b-a3b",
    "Qwen/Qwen3-235B-A22B-Instruct-2507": "qwen3-235b-a22b-2507",
    "mistralai/Mixtral-8x7B-v0.1": "mixtral-8x7b",
    "mistralai/Mixtral-8x7B-Instruct-v0.1": "mixtral-8x7b",
    "deepseek-ai/DeepSeek-V2-Lite": "deepseek-v2-lite",
    "deepseek-ai/DeepSeek-V2-Lite-Chat": "deepseek-v2-lite",
    "deepseek-ai/DeepSeek-V3": "deepseek-v3",
    "deepseek-ai/DeepSeek-V3-0324": "deepseek-v3",
    "deepseek-ai/DeepSeek-R1": "deepseek-v3",  # DeepSeek-V3's architecture and fp8 checkpoint format
    "deepseek-ai/DeepSeek-R1-0528": "deepseek-v3",
    "google/gemma-3-4b-it": "gemma-3-4b-it",
    "meta-llama/Llama-4-Scout-17B-16E": "llama-4-scout",
    "meta-llama/Llama-4-Scout-17B-16E-Instruct": "llama-4-scout",  # its text_config equals the base's (audit5)
    "Qwen/Qwen3-Next-80B-A3B-Instruct": "qwen3-next-80b-a3b",
    "Qwen/Qwen3-Next-80B-A3B-Thinking": "qwen3-next-80b-a3b",
    "ai21labs/AI21-Jamba-Mini-1.5": "jamba-mini-1.5",
    "tiiuae/Falcon-H1-7B-Instruct": "falcon-h1-7b",
    "ibm-granite/granite-4.0-h-small": "granite-4.0-h-small",
    "MiniMaxAI/MiniMax-Text-01": "minimax-text-01",
    "moonshotai/Kimi-Linear-48B-A3B-Instruct": "kimi-linear-48b-a3b",
    "deepseek-ai/DeepSeek-V3.2-Exp": "deepseek-v3.2-exp",
    "moonshotai/Kimi-K2-Instruct": "kimi-k2",
    "MiniMaxAI/MiniMax-M2": "minimax-m2",
    "MiniMaxAI/MiniMax-M2.7": "minimax-m2.7",
    "google/gemma-3n-E4B-it": "gemma-3n-e4b",
    "CohereLabs/c4ai-command-r7b-12-2024": "command-r7b",
    "HuggingFaceTB/SmolLM3-3B": "smollm3-3b",
}
"""Every Hugging Face id a preset answers to, the preset's own checkpoint first."""


def preset_for_id(repo: str) -> str | None:
    """The preset describing ``repo`` (``org/name``, any case), or None."""
    return _by_lower_id().get(repo.lower())


def id_for_short_name(name: str) -> str | None:
    """The listed id whose name part is ``name`` (any case; ``deepseek-r1`` -> ``deepseek-ai/DeepSeek-R1``), or None."""
    return _by_short_name().get(name.strip().lower())


def checkpoint_id(preset: str) -> str | None:
    """The Hugging Face id of ``preset``'s own checkpoint (the first listed for it), or None when none is listed."""
    return next((repo for repo, name in PRESET_IDS.items() if name == preset), None)


def ids_of(preset: str) -> list[str]:
    """Every id ``preset`` answers to, its own checkpoint's first."""
    return [repo for repo, name in PRESET_IDS.items() if name == preset]


def short_names() -> list[str]:
    """The short names, for did-you-mean."""
    return list(_by_short_name())


TOWER_LEFT_OUT: dict[str, int] = {"llama-4-scout": 871_932_416}
"""Presets an id of a multimodal checkpoint resolves to that hold its text model only, with the parameters of the
vision tower and projector vLLM also loads (Llama-4-Scout-17B-16E: its published config.json priced by ``mha kv``,
equal to transformers' ``Llama4ForConditionalGeneration`` on the meta device; newuser trial 250): said, not left
silent."""

TEXT_MODELS: dict[str, str] = {"gemma-3-27b": "gemma-3-27b-it", "gemma-3-4b": "gemma-3-4b-it"}
"""Presets that are the text model of a multimodal checkpoint, with no checkpoint of their own: no id resolves to
them (an id is priced with its vision tower, as vLLM loads it: the preset named here), and their launch lines name
no checkpoint."""


@cache
def _by_lower_id() -> dict[str, str]:
    return {repo.lower(): preset for repo, preset in PRESET_IDS.items()}


@cache
def _by_short_name() -> dict[str, str]:
    return {repo.split("/")[1].lower(): repo for repo in PRESET_IDS}
