"""What a launch line (``vllm serve MODEL``) names: the model as the user named it, or a placeholder to replace.

In order: the Hugging Face id typed (or the checkpoint a preset describes); the model folder typed, when it holds
weights; the config's ``_name_or_path`` when it is a Hugging Face id; else ``PLACEHOLDER``, and a note saying what to
put there. A config file's name (``deepseek-ai__DeepSeek-R1.json``) names nothing an engine can load.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal

from mha_cli.core.hf_cache import HfId, parse_hf_id
from mha_cli.core.record import Record

PLACEHOLDER = "MODEL_FOLDER_OR_HF_ID"
"""The model in a launch line when nothing the user gave names a checkpoint."""
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt")
"""Files a serving engine loads weights from (vLLM's ``auto`` load format: safetensors, else PyTorch files)."""

NamedBy = Literal["hf-id", "preset", "folder", "gguf-file", "name_or_path", "placeholder"]


class ServedModel(Record):
    """The model a launch line loads, how it was found, and what to check or replace."""

    model: str
    """A Hugging Face id, a folder, or ``PLACEHOLDER``."""
    revision: str | None = None
    """The revision typed after ``@`` (``--revision``); None: the default branch."""
    named_by: NamedBy
    note: str | None = None
    """Shown under the launch lines: what to replace, or where the name came from when the user did not type it."""
    remote_code: str | None = None
    """Why the engines load it only with ``--trust-remote-code`` (``core.remote_code``); None: they load it without."""

    def remote_code_note(self, engines: list[str]) -> str | None:
        """The note on the flag under launch lines for ``engines`` (``vllm``, ``sglang``, ``trtllm``), where they
        write it."""
        if self.remote_code is None or not engines:
            return None
        flag = "--trust-remote-code" if engines != ["trtllm"] else "--trust_remote_code"
        also = " (trtllm-serve's --trust_remote_code)" if "trtllm" in engines and flag != "--trust_remote_code" else ""
        return f"{flag}{also} runs Python code from the checkpoint: {self.remote_code}"


def placeholder(why: str) -> ServedModel:
    """``PLACEHOLDER``, with ``why`` nothing names a checkpoint."""
    return ServedModel(
        model=PLACEHOLDER, named_by="placeholder",
        note=f"replace {PLACEHOLDER} with the model's folder or Hugging Face id: {why}",
    )  # fmt: skip


def by_id(hf_id: HfId) -> ServedModel:
    """The id the user typed."""
    return ServedModel(model=hf_id.repo, revision=hf_id.revision, named_by="hf-id")


def by_preset(repo: str) -> ServedModel:
    """The checkpoint a preset (or its short name) describes."""
    return ServedModel(model=repo, named_by="preset")


def from_config(config_path: Path, data: dict) -> ServedModel:
    """A config.json read from a file or folder: the folder (as typed) when it holds weights, else the config's
    ``_name_or_path`` when it is a Hugging Face id, else the placeholder."""
    folder = config_path.parent
    if config_path.name == "config.json" and holds_weights(folder):
        return ServedModel(model=str(folder), named_by="folder")
    name_or_path = data.get("_name_or_path")
    hf_id = parse_hf_id(name_or_path) if isinstance(name_or_path, str) else None
    method = _quant_method(data)
    if hf_id is not None and method and not _names_quantized_checkpoint(hf_id.repo):
        return placeholder(
            f"the config's _name_or_path, {hf_id.repo}, names no quantized checkpoint where the config declares"
            f" {method} weights: it may be the model they were quantized from, another deployment"
        )  # trial 307 #2: vllm serve on the bf16 base, twice the weights priced
    if hf_id is not None and hf_id.revision is None:
        return ServedModel(
            model=hf_id.repo, named_by="name_or_path",
            note=f"{hf_id.repo} is the config's _name_or_path: replace it if the checkpoint you serve is elsewhere",
        )  # fmt: skip
    if config_path.name == "config.json":
        return placeholder(f"{folder} holds no weights ({', '.join('*' + s for s in WEIGHT_SUFFIXES)})")
    return placeholder(f"{config_path.name} is a config file, not a checkpoint")


QUANTISED_NAME = re.compile(
    r"fp8|fp4|fp6|int4|int8|awq|gptq|w\d+a\d+|bnb|\dbit|quant|exl2|marlin|gguf|nf4|mlx|-q\d", re.IGNORECASE
)
"""A word that names a quantized checkpoint in a Hugging Face id (``Qwen/Qwen3-8B-FP8``, ``...-AWQ``, ``-W4A16``)."""


def _names_quantized_checkpoint(repo: str) -> bool:
    """Whether Hugging Face id ``repo`` names a quantized checkpoint: by a word of its name (``QUANTISED_NAME``), or
    as a preset's own checkpoint published quantized (``openai/gpt-oss-20b``'s mxfp4, ``deepseek-ai/DeepSeek-V3``'s
    fp8: ``presets.CHECKPOINT_WEIGHTS``; review 308 #2)."""
    from mha_cli.core.preset_ids import preset_for_id
    from mha_cli.core.presets import CHECKPOINT_WEIGHTS

    return bool(QUANTISED_NAME.search(repo)) or preset_for_id(repo) in CHECKPOINT_WEIGHTS


def _quant_method(data: dict) -> str | None:
    """The quantization a config declares (its own or its text model's ``quantization_config``; a ModelOpt sidecar
    merged by the caller): its ``quant_method``, or ``quantization_config`` when it names none."""
    for config in (data, data.get("text_config")):
        declared = config.get("quantization_config") if isinstance(config, dict) else None
        if isinstance(declared, dict):
            modelopt = declared.get("quantization")  # hf_quant_config.json: {"quantization": {"quant_algo": ...}}
            method = declared.get("quant_method") or (
                modelopt.get("quant_algo") if isinstance(modelopt, dict) else None
            )
            return method if isinstance(method, str) and method else "quantization_config"
    return None


def from_gguf(path: Path) -> ServedModel:
    """A GGUF file: vLLM loads the file itself (``vllm serve ./model.gguf``)."""
    return ServedModel(
        model=str(path), named_by="gguf-file",
        note="vLLM serves a single GGUF file (merge a split one first); add --tokenizer with the base model's Hugging"
        " Face id, which vLLM recommends over converting the file's own tokenizer",
    )  # fmt: skip


def holds_weights(folder: Path) -> bool:
    """Whether ``folder`` holds a weights file an engine would load (not looking into subfolders)."""
    try:
        with os.scandir(folder) as entries:
            return any(entry.name.endswith(WEIGHT_SUFFIXES) for entry in entries)
    except OSError:
        return False
