"""What ``mha`` supports of each decoder family it reads from a config.json, as one table (``mha families``).

For every ``model_type`` of the family registry (``core.families``):

- **priced**: the KV calculator reads the family's fields (every known family); ``with fixed state`` when its
  linear-attention or state-space layers keep a per-sequence state instead of per-token K/V;
- **built**: the torch decoder builds its geometry; ``differences`` lists what it does not reproduce of the family
  (``Family.differences``), empty when nothing is listed;
- **equal to transformers**: the test that compares the whole decoder's logits with transformers' on the same
  weights, where one exists (the block-level tests of MoE layers are named as such);
- **verify**: whether ``mha verify`` builds it, or why it refuses (``verify.plan.refuse_unbuilt_layers``'s rule).

So a user sees what a number rests on before trusting it. Pure Python.
"""

from __future__ import annotations

from mha_cli.core.families import Family, all_families
from mha_cli.core.record import Record

APPROXIMATE_WEIGHTS: set[str] = set()
"""Mixers whose families' weights ``count_params`` still misses in part (``core.deployment.MIXER_WEIGHTS_NOTE``):
none today; the others count exactly."""
BUILT_MIXERS = {
    "Gated DeltaNet", "Mamba", "Mamba-2", "lightning attention", "KDA", "Mamba-2 beside attention", "short convolution",
}  # fmt: skip
"""Fixed-state mixers ``mha verify`` builds (``verify.plan.BUILT_MIXERS``): their state is measured, on one rank."""
DECODER_MIXERS = BUILT_MIXERS
"""Fixed-state mixers the torch decoder builds (``nn.mixers``, ``nn.parallel_mixer``): all that ``mha verify``
measures."""


class FamilySupport(Record):
    """One family's row of the support matrix."""

    model_type: str
    priced: str
    """``KV``, ``KV + state (Mamba-2)`` or ``KV + state (Mamba); weights approximate``: what the calculator prices
    (per-token K/V, a fixed state; approximate where ``core.deployment.MIXER_WEIGHTS_NOTE`` says the weights are)."""
    built: bool
    """Whether the torch decoder builds the family's geometry."""
    differences: list[str]
    """What the decoder does not reproduce of the family (empty: nothing listed)."""
    equal_to_transformers: str | None
    """The test comparing logits with transformers' on the same weights; None: no such test."""
    verify: str
    """``yes``, or why ``mha verify`` refuses it."""


def _priced(state: str | None, attention_free: bool = False) -> str:
    if state is None:
        return "KV"
    if attention_free:
        return f"state only ({state}; no KV: attention-free)"
    return f"KV + state ({state}); weights approximate" if state in APPROXIMATE_WEIGHTS else f"KV + state ({state})"


def _row(model_type: str, fam: Family) -> FamilySupport:
    state = fam.fixed_state
    unbuilt = f"{state} layers" if state and state not in BUILT_MIXERS else fam.unbuilt
    built_state = state in BUILT_MIXERS
    if fam.refused is not None:  # the importer refuses its configs: nothing priced, nothing built
        return FamilySupport(
            model_type=model_type, priced=f"refused: {fam.refused}", built=False, differences=[],
            equal_to_transformers=None, verify="refused: its configs are refused (`mha kv` says why)",
        )  # fmt: skip
    return FamilySupport(
        model_type=model_type, priced=_priced(state, fam.attention_free), built=state is None or state in DECODER_MIXERS,
        differences=list(fam.differences), equal_to_transformers=fam.equal_test,
        verify=(f"refused: {unbuilt} (price them with `mha kv`)" if unbuilt is not None
                else "yes (state measured; one rank, one stage)" if built_state else "yes"),
    )  # fmt: skip


def family_support() -> list[FamilySupport]:
    """Every registered family's row, one per model_type it carries, by model_type."""
    rows = [_row(model_type, fam) for fam in all_families() for model_type in fam.model_types]
    return sorted(rows, key=lambda row: row.model_type)
