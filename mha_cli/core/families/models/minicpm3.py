"""MiniCPM3: MLA attention with MiniCPM's embedding, residual and output scales; tied embeddings."""

from mha_cli.core.families import Family

FAMILY = Family(
    model_types=("minicpm3",),
    config_class="MiniCPM3Config (transformers 5.24)",
    tied_by_default=True,
    names=("minicpm3",),
    differences=(
        "MiniCPM3 scales the embeddings by scale_emb, each residual branch by scale_depth / sqrt(n_layers) and the"
        " final hidden states by dim_model_base / hidden_size; none here",
    ),
)
