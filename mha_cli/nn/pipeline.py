"""One pipeline stage of a decoder: its layers, the embedding on the first stage, the norm and head on the last.

``build_stage(spec, pp, stage)`` builds ``core.pipeline``'s layout: the stage's layers as a decoder of their own
(``core.pipeline.stage_model``: each keeps its kind), without the parts the stage does not hold. ``forward``
takes token ids (b, s) on the first stage and hidden states (b, s, d) on the others, and returns logits
(b, s, v) on the last stage and hidden states (b, s, d) on the others, so that chaining every stage's forward
is the whole decoder's. ``stage_state_dict_names`` maps the stage's parameter names to the whole model's
(``model.layers.{i}`` -> ``model.layers.{first + i}``), so seed-derived weights of the whole model load into it.
"""

from __future__ import annotations

import re
from typing import Any

import torch
from torch import nn

from mha_cli.core.pipeline import StageLayout, stage_layout, stage_model
from mha_cli.core.schemas import MlaCacheMode, ModelSpec
from mha_cli.nn.model import DecoderLM, build_model

_LAYER = re.compile(r"^model\.layers\.(\d+)\.")


class PipelineStage(nn.Module):
    """``forward(inputs, caches, start_pos)``: see the module docstring. ``layout`` says what the stage holds."""

    def __init__(self, decoder: DecoderLM, layout: StageLayout) -> None:
        super().__init__()
        self.decoder = decoder
        self.layout = layout
        body = decoder.model
        if not layout.embedding:
            if not (layout.head and decoder.spec.embeddings.tied):  # a tied head keeps the embedding as its matrix
                del body.embed_tokens
            for table in ("embed_positions", "embed_norm", "embed_token_types", "embed_project"):  # BLOOM's, BERT's
                if hasattr(body, table):
                    delattr(body, table)
        if not layout.head:
            if hasattr(body, "norm"):  # GPT-1 has no final norm
                del body.norm
            for head in ("lm_head", "head_transform"):  # BERT's transform before the head
                if hasattr(decoder, head):
                    delattr(decoder, head)

    def forward(self, inputs: torch.Tensor, caches: list[Any] | None = None, start_pos: int = 0) -> torch.Tensor:
        x = self.decoder.embed(inputs, start_pos) if self.layout.embedding else inputs  # (b, s, d)
        x = self.decoder.run_layers(x, caches, start_pos)  # (b, s, d)
        return self.decoder.project(x) if self.layout.head else x  # (b, s, v) or (b, s, d)

    def new_cache(self, batch: int, max_seq: int, dtype: torch.dtype | str | None = None) -> list[Any]:
        return self.decoder.new_cache(batch, max_seq, dtype=dtype)

    def whole_model_name(self, name: str) -> str:
        """The whole model's name for this stage's parameter ``name`` (``decoder.`` prefix dropped, layers renumbered)."""
        local = name.removeprefix("decoder.")
        match = _LAYER.match(local)
        if match is None:
            return local
        return f"model.layers.{int(match.group(1)) + self.layout.first_layer}.{local[match.end() :]}"


def build_stage(
    spec: ModelSpec,
    pp: int,
    stage: int,
    *,
    dtype: torch.dtype | None = None,
    device: torch.device | str | None = None,
    mla_mode: MlaCacheMode = "absorbed",
    tp_rank: int = 0,
    tp_size: int = 1,
) -> PipelineStage:
    """Stage ``stage`` of ``pp`` of ``spec`` (``core.pipeline.stage_layout``, vLLM's split where pp does not divide
    the layers), tensor-parallel rank ``tp_rank`` of ``tp_size`` of it, weights drawn as ``build_model``'s."""
    layout = stage_layout(spec, pp, stage)
    decoder = build_model(
        stage_model(spec, layout), dtype=dtype, device=device, mla_mode=mla_mode, tp_rank=tp_rank, tp_size=tp_size
    )
    return PipelineStage(decoder, layout)
