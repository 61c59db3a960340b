"""RWKV-5 (``model_type`` rwkv5: remote code, flash-linear-attention): refused, naming why (see ``rwkv``)."""

from __future__ import annotations

from mha_cli.core.families import Family
from mha_cli.core.families.models.rwkv import NEWER_RWKV_REFUSAL

FAMILY = Family(
    model_types=("rwkv5",),
    config_class="none in transformers 5.24 (remote code)",
    refused=NEWER_RWKV_REFUSAL.format(version=5),
    names=("rwkv-5",),
)
