"""Gemma 4 E2B and E4B: their per-layer embeddings, K/V-sharing layers without k/v projections and E2B's double-wide
MLP are counted (``schemas.PerLayerInputs``, ``LayerPatternSpec.shared_kv_projections`` and ``shared_d_ff``). The
counts are checked by hand and against transformers' own model built on the meta device, name for name and shape for
shape; the split over tp follows vLLM 0.34.0's ``Gemma4Model`` (the table vocabulary-parallel, its projection
column-parallel, each layer's gate and projection replicated)."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import pytest

from mha_cli.core.hf_import import import_hf_config
from mha_cli.core.inventory import model_tensors
from mha_cli.core.params import count_params, params_per_rank
from tests.benchmark_modules import load_benchmark

FIXTURES = Path(__file__).parent / "fixtures" / "hf_configs"
E2B, E4B = FIXTURES / "gemma-4-e2b.json", FIXTURES / "gemma-4-e4b.json"
BF16 = 2
TINY = {
    "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 6, "num_attention_heads": 4,
    "num_key_value_heads": 1, "head_dim": 8, "global_head_dim": 16, "vocab_size": 96, "vocab_size_per_layer_input": 64,
    "hidden_size_per_layer_input": 4, "num_kv_shared_layers": 2, "use_double_wide_mlp": True, "sliding_window": 4,
    "layer_types": ["sliding_attention", "full_attention"] * 3, "max_position_embeddings": 64,
}  # fmt: skip
"""A tiny E2B: per-layer inputs 4 wide from a 64-row table (not the 96-row vocabulary), the last 2 layers sharing K/V
with an MLP twice intermediate_size wide."""


def _text(path: Path) -> dict:
    return json.loads(path.read_text())["text_config"]


def _transformers_weights(text: dict) -> dict[str, tuple[int, ...]]:
    """transformers' ``Gemma4ForCausalLM`` of ``text`` on the meta device: name -> shape of every parameter."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    fields = {key: value for key, value in text.items() if key != "model_type"}
    with warnings.catch_warnings(), torch.device("meta"):
        warnings.simplefilter("ignore")
        model = transformers.Gemma4ForCausalLM(transformers.Gemma4TextConfig(**fields))
    return {name: tuple(p.shape) for name, p in model.named_parameters()}


