"""RWKV-4 (transformers' ``rwkv``, ``RWKV/rwkv-4-*-pile``): attention-free, every block a time mix then a channel mix.

A block is x + time_mix(ln1(x)), then h + channel_mix(ln2(h)) (LayerNorms with biases; the first block normalises
the embeddings too, ``pre_ln``; ``ln_out`` after the stack). The time mix (``attention``) keeps, per channel, a
numerator, a denominator and a running maximum, in fp32 whatever the model's dtype, and the last input of each mix
(the token shift), in the model's: 5 x hidden_size values a layer, as transformers' RwkvModel allocates them. The
channel mix (key to ``intermediate_size``, ReLU squared, value back, a receptance gate) is the block's feed-forward,
counted with the mixer (``ModelSpec.d_ff`` its width). transformers sizes the state by hidden_size, so a config whose
``attention_hidden_size`` differs is refused. RWKV-5, -6 and -7 (remote code, flash-linear-attention) are other
families that neither transformers nor vLLM implements: refused, saying so (``rwkv5``, ``rwkv6``, ``rwkv7``).
``rescale_every`` halves the activations every few layers at inference: numerics only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_cli.core.errors import BadInputError
from mha_cli.core.families import ANY_VALUE, Family
from mha_cli.core.families.models.mamba import every_layer_mixes

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader


NEWER_RWKV_REFUSAL = (
    "RWKV-{version} runs only as remote code: neither transformers 5.24 nor vLLM's model registry has it, so no engine"
    " mha models serves it and nothing checks its weights or state (mha prices transformers' RWKV-4, model_type rwkv)"
)
"""Why RWKV-5, -6 and -7 configs are refused (their ``Family.refused``): vLLM's registry
(``vllm/model_executor/models/registry.py``, ``_TEXT_GENERATION_MODELS``) has no RWKV class of any version, and the
issue's bar is "none refused that vLLM serves"."""


def _state(r: ConfigReader, d_model: int, fields: dict[str, Any]) -> dict[str, Any]:
    """d_model channels of (numerator, denominator, maximum) in fp32, the two token shifts in the model's dtype."""
    width = r.get("attention_hidden_size")
    if width is not None and width != d_model:
        raise BadInputError(
            f"{r.origin}: attention_hidden_size {width} differs from hidden_size {d_model}: transformers' RWKV sizes"
            " its state by hidden_size and cannot run it, so mha does not price it"
        )
    r.assume(
        None, "RWKV: no serving engine mha models runs it; its state is priced as transformers' RwkvModel keeps it"
    )
    return {
        "kind": "rwkv", "n_heads": d_model, "head_dim": 1, "state_dim": 3, "conv_dim": 2 * d_model, "conv_kernel": 2,
        "state_dtype": "fp32", "output_norm": False,
    }  # fmt: skip


def _channel_mix_width(r: ConfigReader) -> int:
    """intermediate_size, else RwkvConfig's 4 x hidden_size."""
    width = r.get("intermediate_size")
    if width is None:
        return r.assume(4 * r.count("hidden size", "hidden_size"), "intermediate_size absent: 4 x hidden_size")
    return r.count("intermediate_size", "intermediate_size")


FAMILY = Family(
    model_types=("rwkv",),
    config_class="RwkvConfig (transformers 5.24)",
    layout={"mlp_pattern": ["none"], "mlp": "plain", "norm": "layernorm", "embedding_norm": True},
    layer_kinds=every_layer_mixes,
    fixed_state="RWKV",
    attention_free=True,
    state=_state,
    dense_width=_channel_mix_width,
    names=("rwkv-4",),
    left_unread={"rescale_every": ANY_VALUE, "context_length": ANY_VALUE},
)
