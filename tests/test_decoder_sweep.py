"""`mha`'s torch decoder against transformers on every causal-LM family of the installed transformers
(benchmarks/decoder_sweep.py): the same tiny config, transformers' weights loaded strictly, logits of a prefill and
of a cached decode compared. No family may differ with an empty ``omitted`` (a silent difference); families whose
weights do not load by name are loud (strict loading raises) and counted apart.

The families come from the installed transformers, so a new release adds its families by itself.
"""

import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
_spec = importlib.util.spec_from_file_location("decoder_sweep", REPO / "benchmarks" / "decoder_sweep.py")
sweep = importlib.util.module_from_spec(_spec)
sys.modules["decoder_sweep"] = sweep  # dataclasses look their module up by name
_spec.loader.exec_module(sweep)
from family_sweep import causal_lm_types  # noqa: E402  (benchmarks/ is on the path above)

EQUAL = (
    "llama", "mistral", "mixtral", "ministral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "deepseek_v2",
    "deepseek_v3", "internlm3", "exaone", "youtu", "ernie4_5", "helium", "mellum", "seed_oss", "stablelm",
)  # fmt: skip
"""Families whose logits equal transformers' (within 1e-4, prefill and cached decode) with transformers 5.24
(ERNIE 4.5 and Helium through interleaved RoPE, Mellum through its per-head q/k norms, Seed-OSS through its
q/k/v-only biases, StableLM through its LayerNorm)."""


def test_no_family_differs_from_transformers_without_saying_why():
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    rows = [sweep.sweep_one(model_type) for model_type in causal_lm_types()]
    silent = [f"{r.model_type} ({r.prefill_error:.1e})" for r in rows if r.verdict == "differs, unlisted"]
    assert not silent, silent
    equal = {r.model_type for r in rows if r.verdict == "equal"}
    assert set(EQUAL) <= equal, set(EQUAL) - equal
    listed = [r for r in rows if r.verdict == "differs, listed"]
    assert all(r.detail for r in listed)


def test_a_difference_is_caught_when_the_omission_is_not_listed(monkeypatch):
    """The control: with Arcee's omission removed, its ReLU-squared MLP makes it a silent difference."""
    import mha_cli.core.decoder_omissions as omissions

    monkeypatch.setattr(omissions, "_BY_NAME", tuple(e for e in omissions._BY_NAME if e[0] != ("arcee",)))
    assert sweep.sweep_one("arcee").verdict == "differs, unlisted"
