"""The multi-token-prediction layers a config.json declares: how many, read from the field its model type uses.

DeepSeek-V3/R1, GLM-4.5+ and Qwen3-Next count them in ``num_nextn_predict_layers``; Qwen3.5/3.6 in
``mtp_num_hidden_layers`` (``MTP_FIELDS``). Their checkpoints number DeepSeek's and GLM's after the decoder's layers
(``model.layers.{num_hidden_layers}``). Read by ``core.speculative`` (the drafter's layers) and
``core.layer_entries`` (quantization entries naming them). Pure Python.
"""

from __future__ import annotations

from typing import Any

MTP_FIELDS = {"qwen3_5_text": "mtp_num_hidden_layers", "qwen3_5_moe_text": "mtp_num_hidden_layers",
              "qwen3_5": "mtp_num_hidden_layers", "qwen3_5_moe": "mtp_num_hidden_layers"}  # fmt: skip
"""Model types whose MTP layers are counted by another field than ``num_nextn_predict_layers``: Qwen3.5/3.6's
``mtp_num_hidden_layers``, which vLLM reads as the drafter's ``n_predict`` (``config/speculative.py``
``SpeculativeConfig.hf_config_override``, its ``qwen3_5``/``qwen3_5_moe`` -> ``qwen3_5_mtp`` branch)."""


def declared_mtp_layers(config: dict[str, Any]) -> int:
    """The MTP layers ``config`` (a config.json's contents) declares, its ``text_config``'s where it nests one; 0 when
    none (or a value that is no count)."""
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    count = text.get("num_nextn_predict_layers") or text.get(MTP_FIELDS.get(text.get("model_type"), ""), 0) or 0
    return count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else 0
