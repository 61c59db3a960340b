"""Gemma: Llama's geometry with Gemma's norms, embedding scale and GeGLU MLP; tied embeddings."""

from mha_cli.core.families import Family

GEMMA_DIFFERENCES = (
    "Gemma's RMSNorm multiplies by (1 + weight); this one by weight",
    "Gemma scales the token embeddings by sqrt(d_model); not here",
    "Gemma's MLP is GeGLU (tanh GELU); this one is SwiGLU",
)
"""What the decoder does not reproduce of every Gemma generation."""

FAMILY = Family(
    model_types=("gemma",),
    config_class="GemmaConfig (transformers 5.24)",
    tied_by_default=True,
    names=("gemma",),
    differences=GEMMA_DIFFERENCES,
)
