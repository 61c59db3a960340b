"""Every causal-LM family of the installed transformers, against what transformers really does with it:

- the cache (benchmarks/family_sweep.py): a tiny config per family (its own config class, shrunk), random weights,
  a batch of 2 x 12 tokens; `mha kv` reads the same config's to_dict(). No family may get a figure that differs
  from the cache transformers allocates with exit 0; refusals say why in one line;
- the weights (benchmarks/weights_sweep.py): the same tiny configs built on the meta device, their parameters
  counted. No family may be weighed differently from what transformers builds without `mha kv` saying what it
  leaves out;
- the decoder (benchmarks/decoder_sweep.py): on the same tiny models, transformers' weights loaded into
  `build_model`, logits of a prefill and a cached decode compared. No family may differ with an empty
  ``omitted`` (a silent difference), and our decoder may not crash on a model it built and loaded.

The families come from the installed transformers, so a new release adds its families by itself. Each family's
tiny model is built once and serves both sweeps.
"""

import functools
import sys
from pathlib import Path

import pytest

from tests.benchmark_modules import load_benchmark

pytest.importorskip("torch")
pytest.importorskip("transformers")

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))


cache_sweep, decoder_sweep, weights_sweep = (
    load_benchmark("family_sweep"),
    load_benchmark("decoder_sweep"),
    load_benchmark("weights_sweep"),
)

BERT_DECODERS = (
    "bert", "bert-generation", "roberta", "camembert", "xlm-roberta", "data2vec-text", "ernie", "electra",
    "megatron-bert", "roberta-prelayernorm", "xlm-roberta-xl", "big_bird", "roformer", "rembert", "modernbert-decoder",
)  # fmt: skip
"""BERT's descendants run as causal LMs (is_decoder): priced exactly, and equal through the post-LN blocks, token-type
row 0, RoBERTa's position offset, ELECTRA's projected embeddings, RoFormer's interleaved RoPE and the LM head's
transform."""
PRICED = (
    "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "qwen3_next", "gemma", "gemma2",
    "gemma3_text", "gpt2", "gpt_neo", "gpt_neox", "gptj", "falcon", "falcon_h1", "jamba", "deepseek_v2",
    "deepseek_v3", "deepseek_v32", "glm_moe_dsa", "olmo2", "olmoe", "phi3", "starcoder2", "cohere2", "gpt_oss",
    "llama4_text", "minimax", "mpt", "xglm", "hunyuan_v1_moe", "smollm3", "glm4_moe", "minimax_m2", "bloom", "opt",
    "kimi_linear", "bamba", "qwen3_5_text", "qwen3_5_moe_text", "granitemoehybrid", "nemotron_h", "lfm2",
    *BERT_DECODERS,
    "glm4_moe_lite", "axk1", "granite_swa", "granitemoe_swa", "flint", "nemotron", "hyperclovax", "hy_v3", "laguna",
    "cohere2_moe", "kolibri1", "vaultgemma", "beam", "phimoe", "apertus",
    "mamba", "mamba2", "falcon_mamba",  # attention-free: a fixed state, nothing per token
)  # fmt: skip
"""Families the cache sweep builds and `mha kv` prices exactly (or as the window a serving engine keeps)."""
REFUSED = {
    "bart": "encoder-decoder", "mimo_v2_flash": "twice num_key_value_heads", "zaya": "layer_types has hybrid",
    "cpmant": "prompt_length", "inkling_text": "swa_head_dim", "roc_bert": "pronunciation and shape embeddings",
}  # fmt: skip
"""Families whose cache `mha kv` does not price, and what the refusal names."""
EQUAL = (
    # Llama's decoder and its copies, with their biases, norms, interleaved RoPE and q/k norms
    "llama", "mistral", "ministral", "ministral3", "qwen2", "qwen3", "internlm3", "exaone", "youtu", "cwm",
    "iquestcoder", "ernie4_5", "helium", "mellum", "seed_oss", "stablelm", "arcee", "nemotron", "jais2", "olmo",
    "glm", "glm4", "kolibri1", "vaultgemma", "hyperclovax", "apertus", "laguna", "hy_v3",
    "granite", "granitemoe", "granite_swa", "granitemoe_swa",  # Granite's multipliers
    # Gemma's arithmetic (norm weight offset, embedding scale, tanh GELU, soft caps, local RoPE)
    "gemma", "gemma2", "gemma3_text",
    # post-norms, whole-projection q/k norms, NoPE layers, q/k/v clipping, bias-free LayerNorms
    "olmoe", "olmo2", "olmo3", "flex_olmo", "exaone4", "cohere", "cohere2", "cohere2_moe",
    # MoE routing: softmax, sigmoid with a correction bias, sparsemixer, attention sinks, MLA and its indexer
    "mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v2", "deepseek_v3", "deepseek_v32", "glm_moe_dsa", "glm4_moe",
    "glm4_moe_lite", "axk1", "sarvam_mla", "sarvam_moe", "solar_open", "exaone_moe", "minimax_m2", "ernie4_5_moe",
    "gpt_oss", "flint", "phimoe",
    # weight layouts and the classic GPT blocks (tests/test_classic_families.py)
    "gpt2", "gpt-sw3", "gpt_neo", "phi3", "falcon", "starcoder2", "gpt_neox", "gpt_neox_japanese", "gptj", "codegen",
    "phi", "persimmon", "gpt_bigcode", "opt", "biogpt", "openai-gpt", "ctrl", "bloom", "mpt",
    # BERT's descendants as decoders (tests/test_bert_families.py)
    *BERT_DECODERS,
    # hybrids: Gated DeltaNet, Mamba-1, Mamba-2 (beside attention too), lightning attention, KDA, short convolutions
    "qwen3_next", "qwen3_5_text", "qwen3_5_moe_text", "jamba", "bamba", "falcon_h1", "granitemoehybrid", "minimax",
    "kimi_linear", "lfm2",
    # attention-free: Mamba-1 (Falcon-Mamba's weightless norms), Mamba-2
    "mamba", "falcon_mamba", "mamba2",
)  # fmt: skip
"""Families whose logits equal transformers' (within 1e-4, prefill and cached decode) with transformers 5.24, each
through the spec fields its family module sets (``mha_cli/core/families/models``); the features' own tests compare
them with transformers' modules directly (tests/test_nn_gemma.py, test_nn_post_norm.py, test_classic_families.py,
test_bert_families.py, test_variant_families.py, test_hybrid_families.py, test_mamba1.py, test_lightning.py,
test_kda.py, test_attention_free.py)."""


