"""Pipeline stages of a model whose layers here merge the engine's layers (``core.pipeline.layer_stage_sizes``):
Nemotron-H's 52 blocks (num_hidden_layers) are 29 layers here, a mixer with the feed-forward block after it. The
engines split the 52 blocks (trial 286 #3), each layer going to the stage of its mixer block."""

from __future__ import annotations

import pytest

from mha_cli.core.errors import BadInputError
from mha_cli.core.pipeline import engine_layer_spans, layer_stage_sizes, stage_sizes
from mha_cli.core.sources import load_source
from tests.conftest import reference_hf_config

NANO = load_source(str(reference_hf_config("nvidia-nemotron-3-nano-30b-a3b"))).model
PATTERN = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME"
"""Nemotron-3-Nano-30B-A3B's hybrid_override_pattern (its config.json): 23 Mamba-2, 6 attention, 23 MoE blocks."""


def _by_hand(pp: int, split: str) -> list[int]:
    """Each stage's mixer blocks, counted on the pattern as the engine splits its 52 blocks."""
    sizes, first = [], 0
    for blocks in stage_sizes(len(PATTERN), pp, split):
        sizes.append(sum(letter in "M*" for letter in PATTERN[first : first + blocks]))
        first += blocks
    return sizes


def test_the_spans_are_the_configs_blocks():
    spans = engine_layer_spans(NANO)
    assert len(spans) == NANO.n_layers == 29 and sum(spans) == len(PATTERN) == 52
    assert engine_layer_spans(load_source("llama-3-8b").model) is None  # one engine layer a layer


@pytest.mark.parametrize("split", ["vllm", "sglang", "trtllm"])
@pytest.mark.parametrize("pp", [2, 4, 8])
def test_each_stage_holds_the_mixers_of_the_engines_blocks(pp, split):
    # vLLM at pp 8: blocks 6,6,6,7,7,7,7,6, so stage 0 is MEMEM* (4 layers, one attention), not 29 // 8 + 1 layers
    assert layer_stage_sizes(NANO, pp, split) == _by_hand(pp, split)
    assert sum(layer_stage_sizes(NANO, pp, split)) == 29
    assert layer_stage_sizes(NANO, 8, "vllm") == [4, 3, 3, 4, 4, 4, 4, 3]


def test_a_stage_of_feed_forward_blocks_alone_is_refused():
    with pytest.raises(BadInputError, match="holds only a feed-forward block"):
        layer_stage_sizes(NANO, 52, "vllm")
