"""The names a checkpoint and vLLM give one of mha's modules, on which a quantisation config's lists are matched.

mha names modules Llama's way (``core.inventory``: ``model.layers.N.self_attn.q_proj``), a fixed-state mixer's
under ``self_attn`` too. A config's ``ignore`` / ``exclude_modules`` / ``modules_to_not_convert`` names the
checkpoint's modules, and vLLM matches it against its own module names (read in vLLM 0.19.1):

- a plain name or a glob is mapped from the checkpoint's names to vLLM's by the model's ``hf_to_vllm_mapper``
  (``apply_vllm_mapper`` of ``Fp8Config``, ``ModelOptQuantConfigBase``, ``CompressedTensorsConfig``) before it is compared,
  so it is the checkpoint's spelling that it must name;
- a ``re:`` pattern is not mapped (``CompressedTensorsConfig.apply_vllm_mapper``: 'Regex patterns: "re:.*proj" ->
  preserved'): its regex meets vLLM's own name, as ``compressed_tensors/utils.py`` ``_is_equal_or_regex_match`` calls
  ``re.match(pattern, layer_name)``. A published AWQ recipe for Qwen3.5-27B says so: 'use "re:.*layers\\.0\\." (not
  "re:model\\.layers\\.0\\.") because the VLM wrapper adds a "language_model" prefix' (search index id 24461373345).

These matchers (``should_ignore_layer``, ``is_layer_skipped``, ``is_layer_excluded``) read the same in 0.16.0, 0.17.0,
0.18.0 and 0.19.1, and compressed-tensors' and ModelOpt's in 0.27.1.

Spellings that differ from mha's, each read in vLLM 0.19.1 (and the module prefixes in 0.27.1):

- the Gated DeltaNet of Qwen3-Next and Qwen3.5/3.6 sits under ``linear_attn`` in the checkpoint and in vLLM
  (``models/qwen3_next.py`` and ``models/qwen3_5.py`` ``Qwen3_5DecoderLayer``: ``prefix=f"{prefix}.linear_attn"``;
  checkpoints' ``model.layers.N.linear_attn.in_proj_qkvz``, ``model.language_model.layers.N.linear_attn.in_proj_qkv``);
- Qwen3.5/3.6's image-text checkpoints (``Qwen3_5ForConditionalGeneration``, a vision tower in the config) keep the
  language model under ``model.language_model.``, which vLLM's mapper turns into ``language_model.model.``, and the
  vision tower under ``model.visual.`` (vLLM: ``visual.``) (``models/qwen3_5.py`` / ``qwen3_vl.py``
  ``hf_to_vllm_mapper``).

Every other model is matched on mha's names, which are its checkpoint's for Llama-like models; ``WeightScheme
.unmatched`` says which entries name none of them. Pure Python.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple, Protocol

GATED_DELTANET_MODULES = frozenset(
    {"in_proj_qkvz", "in_proj_ba", "in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a", "conv1d", "dt_bias", "A_log",
     "norm", "out_proj"}
)  # fmt: skip
"""The modules of a Gated DeltaNet (``core.inventory``), which mha names under ``self_attn``."""

_MIXER_MODULE = re.compile(r"model\.layers\.(\d+)\.self_attn\.([A-Za-z_0-9]+)")


class ModuleNames(NamedTuple):
    """How a model's checkpoint and vLLM spell mha's module names."""

    mixer: str = "self_attn"
    """The attribute a Gated DeltaNet sits under (mha's: ``self_attn``)."""
    checkpoint_root: str = "model."
    """What the checkpoint writes for mha's leading ``model.`` of the language model."""
    engine_root: str = "model."
    """What vLLM writes for it."""
    checkpoint_vision: str = "model.visual."
    engine_vision: str = "model.visual."

    def checkpoint(self, module: str) -> str:
        """``module`` as the checkpoint names it: what a plain name or a glob of the config names."""
        return self._spelled(module, self.checkpoint_root, self.checkpoint_vision)

    def engine(self, module: str) -> str:
        """``module`` as vLLM names it: what a ``re:`` pattern of the config meets."""
        return self._spelled(module, self.engine_root, self.engine_vision)

    def _spelled(self, module: str, root: str, vision: str) -> str:
        if self.mixer != "self_attn":
            found = _MIXER_MODULE.match(module)
            if found is not None and found.group(2) in GATED_DELTANET_MODULES:
                module = f"model.layers.{found.group(1)}.{self.mixer}.{module[found.start(2) :]}"
        if module.startswith("model.visual."):
            return vision + module.removeprefix("model.visual.")
        if module.startswith("model."):
            return root + module.removeprefix("model.")
        return module


MHA_NAMES = ModuleNames()
"""Names as mha writes them: a Llama-like checkpoint's."""

QWEN3_NEXT_NAMES = ModuleNames(mixer="linear_attn")
QWEN3_5_IMAGE_TEXT_NAMES = ModuleNames(
    mixer="linear_attn", checkpoint_root="model.language_model.", engine_root="language_model.model.",
    engine_vision="visual.",
)  # fmt: skip


class _Model(Protocol):
    """What ``module_names`` reads of a ``core.schemas.ModelSpec`` (named structurally: ``core.schemas`` imports
    ``core.weight_scheme``, which imports this module)."""

    recurrent: Any
    vision: Any


def module_names(model: _Model) -> ModuleNames:
    """How ``model``'s checkpoint and vLLM spell its modules."""
    if model.recurrent is None or model.recurrent.kind != "gated_deltanet":
        return MHA_NAMES
    if model.recurrent.split_projections and model.vision is not None:
        return QWEN3_5_IMAGE_TEXT_NAMES
    return QWEN3_NEXT_NAMES
