"""OLMo 2: post-norms inside the residual (no input norms), q/k RMSNorms over the whole projection."""

from mha_cli.core.families import Family

OLMO2_LAYOUT = {"norm_placement": "post", "qk_norm": True, "qk_norm_span": "projection"}
"""OLMo 2's block (OLMo 3 and FlexOlmo keep it): x + norm(attn(x)), h + norm(mlp(h)); q_norm over n_heads * head_dim,
k_norm over n_kv_heads * head_dim."""

FAMILY = Family(
    model_types=("olmo2",),
    config_class="Olmo2Config (transformers 5.24)",
    layout=OLMO2_LAYOUT,
    names=("olmo2", "olmo-2"),
    equal_test="tests/test_nn_post_norm.py (OLMo 2: whole decoder)",
)
