"""What ``mha`` supports of each decoder family it reads from a config.json, as one table (``mha families``).

For every ``model_type`` the importer knows (``core.hf_import.KNOWN_MODEL_TYPES``):

- **priced**: the KV calculator reads the family's fields (every known family); ``with fixed state`` when its
  linear-attention or state-space layers keep a per-sequence state instead of per-token K/V;
- **built**: the torch decoder builds its geometry; ``differences`` lists what it does not reproduce of the family
  (``core.decoder_omissions``), empty when nothing is listed;
- **equal to transformers**: the test that compares the whole decoder's logits with transformers' on the same
  weights, where one exists (the block-level tests of MoE layers are named as such);
- **verify**: whether ``mha verify`` builds it, or why it refuses (``verify.plan.refuse_unbuilt_layers``'s rule).

So a user sees what a number rests on before trusting it. Pure Python.
"""

from __future__ import annotations

from mha_cli.core.decoder_omissions import omitted_details
from mha_cli.core.hf_import import KNOWN_MODEL_TYPES, family_layout
from mha_cli.core.record import Record
from mha_cli.core.schemas import ModelSpec

FIXED_STATE_FAMILIES = {
    "qwen3_next": "Gated DeltaNet", "qwen3_5": "Gated DeltaNet", "qwen3_5_text": "Gated DeltaNet",
    "qwen3_5_moe": "Gated DeltaNet", "qwen3_5_moe_text": "Gated DeltaNet", "jamba": "Mamba",
    "falcon_h1": "Mamba-2 beside attention", "granitemoehybrid": "Mamba-2", "minimax": "lightning attention",
    "kimi_linear": "KDA",
}  # fmt: skip
"""Families with layers that keep a fixed per-sequence state, and which mixer keeps it."""
APPROXIMATE_WEIGHTS = {"Gated DeltaNet", "Mamba", "KDA"}
"""Mixers whose families' weights ``count_params`` still misses in part (``core.deployment.MIXER_WEIGHTS_NOTE``:
Qwen3-Next's attention output gate, Jamba's interleaved MoE, Kimi-Linear unmeasured); the others count exactly."""
BUILT_MIXERS = {"Gated DeltaNet", "Mamba-2"}
"""Fixed-state mixers ``mha verify`` builds (``verify.plan.BUILT_MIXERS``): their state is measured, on one rank."""
UNBUILT_LAYERS = {"llama4": "chunked attention", "llama4_text": "chunked attention", "gemma3n": "shared K/V",
                  "gemma3n_text": "shared K/V", "deepseek_v32": "an indexer"}  # fmt: skip
"""Families whose attention layers ``mha verify`` does not build (besides the fixed-state ones)."""
EQUAL_TO_TRANSFORMERS = {
    "llama": "tests/test_nn_model.py::test_same_logits_as_transformers[llama-3]",
    "mistral": "tests/test_nn_model.py::test_same_logits_as_transformers[mistral]",
    "qwen2": "tests/test_nn_model.py::test_same_logits_as_transformers[qwen2]",
    "qwen3": "tests/test_nn_model.py::test_same_logits_as_transformers[qwen3]",
    "qwen3_moe": "tests/test_nn_mla_model.py (qwen3-moe: whole decoder)",
    "deepseek_v2": "tests/test_nn_mla_model.py (deepseek-v2: whole decoder)",
    "deepseek_v3": "tests/test_nn_mla_model.py (deepseek-v3: whole decoder, absorbed and naive)",
    "mixtral": "tests/test_nn_moe.py (the MoE block only)",
    "qwen2_moe": "tests/test_nn_moe.py (the MoE block only)",
}
"""The test that compares the decoder (or, where named, one block) with transformers' on the same weights."""


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


def _representative(model_type: str) -> ModelSpec:
    """A tiny spec with the family's layout and name, enough for ``omitted_details`` to read the family."""
    return ModelSpec(
        name=model_type, source=f"Hugging Face config.json (model_type {model_type})", d_model=64, n_layers=2,
        n_heads=4, vocab_size=128, d_ff=128, position_embeddings=1024 if model_type == "gpt2" else 0,
        **family_layout(model_type),
    )  # fmt: skip


def _priced(state: str | None) -> str:
    if state is None:
        return "KV"
    return f"KV + state ({state}); weights approximate" if state in APPROXIMATE_WEIGHTS else f"KV + state ({state})"


def family_support() -> list[FamilySupport]:
    """Every known family's row, by model_type."""
    rows = []
    for model_type in sorted(KNOWN_MODEL_TYPES):
        state = FIXED_STATE_FAMILIES.get(model_type)
        unbuilt = f"{state} layers" if state and state not in BUILT_MIXERS else UNBUILT_LAYERS.get(model_type)
        built_state = state in BUILT_MIXERS
        rows.append(
            FamilySupport(
                model_type=model_type, priced=_priced(state),
                built=state is None or built_state, differences=omitted_details(_representative(model_type)),
                equal_to_transformers=EQUAL_TO_TRANSFORMERS.get(model_type),
                verify=(f"refused: {unbuilt} (price them with `mha kv`)" if unbuilt is not None
                        else "yes (state measured; one rank, one stage)" if built_state else "yes"),
            )
        )  # fmt: skip
    return rows
