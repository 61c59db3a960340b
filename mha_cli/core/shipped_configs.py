"""Published config.json files mha ships, read for a Hugging Face id that is neither in the local cache nor a preset's
(trial 407 #8: today's models named by id were refused offline, their configs already read for the tests).

Each file in ``mha_cli/data/hf_configs`` is a checkpoint's config.json as its source quoted it whole, the same file
as the tests' ``tests/fixtures/hf_configs`` copy; that folder's ``SOURCES.md`` gives each source (commit, page,
index id) and what was checked against it. A file is shipped only where its source gives the published file or a
verbatim dump of it: the reconstructed and edited ones are not (qwen3-32b.json's source had its layer count edited;
qwen3.5-4b.json and phi-4.json are transformers dumps; qwen2-7b-instruct.json an edited dict of an unnamed repository,
review 409 #5). The id's cached config.json, when there is one, is read first; a preset
listed for the id comes before a shipped file. Pure Python.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import NamedTuple


class ShippedConfig(NamedTuple):
    file: str
    """Its name in ``mha_cli/data/hf_configs``."""
    source: str
    """Where its content was read (``tests/fixtures/hf_configs/SOURCES.md`` has the whole entry)."""


AICONFIGURATOR = "ai-dynamo/aiconfigurator's model_configs"
REPORT = "a model report quoting the checkpoint's config.json whole"

SHIPPED: dict[str, ShippedConfig] = {
    # Hugging Face id: its file and source
    "zai-org/GLM-4.7-Flash": ShippedConfig("glm-4.7-flash.json", REPORT),
    "zai-org/GLM-5": ShippedConfig("glm-5.json", AICONFIGURATOR),
    "zai-org/GLM-5.1": ShippedConfig("glm-5.1.json", f"{REPORT}, the same as {AICONFIGURATOR}"),
    "moonshotai/Kimi-K2.5": ShippedConfig("kimi-k2.5.json", AICONFIGURATOR),
    "nvidia/Kimi-K2.6-NVFP4": ShippedConfig("kimi-k2.6-nvfp4.json", AICONFIGURATOR),
    "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16": ShippedConfig(
        "nvidia-nemotron-3-nano-30b-a3b.json", "a JAX test module holding the config.json as a string"
    ),
    "google/gemma-4-26B-A4B": ShippedConfig("gemma-4-26b-a4b.json", AICONFIGURATOR),
    "nvidia/Gemma-4-26B-A4B-NVFP4": ShippedConfig("gemma-4-26b-a4b-nvfp4.json", AICONFIGURATOR),
    "Qwen/Qwen3.6-27B": ShippedConfig("qwen3.6-27b.json", REPORT),
    "Qwen/Qwen3-14B": ShippedConfig("qwen3-14b.json", "citsjtu2020/LLM-Prof's sglang/Model_Config.md"),
    "Qwen/Qwen3-4B": ShippedConfig("qwen3-4b.json", "a loader module holding the config.json as a string"),
    "Qwen/Qwen3-1.7B": ShippedConfig("qwen3-1.7b.json", "a transcript of `curl` on the hub's config.json"),
    "Qwen/QwQ-32B": ShippedConfig("qwq-32b.json", REPORT),
    "Qwen/Qwen2.5-72B-Instruct": ShippedConfig("qwen2.5-72b-instruct.json", REPORT),
    "Qwen/Qwen2.5-1.5B-Instruct": ShippedConfig("qwen2.5-1.5b-instruct.json", "a pinned-model check's copy"),
    "mistralai/Mistral-7B-Instruct-v0.3": ShippedConfig(
        "mistral-7b-instruct-v0.3.json", "a model-shapes document quoting the config.json"
    ),
}
"""Every id a shipped config.json answers to."""


def shipped_id_for_short_name(name: str) -> str | None:
    """The shipped id whose name part is ``name`` (any case: ``glm-5.1``, review 409 #12), or None."""
    return next((repo for repo in SHIPPED if repo.rsplit("/", 1)[-1].lower() == name.strip().lower()), None)


def shipped_config(repo: str) -> tuple[Path, str] | None:
    """The shipped config.json of ``repo`` (``org/name``, any case) and its source, or None."""
    found = next((entry for listed, entry in SHIPPED.items() if listed.lower() == repo.lower()), None)
    if found is None:
        return None
    return Path(str(resources.files("mha_cli").joinpath("data", "hf_configs", found.file))), found.source
