"""RWKV-7 (``model_type`` rwkv7: remote code, flash-linear-attention): refused, naming why (see ``rwkv``)."""

from __future__ import annotations

from mha_cli.core.families import Family
from mha_cli.core.families.models.rwkv import NEWER_RWKV_REFUSAL

FAMILY = Family(
    model_types=("rwkv7",),
    config_class="none in transformers 5.24 (remote code)",
    refused=NEWER_RWKV_REFUSAL.format(version=7),
    names=("rwkv-7",),
)
