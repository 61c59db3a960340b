"""Whether a quantised checkpoint's format reaches a fixed-state mixer's projections, as vLLM builds the mixer.

vLLM quantises a layer when its module is built with the model's ``quant_config``. Read in vLLM 0.16.0 (the wheel,
``pip download vllm==0.16.0 --no-deps``):

- Mamba-2 (``layers/mamba/mamba_mixer2.py`` ``MambaMixer2``: Nemotron-H, Granite 4, Falcon-H1, Bamba): ``in_proj`` a
  ``ColumnParallelLinear`` and ``out_proj`` a ``RowParallelLinear``, both given ``quant_config`` (its ``conv1d``
  ``quant_config=None``);
- Gated DeltaNet with fused projections (``models/qwen3_next.py`` ``Qwen3NextGatedDeltaNet``): ``in_proj_qkvz``,
  ``in_proj_ba`` and ``out_proj`` given ``quant_config``;
- Mamba-1 (``layers/mamba/mamba_mixer.py`` ``MambaMixer``: Jamba, Falcon-Mamba): ``in_proj``, ``x_proj``,
  ``dt_proj`` and ``out_proj`` built without it: they stay in the model's dtype.

Qwen3.5's split Gated DeltaNet (``in_proj_qkv``, ``in_proj_z``, ``in_proj_b``, ``in_proj_a`` in the checkpoint): 0.16.0
has no ``models/qwen3_5.py`` and its registry no ``Qwen3_5*`` architecture, so no release before 0.17.0 serves it. Every
release that does builds the projections with ``quant_config``, merged as the checkpoint's names load into them
(``in_proj_qkv`` and ``in_proj_z`` into ``in_proj_qkvz``, ``in_proj_b`` and ``in_proj_a`` into ``in_proj_ba``):
0.17.0 and 0.18.0 (``models/qwen3_5.py`` ``Qwen3_5DecoderLayer`` passes ``quant_config`` to ``Qwen3_5GatedDeltaNet``,
whose ``create_qkvz_proj`` and the inherited ``in_proj_ba`` and ``out_proj`` of ``qwen3_next.py`` take it), 0.19.1,
0.20.0 and 0.21.0 (``layers/mamba/gdn_linear_attn.py`` ``GatedDeltaNetAttention``: ``quant_config =
vllm_config.quant_config`` for ``create_qkvz_proj``, ``create_ba_proj`` and ``out_proj``), 0.22.1, 0.27.1, 0.33.0 and
0.34.0 (``layers/mamba/gdn/qwen_gdn_linear_attn.py`` ``QwenGatedDeltaNetAttention``, the same three). So from 0.17.0
on, read to 0.34.0, they are quantised as Qwen3-Next's are; no release keeps them in the model's dtype. A checkpoint's
scheme still names each one (its ``ignore`` or ``modules_to_not_convert`` keeps ``in_proj_b``/``in_proj_a`` in bf16
where it lists them); a named format (``--weight-dtype fp8``) stores every projection, as it does Qwen3-Next's
``in_proj_ba``.

Other mixers (MiniMax's lightning attention, Kimi's KDA, LFM2's short convolution, RWKV, xLSTM) are not read: their
projections are priced unquantised, as before. Pure Python.
"""

from mha_cli.core.schemas import RecurrentSpec

QUANTISED_MIXERS = frozenset({"mamba2", "gated_deltanet"})
"""Mixer kinds whose projections vLLM builds with the model's ``quant_config`` (Mamba-2 and Qwen3-Next's Gated
DeltaNet read in 0.16.0; Qwen3.5's split Gated DeltaNet in every release from 0.17.0, the first to serve it, to
0.34.0)."""


def mixer_projections_quantised(state: RecurrentSpec | None) -> bool:
    """Whether a checkpoint's format (a named one, or its scheme's rules) stores ``state``'s projections."""
    return state is not None and state.kind in QUANTISED_MIXERS
