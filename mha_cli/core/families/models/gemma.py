"""Gemma: Llama's geometry with Gemma's norms (1 + weight), embedding scale and GeGLU MLP; tied embeddings."""

from types import MappingProxyType

from mha_cli.core.families import Family

GEMMA_LAYOUT = MappingProxyType({"mlp": "gated", "norm_weight_offset": 1.0, "scale_embeddings": True})
"""What every Gemma generation computes whatever its config.json says: a gated MLP, RMSNorms multiplying by
(1 + weight), token embeddings scaled by sqrt(d_model)."""

FAMILY = Family(
    model_types=("gemma",),
    config_class="GemmaConfig (transformers 5.24)",
    # GeGLU: GemmaConfig reads the legacy hidden_act "gelu" of the released configs as gelu_pytorch_tanh
    layout={**GEMMA_LAYOUT, "activation": "gelu_tanh"},
    tied_by_default=True,
    names=("gemma",),
    equal_test="tests/test_nn_gemma.py::test_gemma_logits_equal_transformers[gemma]",
    left_unread={"use_bidirectional_attention": False},
)
