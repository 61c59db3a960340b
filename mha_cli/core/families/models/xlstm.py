"""xLSTM (``NX-AI/xLSTM-7b``, transformers' ``xlstm``): attention-free, every block an mLSTM layer then a gated MLP.

A block is x + mlstm(norm(x)), then h + ffn(norm(h)) (RMSNorms; ``out_norm`` after the stack when ``add_out_norm``).
The mLSTM layer projects q and k to ``qk_dim`` (int(hidden_size x qk_dim_factor), as xLSTMLayer builds it), v and
the output gate to ``v_dim`` (likewise), a scalar input and forget gate per head; its state per head is the matrix
memory C (qk head dim x v head dim), the normaliser n (qk head dim) and the stabiliser m (1), in
``inference_state_dtype`` (float32 by default, as xLSTM's own kernels keep it; transformers' native fallback, without
the ``xlstm`` package, keeps its xLSTMCache in the activations' dtype whatever the field says); no convolution. The FFN is SwiGLU (proj_up_gate, proj_up,
proj_down) of width ffn_proj_factor x hidden_size rounded up to ``ffn_round_up_to_multiple_of``. Its logits are soft
capped (``output_logit_soft_cap``). ``mha verify`` does not build the mLSTM (no mixer for it).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from mha_cli.core.families import ANY_VALUE, Family
from mha_cli.core.families.models.mamba import every_layer_mixes

if TYPE_CHECKING:
    from mha_cli.core.config_reader import ConfigReader

QK_V_MULTIPLE = 64
"""xLSTMConfig's ``qk_dim`` and ``v_dim`` properties round up to a multiple of 64 (its xLSTMCache is shaped by them);
xLSTMLayer builds int(hidden_size x factor). Where the two differ, transformers cannot run the model."""


def _round_up(value: float, multiple: int) -> int:
    return math.ceil(value / multiple) * multiple


def _width(r: ConfigReader, factor_key: str) -> int:
    """The width xLSTMLayer builds (int(hidden_size x factor)); said when xLSTMCache's rounded one differs."""
    hidden = r.count("hidden size", "hidden_size", "embedding_dim") * float(r.get(factor_key))
    if _round_up(hidden, QK_V_MULTIPLE) != int(hidden):
        r.assume(None, f"{factor_key}: the layer's width {int(hidden)} is not xLSTMCache's (rounded up to 64):"
                       " transformers cannot cache this model; priced at the layer's width")  # fmt: skip
    return int(hidden)


def _state(r: ConfigReader, d_model: int, fields: dict[str, Any]) -> dict[str, Any]:
    """mLSTM: per head a qk_head_dim x v_head_dim memory (+ n and m, ``RecurrentSpec.values_per_head``), no conv; in
    fp32, xLSTMConfig's ``inference_state_dtype`` (a stated one is read by ``core.hf_import``)."""
    r.assume(None, "xLSTM: no serving engine mha models runs it; its state is priced in its inference_state_dtype")
    heads = r.count("num_heads", "num_heads")
    qk_dim, v_dim = _width(r, "qk_dim_factor"), _width(r, "v_dim_factor")
    return {
        "kind": "mlstm", "n_heads": heads, "head_dim": qk_dim // heads, "state_dim": v_dim // heads,
        "state_dtype": "fp32",
    }  # fmt: skip


def _ffn_width(r: ConfigReader) -> int:
    """proj_up's width: ffn_proj_factor x hidden_size, rounded up to ffn_round_up_to_multiple_of."""
    multiple = r.count("ffn_round_up_to_multiple_of", "ffn_round_up_to_multiple_of")
    return _round_up(r.count("hidden size", "hidden_size", "embedding_dim") * float(r.get("ffn_proj_factor")), multiple)


def _hidden_size(config: dict[str, Any], origin: str) -> dict[str, Any]:
    """xLSTM-7b's config.json states ``embedding_dim`` only; xLSTMConfig makes it hidden_size too."""
    if config.get("hidden_size") is None and config.get("embedding_dim") is not None:
        return {**config, "hidden_size": config["embedding_dim"]}
    return config


def _read_fields(r: ConfigReader, fields: dict[str, Any]) -> None:
    """``add_out_norm`` false: no norm after the last block; the logits' soft cap."""
    if r.get("add_out_norm") is False:
        fields["final_norm"] = False
    cap = r.get("output_logit_soft_cap")
    if cap:
        fields["final_logit_softcap"] = float(cap)


FAMILY = Family(
    model_types=("xlstm",),
    config_class="xLSTMConfig (transformers 5.24)",
    defaults={
        "num_heads": 8,
        "qk_dim_factor": 0.5,
        "v_dim_factor": 1.0,
        "ffn_proj_factor": 2.667,
        "ffn_round_up_to_multiple_of": 64,
        "add_out_norm": True,
        "output_logit_soft_cap": 30.0,
    },
    spellings={"layers": ("num_blocks",)},
    layout={"mlp": "gated"},
    config_view=_hidden_size,
    layer_kinds=every_layer_mixes,
    fixed_state="mLSTM",
    attention_free=True,
    state=_state,
    dense_width=_ffn_width,
    read_fields=_read_fields,
    names=("xlstm",),
    left_unread={
        **dict.fromkeys(
            (
                "embedding_dim",
                "num_blocks",
                "chunkwise_kernel",
                "sequence_kernel",
                "step_kernel",
                "mode",
                "chunk_size",
                "return_last_states",
                "autocast_kernel_dtype",
                "eps",
                "gate_soft_cap",
                "weight_mode",
                "max_inference_chunksize",
                "norm_reduction_force_float32",
            ),
            ANY_VALUE,
        ),
        "use_bias": False,
    },
)
