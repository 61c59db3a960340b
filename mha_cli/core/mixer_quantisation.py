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

Other mixers (Qwen3.5's split Gated DeltaNet, which 0.16.0 does not build; MiniMax's lightning attention, Kimi's
KDA, LFM2's short convolution, RWKV, xLSTM) are not read: their projections are priced unquantised, as before.
Pure Python.
"""

from mha_cli.core.schemas import RecurrentSpec

QUANTISED_MIXERS = frozenset({"mamba2", "gated_deltanet"})
"""Mixer kinds whose projections vLLM 0.16.0 builds with the model's ``quant_config``."""


def mixer_projections_quantised(state: RecurrentSpec | None) -> bool:
    """Whether a checkpoint's format (a named one, or its scheme's rules) stores ``state``'s projections."""
    if state is None or state.kind not in QUANTISED_MIXERS:
        return False
    return not (state.kind == "gated_deltanet" and state.split_projections)
