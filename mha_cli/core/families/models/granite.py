"""Granite (3.x): Llama's decoder with Granite's embedding, attention, residual and logit multipliers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import EQUAL_BY_SWEEP, Family

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


def _factor(r: ConfigReader, key: str) -> float:
    value = r.config.get(key)
    return 1.0 if value is None else float(value)


def read_granite_scalars(r: ConfigReader, fields: dict[str, Any]) -> None:
    """Granite's scalars: ``embedding_multiplier`` on the embeddings, ``attention_multiplier`` the softmax scale,
    ``residual_multiplier`` on each branch, the logits divided by ``logits_scaling`` (absent: 1)."""
    embedding, residual = _factor(r, "embedding_multiplier"), _factor(r, "residual_multiplier")
    if embedding != 1.0 or residual != 1.0:
        fields["multipliers"] = {"embedding": embedding, "residual": residual}
    fields["attn_scale"] = _factor(r, "attention_multiplier")
    if _factor(r, "logits_scaling") != 1.0:
        fields["logit_scale"] = 1.0 / _factor(r, "logits_scaling")


FAMILY = Family(
    model_types=("granite",),
    config_class="GraniteConfig (transformers 5.24)",
    names=("granite",),
    read_fields=read_granite_scalars,
    equal_test=EQUAL_BY_SWEEP,
)
