"""MiniCPM3: MLA attention with MiniCPM's embedding, residual and output scales; tied embeddings."""

from mha_cli.core.families import ANY_VALUE, MLA_UNREAD, Family

FAMILY = Family(
    model_types=("minicpm3",),
    config_class="MiniCPM3Config (transformers 5.24)",
    tied_by_default=True,
    names=("minicpm3",),
    differences=(
        "MiniCPM3 scales the embeddings by scale_emb, each residual branch by scale_depth / sqrt(n_layers) and the"
        " final hidden states by dim_model_base / hidden_size; none here",
    ),
    left_unread={**MLA_UNREAD, "scale_emb": ANY_VALUE, "scale_depth": ANY_VALUE, "dim_model_base": ANY_VALUE},
)
