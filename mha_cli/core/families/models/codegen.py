"""CodeGen: GPT-J's parallel block and interleaved partial RoPE, q/v/k fused in 4 model-parallel shards."""

from mha_cli.core.families import ANY_VALUE, EQUAL_BY_SWEEP, Family
from mha_cli.core.families.models.gptj import GPTJ_TREE, rotary_dim_rotation
from mha_cli.core.weight_layout import FusedSplit, WeightLayout

# CodeGen: qkv_proj is 4 shards (the model-parallel ranks it was trained on), each a quarter of q, then of v, then
# of k.
WEIGHTS = WeightLayout(
    renames=(*GPTJ_TREE, (r"\.attn\.qkv_proj\.", ".self_attn.qkv_proj.")),
    fused=(
        FusedSplit(
            r"(.*)\.self_attn\.qkv_proj\.weight",
            (r"\1.self_attn.q_proj.weight", r"\1.self_attn.v_proj.weight", r"\1.self_attn.k_proj.weight"),
            "qvk_per_4_shards",
        ),
    ),
    dropped=(r"\.attn\.(causal_mask|masked_bias)$", r"\.embed_positions$"),
)

FAMILY = Family(
    model_types=("codegen",),
    config_class="CodeGenConfig (transformers 5.24)",
    defaults={"rotary_dim": 64},
    spellings={"d_ff": ("n_inner",)},
    layout={"mlp": "plain", "mlp_bias": True, "norm": "layernorm", "n_norms_per_layer": 1, "lm_head_bias": True},
    interleaved_rope=True,
    read_fields=rotary_dim_rotation,
    names=("codegen",),
    weights=WEIGHTS,
    equal_test=EQUAL_BY_SWEEP,
    left_unread={"n_ctx": ANY_VALUE},  # unused: n_positions sizes the model,
)
