"""BERT's transform before the LM head (``ModelSpec.lm_head_transform``): a linear with bias from d_model to the
head's width (the embedding width, or RemBERT's ``lm_head_size``), the activation, a norm of the model's kind
(BERT's ``cls.predictions.transform``, RoBERTa's ``lm_head.dense`` and ``layer_norm``, ELECTRA's
``generator_predictions``). Shapes: ``b`` batch, ``s`` tokens, ``d`` d_model, ``e`` the head's width (d_model,
ELECTRA's ``embedding_size``, RemBERT's ``lm_head_size``)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from mha_cli.core.schemas import ModelSpec
from mha_cli.nn.mlp import ACTIVATIONS
from mha_cli.nn.norms import make_norm


class HeadTransform(nn.Module):
    """``forward(x (b, s, d)) -> (b, s, e)``: norm(act(dense(x)))."""

    def __init__(self, spec: ModelSpec, **factory: Any) -> None:
        super().__init__()
        if spec.embeddings.lm_head_transform is None:
            raise ValueError("HeadTransform needs spec.lm_head_transform")
        width = spec.embeddings.lm_head_size or spec.embeddings.width or spec.d_model
        self.dense = nn.Linear(spec.d_model, width, bias=spec.embeddings.lm_head_transform_bias, **factory)
        self.act = ACTIVATIONS[spec.embeddings.lm_head_transform]
        self.norm = make_norm(spec.block.norm, width, spec.block.norm_eps, bias=spec.block.norm_bias, **factory)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.act(self.dense(x)))  # (b, s, e)
