"""GPT-1 (``openai-gpt``): post-LN blocks (the residual stream normed after each add, no final norm), learned
positions, a tanh-GELU MLP (its ``afn`` gelu is gelu_new), biases everywhere, fused Conv1D weights; tied head."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.families import EQUAL_BY_SWEEP, Family
from mha_cli.core.families.models.gpt2 import GPT2_BLOCK
from mha_cli.core.weight_layout import WeightLayout, split_qkv

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader

AFN = {"gelu": "gelu_tanh", "relu": "relu", "silu": "silu", "swish": "silu"}
"""GPT-1's ``afn`` values as ``ModelSpec.activation`` (its gelu is the tanh GELU, gelu_new)."""


def _activation(r: ConfigReader, fields: dict[str, Any]) -> None:
    afn = str(r.get("afn") or "gelu")
    if afn not in AFN:
        r.assume(None, f"afn {afn!r} is not modelled: the tanh GELU is built")
    fields["activation"] = AFN.get(afn, "gelu_tanh")


# GPT-1: GPT-2's Conv1D weights (in, out) and c_attn (q, k, v one after the other); ln_1 after attention, ln_2
# after the MLP.
WEIGHTS = WeightLayout(
    renames=(
        (r"^transformer\.tokens_embed\.", "model.embed_tokens."),
        (r"^transformer\.positions_embed\.", "model.embed_positions."),
        (r"^transformer\.h\.(\d+)\.", r"model.layers.\1."),
        (r"\.ln_1\.", ".input_layernorm."),
        (r"\.ln_2\.", ".post_attention_layernorm."),
        *GPT2_BLOCK,
    ),
    fused=(split_qkv("qkv"),),
    transposed=(r"\.(attn\.c_attn|attn\.c_proj|mlp\.c_fc|mlp\.c_proj)\.weight$",),
    dropped=(r"\.attn\.bias$", r"^position_ids$"),
)

LAYOUT = {
    "mlp": "plain", "mlp_bias": True, "activation": "gelu_tanh", "norm": "layernorm", "qkv_bias": True, "o_bias": True,
    "norm_placement": "post_residual", "final_norm": False,
}  # fmt: skip

FAMILY = Family(
    model_types=("openai-gpt",),
    config_class="OpenAIGPTConfig (transformers 5.24)",
    layout=LAYOUT,
    tied_by_default=True,
    learned_positions="n_positions",
    read_fields=_activation,
    names=("openai-gpt", "gpt-1"),
    weights=WEIGHTS,
    equal_test=EQUAL_BY_SWEEP,
)
