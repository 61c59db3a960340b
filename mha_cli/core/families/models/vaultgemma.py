"""VaultGemma: Gemma 2's attention (soft caps, query_pre_attn_scalar, alternating sliding-window and global layers)
with two norms a layer, the MLP's input norm named ``pre_feedforward_layernorm``."""

from mha_cli.core.families import EQUAL_BY_SWEEP, SLIDES, Family
from mha_cli.core.families.models.gemma import GEMMA_LAYOUT
from mha_cli.core.weight_layout import WeightLayout

FAMILY = Family(
    model_types=("vaultgemma",),
    config_class="VaultGemmaConfig (transformers 5.24)",
    window_fields=SLIDES,
    defaults={
        "query_pre_attn_scalar": 256,
        "attn_logit_softcapping": 50.0,
        "final_logit_softcapping": 30.0,
        "hidden_activation": "gelu_pytorch_tanh",
    },
    spellings={"activation": ("hidden_activation",)},
    layout=GEMMA_LAYOUT,
    tied_by_default=True,
    local_cycle=("local", "global"),
    local_cycle_note="layer pattern: VaultGemma alternates sliding-window and global layers",
    names=("vaultgemma",),
    equal_test=EQUAL_BY_SWEEP,
    weights=WeightLayout(renames=((r"\.pre_feedforward_layernorm\.", ".post_attention_layernorm."),)),
)
