"""A quantisation config's lists matched on the names the checkpoint and vLLM give mha's modules
(``core.checkpoint_names``, ``core.weight_scheme``), one pattern per list style, each with a hand count.

Qwen3.5-4B (tests/fixtures/hf_configs/qwen3.5-4b.json, an image-text checkpoint): 24 Gated DeltaNet layers of hidden
2560 with in_proj_b and in_proj_a 32 x 2560 each, in_proj_qkv 8192 x 2560, in_proj_z 4096 x 2560, out_proj
2560 x 4096. fp8 on every linear layer with one fp32 scale a matrix: a matrix kept in bf16 costs 2 B a weight where
fp8 costs 1 B and 4 B of scale.
"""

from mha_cli.core.checkpoint_names import MHA_NAMES, QWEN3_5_IMAGE_TEXT_NAMES, QWEN3_NEXT_NAMES, module_names
from mha_cli.core.sources import load_source
from mha_cli.core.weight_bytes import model_modules, rank_checkpoint_bytes
from mha_cli.core.weight_scheme import SchemeRule, WeightScheme
from tests.conftest import reference_hf_config

FP8 = SchemeRule(name="group_0", targets=["Linear"], format="fp8", value_bits=8, scale_bytes=4)
B_OR_A = 32 * 2560
"""Weights of one in_proj_b or in_proj_a."""
KEPT = B_OR_A * 2 - (B_OR_A + 4)
"""What one in_proj_b or in_proj_a costs more in bf16 than in fp8 (81,916 B)."""
GDN_LAYERS = 24


def _model(name: str):
    return load_source(str(reference_hf_config(name))).model


def _extra_bytes(model, method: str, *ignore: str) -> int:
    """Bytes the ``ignore`` list keeps in bf16 beyond fp8 everywhere."""
    scheme = WeightScheme(method=method, format="fp8", rules=[FP8], ignore=list(ignore))
    everything = WeightScheme(method=method, format="fp8", rules=[FP8])
    return rank_checkpoint_bytes(model, 1, scheme) - rank_checkpoint_bytes(model, 1, everything)


def test_how_each_family_spells_mha_s_names():
    qwen35, qwen_next, llama = _model("qwen3.5-4b"), _model("qwen3-next-80b-a3b"), _model("llama-3-8b")
    assert module_names(qwen35) == QWEN3_5_IMAGE_TEXT_NAMES
    assert module_names(qwen_next) == QWEN3_NEXT_NAMES
    assert module_names(llama) == MHA_NAMES
    names = QWEN3_5_IMAGE_TEXT_NAMES
    gdn, attention, vision = (
        "model.layers.0.self_attn.in_proj_qkv",
        "model.layers.3.self_attn.q_proj",
        "model.visual.blocks.0.attn.qkv",
    )
    assert names.checkpoint(gdn) == "model.language_model.layers.0.linear_attn.in_proj_qkv"
    assert names.engine(gdn) == "language_model.model.layers.0.linear_attn.in_proj_qkv"
    assert names.checkpoint(attention) == "model.language_model.layers.3.self_attn.q_proj"
    assert (names.checkpoint(vision), names.engine(vision)) == (vision, "visual.blocks.0.attn.qkv")
    assert names.checkpoint("lm_head") == names.engine("lm_head") == "lm_head"
    assert QWEN3_NEXT_NAMES.engine("model.layers.0.self_attn.in_proj_ba") == "model.layers.0.linear_attn.in_proj_ba"
    assert MHA_NAMES.checkpoint(attention) == MHA_NAMES.engine(attention) == attention


def test_compressed_tensors_plain_names_are_the_checkpoint_s_whole_names():
    """Layer 0's in_proj_b and in_proj_a named as the checkpoint stores them: two matrices kept in bf16. mha's own
    spelling (``self_attn``) and a glob (no wildcard in compressed-tensors: ``target == value``) name nothing."""
    qwen35 = _model("qwen3.5-4b")
    listed = [f"model.language_model.layers.0.linear_attn.in_proj_{x}" for x in "ba"]
    assert _extra_bytes(qwen35, "compressed-tensors", *listed) == 2 * KEPT == 163_832
    assert _extra_bytes(qwen35, "compressed-tensors", "model.layers.0.self_attn.in_proj_b") == 0
    assert _extra_bytes(qwen35, "compressed-tensors", "model.language_model.layers.*.linear_attn.in_proj_b") == 0
    unmatched = WeightScheme(
        method="compressed-tensors", format="fp8", rules=[FP8],
        ignore=[*listed, "model.layers.0.self_attn.in_proj_b", "model.language_model.layers.0.linear_attn"],
    ).unmatched(model_modules(qwen35), module_names(qwen35))  # fmt: skip
    assert unmatched == ["model.layers.0.self_attn.in_proj_b", "model.language_model.layers.0.linear_attn"]


def test_compressed_tensors_regexes_meet_vllm_s_names():
    """``re:`` is matched on vLLM's name (``language_model.model.layers.N.linear_attn...``): ``.*linear_attn\\.in_proj_
    [ab]$`` keeps 24 layers' two small projections in bf16; a regex written on the checkpoint's prefix names nothing
    in vLLM (the AWQ recipe's warning), and ``.*self_attn`` no longer reaches a Gated DeltaNet's projections."""
    qwen35 = _model("qwen3.5-4b")
    assert _extra_bytes(qwen35, "compressed-tensors", "re:.*linear_attn\\.in_proj_[ab]$") == GDN_LAYERS * 2 * KEPT
    assert _extra_bytes(qwen35, "compressed-tensors", "re:model\\.language_model\\.layers\\.0\\.linear_attn") == 0
    assert _extra_bytes(qwen35, "compressed-tensors", "re:.*layers\\.0\\.linear_attn\\.in_proj_[ab]") == 2 * KEPT
    attention_only = _extra_bytes(qwen35, "compressed-tensors", "re:.*self_attn.*")
    q, kv, o = 8192 * 2560, 1024 * 2560, 2560 * 4096  # q_proj carries the output gate: 2 x 16 heads x 256
    assert attention_only == 8 * sum(n * 2 - (n + 4) for n in (q, kv, kv, o))


def test_modelopt_excludes_by_glob_and_by_substring():
    """ModelOpt's ``exclude_modules``: a glob over the checkpoint's name (every Gated DeltaNet input projection of
    the 24 layers: qkv, z, b, a) and a plain name anywhere in a name (``linear_attn.in_proj_a``: every layer's)."""
    qwen35 = _model("qwen3.5-4b")
    in_projections = (8192 + 4096 + 32 + 32) * 2560
    glob = "model.language_model.layers.*.linear_attn.in_proj*"
    assert _extra_bytes(qwen35, "modelopt", glob) == GDN_LAYERS * (in_projections - 4 * 4)
    assert _extra_bytes(qwen35, "modelopt", "linear_attn.in_proj_a") == GDN_LAYERS * KEPT
    assert _extra_bytes(qwen35, "modelopt", "self_attn.in_proj_a") == 0  # mha's spelling is not the checkpoint's


def test_kimi_k2_5_s_published_ignore_list_still_matches():
    """The verbatim Kimi-K2.5 list (``lm_head``, ``re:.*self_attn.*``, ``re:.*shared_experts.*``,
    ``re:.*mlp\\.(gate|up|gate_up|down)_proj.*``): a Llama-style model, every entry names a module."""
    kimi = load_source(str(reference_hf_config("kimi-k2.5")))
    scheme = kimi.deployment.weight_scheme
    assert scheme.unmatched(model_modules(kimi.model), module_names(kimi.model)) == []