def _e2b_by_hand(tp: int = 1) -> int:
    """google/gemma-4-E2B's text weights on one rank of ``tp``: d 1536, 35 layers (every 5th full), 8 heads of 256
    (512 on full layers), 1 KV head (whole on every rank), MLP 6,144 wide (12,288 on the last 20, which share K/V and
    hold only q, o and the q norm), per-layer inputs 256 wide from a 262,144-row table, the embedding tied. Split as
    vLLM 0.34.0's ``Gemma4Model`` loads it: both tables by vocabulary rows, ``per_layer_model_projection`` by
    columns, each layer's per-layer gate and projection whole (ReplicatedLinear), the norms whole."""
    d, layers, vocab, width = 1536, 35, 262_144, 256
    q_local, q_global = 8 * 256 // tp, 8 * 512 // tp
    tables = (vocab // tp) * d + (vocab // tp) * layers * width  # the embedding and the per-layer table
    projection = d * layers * width // tp + width + d  # per_layer_model_projection, its norm; the final norm
    per_layer = 4 * d + 2 * d * width + d  # four block norms; the layer's gate, projection and their norm
    local = 2 * d * q_local + 2 * d * 256 + 2 * 256  # q, o; k, v (one head of 256); q and k norms
    full = 2 * d * q_global + 2 * d * 512 + 2 * 512
    local_shared, full_shared = 2 * d * q_local + 256, 2 * d * q_global + 512  # q, o, the q norm
    mlp, wide = 3 * d * 6144 // tp, 3 * d * 12_288 // tp
    # the first 15 layers: 12 sliding, 3 full (4, 9, 14); the last 20: 16 sliding, 4 full (19, 24, 29, 34)
    return (tables + projection + layers * per_layer + 12 * local + 3 * full + 16 * local_shared
            + 4 * full_shared + 15 * mlp + 20 * wide)  # fmt: skip


def test_gemma4_e2b_text_weights_by_hand_equal_transformers_meta_build():
    """4,628,569,344 weights, 2,348,810,240 of them the per-layer table (the model card's "2.3B effective, 5.1B with
    embeddings" counts its towers too); before the per-layer embeddings were read mha counted 2.28B."""
    counted = count_params(import_hf_config(json.loads(E2B.read_text())).model)
    assert counted.total == _e2b_by_hand() == 4_628_569_344
    assert counted.total == sum(math.prod(shape) for shape in _transformers_weights(_text(E2B)).values())
    assert counted.lookup_tables == 262_144 * 35 * 256 == 2_348_810_240  # the table is looked up, not multiplied


def test_gemma4_e4b_text_weights_equal_transformers_meta_build():
    """7,463,013,376 weights: 42 layers, the last 18 sharing K/V (no double-wide MLP), 2 KV heads."""
    counted = count_params(import_hf_config(json.loads(E4B.read_text())).model).total
    assert counted == sum(math.prod(shape) for shape in _transformers_weights(_text(E4B)).values()) == 7_463_013_376


def test_the_inventory_names_and_shapes_every_weight_as_transformers_gemma4_e2b_does():
    """Name for name, shape for shape: the per-layer table (its own 64 rows), its projection and norm, each layer's
    gate, projection and norm, no k_proj, v_proj or k_norm on the two sharing layers, their MLP 96 wide."""
    spec = import_hf_config({"model_type": "gemma4_text", **TINY}).model
    ours = {t.name: t.shape for t in model_tensors(spec)}
    assert ours == _transformers_weights(TINY)
    assert ours["model.embed_tokens_per_layer.weight"] == (64, 6 * 4)
    assert ours["model.per_layer_model_projection.weight"] == (24, 32)
    assert ours["model.layers.3.per_layer_input_gate.weight"] == (4, 32)
    assert "model.layers.3.self_attn.k_proj.weight" in ours and "model.layers.4.self_attn.k_proj.weight" not in ours
    assert "model.layers.5.self_attn.k_norm.weight" not in ours and "model.layers.5.self_attn.q_norm.weight" in ours
    assert ours["model.layers.3.mlp.down_proj.weight"] == (32, 48) and ours["model.layers.4.mlp.down_proj.weight"] == (
        32,
        96,
    )


def test_the_per_layer_weights_split_over_tp_as_vllm_loads_them():
    """At tp 2 a rank holds 131,072 rows of each table, 4,480 of per_layer_model_projection's 8,960 outputs, every
    layer's per-layer gate and projection whole, the sharing layers' double-wide MLP halved: 2,335,268,096 weights by
    hand (vocabulary unpadded)."""
    spec = import_hf_config(json.loads(E2B.read_text())).model
    rank = {t.name: t for t in model_tensors(spec, 2, 1)}
    assert rank["model.embed_tokens_per_layer.weight"].shape == (131_072, 8960)
    assert rank["model.per_layer_model_projection.weight"][1:4] == ((4480, 1536), "per_layer_input", "column")
    assert rank["model.layers.20.per_layer_input_gate.weight"][1:4] == ((256, 1536), "per_layer_input", "replicated")
    assert rank["model.layers.20.mlp.gate_proj.weight"].shape == (6144, 1536)  # 12,288 wide, half a rank
    assert params_per_rank(spec, 2, vocab_padding=1) == _e2b_by_hand(2) == 2_335_268_096


def test_an_uncounted_per_layer_table_is_a_silent_difference_the_sweep_catches(monkeypatch):
    """The control: with the reader's per-layer embeddings switched off, transformers' tiny gemma4_text holds weights
    mha does not count and nothing says so; with them read, the count is exact."""
    import mha_cli.core.families.models.gemma4 as gemma4
    from mha_cli.core.families import family

    weights_sweep = load_benchmark("weights_sweep")
    monkeypatch.setattr(gemma4, "_per_layer_inputs", lambda r, fields: None)
    family.cache_clear()
    try:
        assert weights_sweep.sweep_one("gemma4_text").verdict == "different, unsaid"
    finally:
        monkeypatch.undo()
        family.cache_clear()
    assert weights_sweep.sweep_one("gemma4_text").verdict == "exact"


def test_gemma4_unified_drops_the_sharing_layers_k_v_but_has_no_per_layer_table():
    """``Gemma4UnifiedTextConfig`` has no per-layer embeddings (no such field, none read from Gemma 4's defaults); its
    sharing layers hold no k/v projections and widen their MLP as Gemma 4's do (transformers 5.25)."""
    config = {"model_type": "gemma4_unified_text", **{k: v for k, v in TINY.items() if "per_layer_input" not in k}}
    spec = import_hf_config(config).model
    assert spec.embeddings.per_layer_inputs is None
    ours = {t.name: t.shape for t in model_tensors(spec)}
    assert "model.layers.4.self_attn.k_proj.weight" not in ours
    assert ours["model.layers.5.mlp.up_proj.weight"] == (96, 32)


def test_the_e2b_plan_loads_every_text_weight_and_verify_refuses_what_torch_does_not_build(cli):
    """``mha plan`` on one L4 holds the 4,628,569,344 weights in bf16 (the vocabulary is a multiple of 64: no
    padding); ``mha verify`` says in one line that the per-layer embeddings are not built."""
    pick = cli.json("plan", str(E2B), "--target", "l4")["candidates"][0]
    assert pick["memory"]["weight_bytes_per_device"] == 4_628_569_344 * BF16
    refused = cli.run("verify", str(E2B))
    assert refused.exit_code != 0 and "per-layer-embedding layers" in refused.output


def test_build_model_refuses_per_layer_embeddings_in_one_line():
    torch = pytest.importorskip("torch")  # noqa: F841
    from mha_cli.nn.model import build_model

    same_width = {**TINY, "global_head_dim": 8}  # one head geometry: only the per-layer parts stop the build
    spec = import_hf_config({"model_type": "gemma4_text", **same_width}).model
    with pytest.raises(ValueError, match="per-layer embeddings, K/V-sharing layers without k/v projections"):
        build_model(spec, device="meta")


def test_the_k_v_sharing_layers_attend_and_the_wide_mlp_sets_the_activation_peak():
    """Review 376 #1, #5 and 378 #3, #4: E2B's 20 K/V-sharing layers attend too (over the cache they share: 7 full
    layers, 28 sliding, not the 3 and 12 that cache), writing no K/V, each kind at its own bytes (its one KV head of
    256 on sliding layers, of 512 on full ones, not their 1,228 B mean); its widest layer is their 12,288-wide MLP,
    its per-layer inputs (35 x 256 a token) held through the forward: 16,384 tokens x 2 B x (2 x 1,536 + 3 x 12,288
    + 8,960)."""
    from mha_cli.core.cost.work import attention_layout
    from mha_cli.core.engine.activation import forward_peak_bytes

    spec = import_hf_config(json.loads(E2B.read_text())).model
    windows = attention_layout(spec, 1, "bf16", "absorbed").windows  # window, layers, writers, bytes a token
    assert windows == ((512, 28, 12, 2 * 256 * 2), (None, 7, 3, 2 * 512 * 2))
    assert spec.token_layer_kinds() == {"local": 12, "global": 3}  # what caches: the pool's layers
    assert forward_peak_bytes(spec, tokens=16_384, tp=1) == 16_384 * 2 * (2 * 1536 + 3 * 12_288 + 35 * 256)


def test_the_per_layer_linears_are_kernels_of_their_own_and_pipeline_stages_are_refused():
    """Review 376 #7, #3: the gate and up of a gated MLP run as one fused kernel (half each), Gemma 4's per-layer
    input gate and projection from d_model each as its own; a pipeline split of a model with per-layer embeddings is
    refused in one line (vLLM holds the whole table on every stage, which is not priced)."""
    from mha_cli.core.cost.work import _matmul_kernels
    from mha_cli.core.params import Matrix
    from mha_cli.core.pipeline import pp_problem

    spec = import_hf_config(json.loads(E2B.read_text())).model
    assert _matmul_kernels(spec, Matrix("mlp", 256, 1536, 35, "per_layer_input_gate")) == 1.0
    assert _matmul_kernels(spec, Matrix("mlp", 6144, 1536, 15, "gate_proj")) == 0.5
    unshared = spec.model_copy(update={"layers": spec.layers.model_copy(
        update={"n_kv_shared_layers": None, "shared_kv_projections": True, "shared_d_ff": None})})  # fmt: skip
    assert "per-layer embeddings (Gemma 4) are not split into pipeline stages" in (pp_problem(unshared, 2) or "")
    assert pp_problem(unshared, 1) is None