@functools.cache
def _sweeps() -> tuple[list, list]:
    """(cache rows, decoder rows) over every causal-LM family, each family's tiny model built once."""
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    cache_rows, decoder_rows = [], []
    for model_type in cache_sweep.causal_lm_types():
        built = cache_sweep.build_tiny(model_type)
        cache_rows.append(cache_sweep.sweep_one(model_type, built))
        decoder_rows.append(decoder_sweep.sweep_one(model_type, built))
    return cache_rows, decoder_rows


def test_no_family_of_the_installed_transformers_is_priced_differently_from_its_cache():
    rows = _sweeps()[0]
    different = [f"{row.model_type} ({row.detail})" for row in rows if row.verdict == "different"]
    assert not different, different
    assert all(row.detail and "\n" not in row.detail for row in rows if row.verdict == "refused")
    priced = {row.model_type for row in rows if row.verdict in ("exact", "window view")}
    assert set(PRICED) <= priced, set(PRICED) - priced
    assert len(priced) >= 118  # of 196 with transformers 5.24: a family falling out of coverage fails here
    refused = {row.model_type: row.detail for row in rows if row.verdict == "refused"}
    assert all(REFUSED[family] in refused.get(family, "") for family in REFUSED), refused


def test_no_family_differs_from_transformers_without_saying_why():
    rows = _sweeps()[1]
    silent = [f"{r.model_type} ({r.prefill_error:.1e})" for r in rows if r.verdict == "differs, unlisted"]
    assert not silent, silent
    crashes = [f"{r.model_type}: {r.detail}" for r in rows if r.verdict == "crashes"]
    assert not crashes, crashes
    equal = {r.model_type for r in rows if r.verdict == "equal"}
    assert set(EQUAL) <= equal, set(EQUAL) - equal
    assert all(r.detail for r in rows if r.verdict == "differs, listed")


def test_no_family_is_weighed_differently_without_saying_so():
    rows = [weights_sweep.sweep_one(model_type) for model_type in cache_sweep.causal_lm_types()]
    unsaid = [(r.model_type, r.detail) for r in rows if r.verdict == "different, unsaid"]
    assert not unsaid, unsaid
    exact = {r.model_type for r in rows if r.verdict == "exact"}
    said = {r.model_type for r in rows if r.verdict == "different, said"}
    # a decoder equal to transformers' weighs what it builds, but for weights no logit reads or kept as buffers
    # (BigBird's pooler, RoFormer's sinusoidal table, ERNIE-MoE's and Laguna's router correction bias), said
    assert set(EQUAL) - exact <= said, set(EQUAL) - exact - said
    assert len(set(EQUAL) & said) <= 4, set(EQUAL) & said
    assert all(r.detail and "\n" not in r.detail for r in rows if r.verdict in ("refused", "different, said"))


ACTIVATION_SWAPS = [
    ("llama", "gelu"), ("llama", "relu"), ("qwen3", "gelu"), ("mixtral", "gelu"), ("deepseek_v3", "gelu"),
    ("gpt_oss", "relu"), ("minimax_m2", "gelu"), ("qwen3_next", "gelu"), ("arcee", "silu"), ("nemotron", "silu"),
    ("jais2", "silu"), ("apertus", "silu"),
]  # fmt: skip
"""(family, an activation of the other MLP kind than its class default's): gated families first, then plain ones."""


@pytest.mark.parametrize(("model_type", "activation"), ACTIVATION_SWAPS)
def test_a_family_s_mlp_is_the_one_its_modeling_code_builds_whatever_activation_the_config_names(
    model_type, activation
):
    """transformers' LlamaMLP builds gate, up and down whatever ``hidden_act`` says (a gelu Llama is a GeGLU), and
    Arcee's MLP is up and down even with silu: a Llama-3.3-70B config.json with ``hidden_act: gelu`` was priced with a
    plain MLP, 51,763,224,576 weights for 70,553,706,496, exit 0 (trial 316)."""
    assert weights_sweep.sweep_one(model_type, activation).verdict == "exact"


def test_the_activation_swap_is_caught_when_the_mlp_kind_follows_the_config_s_activation(monkeypatch):
    """The control: with the family's class default not consulted (the rule before trial 316), a gelu Llama is
    weighed without its gate matrices and nothing says so."""
    import mha_cli.core.hf_import as hf_import

    monkeypatch.setattr(hf_import, "_class_activation", lambda r, known, keys: None)
    assert weights_sweep.sweep_one("llama", "gelu").verdict == "different, unsaid"


def test_every_field_of_a_registered_family_is_read_or_listed_with_the_value_mha_builds():
    """A registered family's tiny config (every field of its config class, at the class defaults) imports with each
    field either read or in its record's ``left_unread``, so a config setting one of them to a value mha does not
    build is refused, not priced as if it were absent (``core.hf_unread``)."""
    from mha_cli.core.families import family
    from mha_cli.core.hf_import import import_hf_config

    unlisted = {}
    for model_type in cache_sweep.causal_lm_types():
        registered = family(model_type)
        try:
            config = cache_sweep._tiny_config(model_type)
            imported = import_hf_config(config.to_dict(), name=model_type)
        except Exception:  # not built by transformers, or refused: the other tests judge those
            continue
        if registered is not None and set(imported.unread) - set(registered.left_unread):
            unlisted[model_type] = sorted(set(imported.unread) - set(registered.left_unread))
    assert not unlisted, unlisted


def test_an_uncounted_weight_is_caught_when_the_family_does_not_say_so(monkeypatch):
    """The control: with Gemma-3n's note on its AltUp and LAuReL removed, its weights are a silent difference."""
    import mha_cli.core.families.models.gemma3n as gemma3n
    from mha_cli.core.families import family

    monkeypatch.setattr(gemma3n, "FAMILY", gemma3n.FAMILY._replace(uncounted=None))
    family.cache_clear()
    try:
        assert weights_sweep.sweep_one("gemma3n_text").verdict == "different, unsaid"
    finally:
        monkeypatch.undo()
        family.cache_clear()
    assert weights_sweep.sweep_one("gemma3n_text").verdict == "different, said"


def test_a_difference_is_caught_when_the_omission_is_not_listed(monkeypatch):
    """The control: with Arcee's record misreading its ReLU-squared MLP as exact GELU and listing no omission, the
    difference is silent; listed, it is said; with its own record, Arcee is equal."""
    import mha_cli.core.families.models.arcee as arcee
    from mha_cli.core.families import family

    misread = arcee.FAMILY._replace(layout={"activation": "gelu"}, differences=())
    verdicts = []
    for record in (misread, misread._replace(differences=("its MLP is read as exact GELU",))):
        monkeypatch.setattr(arcee, "FAMILY", record)
        family.cache_clear()  # the registry hands out the patched record
        try:
            verdicts.append(decoder_sweep.sweep_one("arcee").verdict)
        finally:
            monkeypatch.undo()
            family.cache_clear()
    assert verdicts == ["differs, unlisted", "differs, listed"]
    assert decoder_sweep.sweep_one("arcee").verdict == "equal"


def test_the_support_matrix_claims_equality_only_for_families_the_sweep_finds_equal():
    """``mha families`` says "equal to transformers" by the decoder sweep for exactly the registered families pinned
    in ``EQUAL`` that list no difference (a family listing one may still be equal at the sweep's tiny scale)."""
    from mha_cli.core.families import EQUAL_BY_SWEEP, all_families

    by_sweep = {t for f in all_families() if f.equal_test == EQUAL_BY_SWEEP for t in f.model_types}
    registered_equal = {t for f in all_families() if not f.differences for t in f.model_types} & set(EQUAL)
    assert by_sweep <= set(EQUAL), by_sweep - set(EQUAL)
    assert registered_equal - by_sweep <= {t for f in all_families() if f.equal_test for t in f.model_types}
