"""Gemma 4 is priced by ``mha kv`` per layer kind: its full-attention layers cache K/V at their own head width and
KV head count (``AttentionSpec.global_head_dim``, ``global_n_kv_heads``). The figures are checked against what
transformers really allocates (a tiny prefill's cache), gemma-4-31B's cache and weights by hand; the engine plan
sizes vLLM's pool as its page unification does (tests/test_engine_unified_pages.py), other engines refuse it."""

from __future__ import annotations

import json
import warnings

import pytest

from mha_cli.core.families import family
from mha_cli.core.families.architectures import family_of_architectures
from mha_cli.core.hf_import import import_hf_config
from mha_cli.core.kv import kv_footprint
from mha_cli.core.params import count_params

LAYER_TYPES_31B = (["sliding_attention"] * 5 + ["full_attention"]) * 10
TEXT_31B = {
    "model_type": "gemma4_text", "hidden_size": 5376, "intermediate_size": 21504, "num_hidden_layers": 60,
    "num_attention_heads": 32, "num_key_value_heads": 16, "head_dim": 256, "global_head_dim": 512,
    "num_global_key_value_heads": 4, "attention_k_eq_v": True, "sliding_window": 1024, "layer_types": LAYER_TYPES_31B,
    "hidden_size_per_layer_input": 0, "num_kv_shared_layers": 0, "enable_moe_block": False, "vocab_size": 262144,
    "final_logit_softcapping": 30.0, "max_position_embeddings": 262144, "tie_word_embeddings": True,
}  # fmt: skip
"""gemma-4-31B's text_config as its published descriptions give it: 60 layers, 5 sliding : 1 full, 32 heads, 16 KV
heads of 256 on sliding layers, 4 of 512 (global_head_dim) with attention_k_eq_v on full ones, window 1024
(https://huggingface.co/mlboydaisuke/Gemma-4-31B-CoreAI, "Architecture"; https://apxml.com/models/gemma-4-31b)."""
BF16 = 2


def _kv(cli, tmp_path, config: dict, *options: str) -> dict:
    """``mha kv --json`` of ``config`` written as a config.json."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return cli.json("kv", str(path), *options)


def test_gemma4_s_model_types_and_architectures_name_its_families():
    assert family("gemma4") is family("gemma4_text") is not None
    assert family("gemma4_unified") is family("gemma4_unified_text") is not None
    assert family("gemma4").refused is None and family("gemma4_unified").refused is None
    for architecture, model_type in [
        ("Gemma4ForConditionalGeneration", "gemma4"), ("Gemma4ForCausalLM", "gemma4"),
        ("Gemma4UnifiedForConditionalGeneration", "gemma4_unified"), ("Gemma4UnifiedForCausalLM", "gemma4_unified"),
    ]:  # fmt: skip
        assert family_of_architectures([architecture]).family is family(model_type)


def _wrapped(model_type: str, text: dict) -> dict:
    """A multimodal (or drafter) config.json around ``text`` as its text_config."""
    vision = {"model_type": "gemma4_vision", "hidden_size": 1152, "num_hidden_layers": 27}
    return {"model_type": model_type, "text_config": text, "vision_config": vision}


@pytest.mark.parametrize(
    "config",
    [TEXT_31B, _wrapped("gemma4", TEXT_31B), _wrapped("gemma4_assistant", TEXT_31B),
     {**TEXT_31B, "model_type": "gemma4_unified_text"}],
    ids=["text_config", "multimodal wrapper", "assistant wrapper", "unified"],
)  # fmt: skip
def test_a_gemma4_config_is_priced_per_layer_kind(cli, tmp_path, config):
    """gemma-4-31B, bf16, by hand: a sliding layer 16 x 256 x 2 (K, V) x 2 B, a full layer 4 x 512 x 2 x 2 B; at 8,192
    tokens the 50 sliding layers hold their 1,024-token window, the 10 full layers every token."""
    kv = _kv(cli, tmp_path, config, "--seq", "8192", "--batch", "2")["kv"]
    assert kv["bytes_per_token_per_layer"] == 16 * 256 * 2 * BF16 == 16_384
    assert kv["global_bytes_per_token_per_layer"] == 4 * 512 * 2 * BF16 == 8_192
    assert kv["bytes_per_token"] == 50 * 16_384 + 10 * 8_192 == 901_120
    assert (kv["n_global_layers"], kv["n_local_layers"], kv["sliding_window"]) == (10, 50, 1024)
    per_sequence = 10 * 8192 * 8_192 + 50 * 1024 * 16_384
    assert kv["bytes_per_sequence"] == per_sequence == 1_509_949_440
    assert kv["total_bytes"] == 2 * per_sequence


@pytest.mark.parametrize(
    ("tp", "local_heads", "global_heads"), [(1, 16, 4), (2, 8, 2), (4, 4, 1), (8, 2, 1), (16, 1, 1)]
)
def test_gemma4_s_global_kv_heads_split_then_replicate_over_tp(cli, tmp_path, tp, local_heads, global_heads):
    """Each rank holds n_kv / tp heads of each kind, one replicated head once tp exceeds them (the global layers'
    4 from tp 4 on), as vLLM's Gemma4Attention does (max(1, total_num_kv_heads // tp_size))."""
    kv = _kv(cli, tmp_path, TEXT_31B, "--tp", str(tp))["kv"]
    assert kv["kv_heads_per_rank"] == local_heads
    assert kv["global_kv_heads_per_rank"] == global_heads
    assert kv["bytes_per_token_per_rank"] == 50 * local_heads * 256 * 2 * BF16 + 10 * global_heads * 512 * 2 * BF16


def test_a_tp_that_cannot_replicate_the_global_kv_heads_is_refused_naming_them(cli, tmp_path):
    config = {**TEXT_31B, "num_attention_heads": 24, "num_key_value_heads": 8, "num_global_key_value_heads": 3}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    result = cli.run("kv", str(path), "--tp", "8")
    assert result.exit_code == 2, result.output
    assert "global layers: tp (8) must be a multiple of global_n_kv_heads (3)" in result.stderr
    assert "Traceback" not in result.output and len(result.stderr.strip().splitlines()) == 1


def test_without_attention_k_eq_v_the_full_layers_keep_the_sliding_kv_heads(cli, tmp_path):
    """transformers overrides num_key_value_heads on full layers only under attention_k_eq_v; head_dim always."""
    kv = _kv(cli, tmp_path, {**TEXT_31B, "attention_k_eq_v": False})["kv"]
    assert kv["global_bytes_per_token_per_layer"] == 16 * 512 * 2 * BF16
    assert kv["bytes_per_token"] == 50 * 16_384 + 10 * 32_768


@pytest.mark.parametrize("command", [("kv", "--target", "h100", "--engine", "sglang"),
                                     ("check", "--target", "h100", "--engine", "trtllm"),
                                     ("plan", "--target", "8xh100", "--engine", "sglang")],
                         ids=["kv", "check", "plan"])  # fmt: skip
def test_engines_whose_pools_for_two_page_sizes_were_not_read_refuse_gemma4_in_one_line(cli, tmp_path, command):
    """vLLM's unification (unify_kv_cache_spec_page_size) is modelled; SGLang's and TensorRT-LLM's pools for two head
    geometries were not read: refused rather than a wrong pool."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(TEXT_31B))
    result = cli.run(command[0], str(path), *command[1:])
    assert result.exit_code == 2, result.output
    assert "its global layers cache 4 KV heads of 512 against 16 of 256 elsewhere" in result.stderr
    assert "plan it with --engine vllm" in result.stderr
    assert "Traceback" not in result.output and len(result.stderr.strip().splitlines()) == 1


TINY = {
    "vocab_size": 64, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 6, "num_attention_heads": 4,
    "num_key_value_heads": 2, "head_dim": 8, "global_head_dim": 16, "num_global_key_value_heads": 1,
    "attention_k_eq_v": True, "num_kv_shared_layers": 2, "sliding_window": 16, "hidden_size_per_layer_input": 4,
    "vocab_size_per_layer_input": 64, "layer_types": ["sliding_attention", "full_attention"] * 3,
}  # fmt: skip
"""A tiny Gemma 4: full layers 1 KV head of 16 (attention_k_eq_v), sliding 2 of 8, the last two layers sharing K/V."""


def _imported(fields: dict):
    """``fields`` as a gemma4_text config.json, read by mha."""
    return import_hf_config({"model_type": "gemma4_text", **fields}).model


def _per_kind(config) -> dict[str, tuple[int, int]]:
    """(KV heads, head width) of each layer type, as transformers' per_layer_config resolves them."""
    layers = config.per_layer_config
    return {kind: (layers[i].num_key_value_heads, layers[i].head_dim) for i, kind in enumerate(config.layer_types)}


def test_gemma4_31b_caches_901120_bytes_a_token_by_hand_not_one_geometry_s_983040():
    """By hand, bf16, under the window: 50 sliding x 16 x 256 x 2 (K, V) x 2 B + 10 full x 4 x 512 x 2 x 2 B;
    transformers' config gives the same geometry per kind, and no single (KV heads, head_dim) gives that sum."""
    transformers = pytest.importorskip("transformers")
    fields = {k: v for k, v in TEXT_31B.items() if k != "model_type"}
    config = transformers.Gemma4TextConfig(**fields)
    assert _per_kind(config) == {"sliding_attention": (16, 256), "full_attention": (4, 512)}
    by_hand = 50 * 16 * 256 * 2 * BF16 + 10 * 4 * 512 * 2 * BF16
    assert by_hand == 901_120
    per_layer = [2 * _per_kind(config)[kind][0] * _per_kind(config)[kind][1] * BF16 for kind in config.layer_types]
    assert sum(per_layer) == by_hand
    assert 60 * 16 * 256 * 2 * BF16 == 983_040 != by_hand  # the sliding layers' geometry on every layer


def test_transformers_caches_gemma4_s_full_layers_at_their_own_geometry():
    """A tiny Gemma 4 with attention_k_eq_v (full layers: 1 KV head of 16; sliding: 2 of 8) and two K/V-sharing
    layers: the prefill's cache holds each layer at its kind's geometry (K and V both, k_eq_v or not), and the
    sharing layers nothing: the per-kind sum a pricing of Gemma 4 has to reproduce."""
    torch = pytest.importorskip("torch")
    config, model, cache = tiny_gemma4_prefill(TINY)
    held = [
        (tuple(layer.keys.shape), tuple(layer.values.shape)) if getattr(layer, "keys", None) is not None else None
        for layer in cache.layers
    ]
    sliding, full = ((2, 2, 12, 8),) * 2, ((2, 1, 12, 16),) * 2
    assert held == [sliding, full, sliding, full, None, None]
    geometry = _per_kind(config)
    values_per_token = sum(2 * geometry[kind][0] * geometry[kind][1] for kind in config.layer_types[:4])
    allocated = sum(torch.Size(k).numel() + torch.Size(v).numel() for k, v in (h for h in held if h is not None))
    assert allocated == 2 * 12 * values_per_token == 3_072  # 2 x 12 tokens x (2 x 2 x 8 x 2 + 2 x 1 x 16 x 2)
    assert next(model.parameters()).dtype == torch.float32
    saved = json.loads(json.dumps(config.to_dict()))  # as save_pretrained writes it: per_layer_config, no global_*
    assert "per_layer_config" in saved and "global_head_dim" not in saved
    for read in (_imported(TINY), import_hf_config(saved).model):
        kv = kv_footprint(read, seq_len=12, batch=2, kv_dtype="fp32")
        assert kv.total_bytes == allocated * 4 and kv.n_shared_kv_layers == 2  # mha's figure, the cache allocated


def test_a_per_layer_config_that_is_not_one_override_of_the_full_layers_is_refused(cli, tmp_path):
    """transformers' per_layer_config may override any layer; mha reads it only as Gemma 4 builds it."""
    overrides = {str(i): {"head_dim": 512, "num_key_value_heads": 4} for i in range(5, 60, 6)}
    path = tmp_path / "config.json"
    fields = {k: v for k, v in TEXT_31B.items() if k not in ("global_head_dim", "num_global_key_value_heads")}
    path.write_text(json.dumps({**fields, "per_layer_config": overrides}))
    assert json.loads(cli.run("kv", str(path), "--json").stdout)["kv"]["bytes_per_token"] == 901_120
    path.write_text(json.dumps({**fields, "per_layer_config": {**overrides, "0": {"head_dim": 512}}}))
    result = cli.run("kv", str(path))
    assert result.exit_code == 2, result.output
    assert "per_layer_config must override head_dim and/or num_key_value_heads alike" in result.stderr
    assert "Traceback" not in result.output and len(result.stderr.strip().splitlines()) == 1


def test_mha_s_tiny_gemma4_cache_by_hand():
    """Without transformers: the tiny model's 2 sliding (2 x 8) and 2 full (1 x 16) caching layers, fp32."""
    kv = kv_footprint(_imported(TINY), seq_len=12, batch=2, kv_dtype="fp32")
    assert kv.bytes_per_token == 2 * (2 * 2 * 8 * 4) + 2 * (2 * 1 * 16 * 4) == 512
    assert kv.total_bytes == 2 * 12 * 512 == 12_288


def test_gemma4_31b_text_weights_by_hand_equal_transformers_meta_build():
    """The weights a pricing of Gemma 4 has to count, by hand: full layers' q/o at 512 wide heads, their k at 4 KV
    heads of 512 and no v_proj (attention_k_eq_v: V is K), q and k norms one head wide (v_norm has no weight)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    d, ff, heads, vocab = 5376, 21504, 32, 262144
    sliding, full = 50, 10
    attention = sliding * (2 * d * heads * 256 + 2 * d * 16 * 256) + full * (2 * d * heads * 512 + d * 4 * 512)
    head_norms = sliding * 2 * 256 + full * 2 * 512
    by_hand = vocab * d + 60 * (3 * d * ff + 4 * d) + attention + head_norms + d  # tied head, final norm
    assert by_hand == 30_697_345_280
    fields = {k: v for k, v in TEXT_31B.items() if k != "model_type"}
    with warnings.catch_warnings(), torch.device("meta"):
        warnings.simplefilter("ignore")
        model = transformers.Gemma4ForCausalLM(transformers.Gemma4TextConfig(**fields))
    assert sum(p.numel() for p in model.parameters()) == by_hand
    assert count_params(_imported(fields)).total == by_hand  # mha's count, each kind's heads, no v_proj on full layers


def test_gemma4_s_moe_block_without_its_sizes_is_refused_in_one_line_and_unused_fields_ignored(cli, tmp_path):
    """enable_moe_block needs num_experts, top_k_experts and moe_intermediate_size (Gemma4TextConfig has no default
    for them); a dense config's null MoE fields change nothing."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**TEXT_31B, "enable_moe_block": True, "num_experts": 128}))
    result = cli.run("kv", str(path))
    assert result.exit_code == 2, result.output
    assert "enable_moe_block is set but top_k_experts, moe_intermediate_size is not" in result.stderr
    assert "Traceback" not in result.output and len(result.stderr.strip().splitlines()) == 1
    unused = {"num_experts": None, "top_k_experts": None, "moe_intermediate_size": None}
    assert _kv(cli, tmp_path, {**TEXT_31B, **unused})["kv"]["bytes_per_token"] == 901_120


STATED_ROPE = {
    "sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0},
    "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1_000_000.0},
}
"""gemma-4's config.json states its RoPE per layer kind (Gemma4TextConfig's default_rope_params, transformers 5.24)."""


@pytest.mark.parametrize("stated", [False, True], ids=["left out", "stated"])
def test_gemma4_s_rope_bases_are_its_config_class_s_per_layer_kind(cli, tmp_path, stated):
    """Left out, Gemma4TextConfig fills rope_parameters per kind (full layers 1,000,000, a quarter rotating; sliding
    10,000): never 'rope_theta absent: 10,000'; stated, no assumed base at all."""
    config = {**TEXT_31B, "rope_parameters": STATED_ROPE} if stated else TEXT_31B
    data = _kv(cli, tmp_path, config)
    attention, assumed = data["model"]["attention"], data["assumptions"]
    assert (attention["rope"]["theta"], attention["rope"]["partial_rotary_factor"]) == (1_000_000.0, 0.25)
    assert attention["rope_local"]["theta"] == 10_000.0
    assert not [a for a in assumed if "rope_theta absent" in a or "unscaled" in a]
    filled = [a for a in assumed if a.startswith("rope_parameters absent")]
    assert len(filled) == (0 if stated else 1)
    assert stated or ("'rope_theta': 1000000.0" in filled[0] and "Gemma4TextConfig (transformers 5.24)" in filled[0])
    assert [a for a in assumed if a.startswith("rope_type 'proportional' is not modelled")]


@pytest.mark.parametrize("engine", ["vllm@0.18.0", "vllm@0.18", "vllm@0.10.0"])
@pytest.mark.parametrize("command", [("kv", "--target", "h100"), ("plan", "--target", "8xh100", "--tp", "8")])
def test_a_vllm_release_before_gemma4_was_registered_is_refused(cli, tmp_path, engine, command):
    """vLLM registers Gemma4ForCausalLM / Gemma4ForConditionalGeneration from 0.19.0 (models/registry.py, absent in
    0.18.1: data/engine_architectures.json): an earlier release typed cannot load the model, so no pool is priced
    for it; 0.19.0 is. One refusal (cli.release_notice.refuse_release_without_model, read from that table), in the
    same words on both commands."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(TEXT_31B))
    result = cli.run(command[0], str(path), *command[1:], "--engine", engine)
    assert result.exit_code == 2, result.output
    release = engine.removeprefix("vllm@")
    assert result.stderr.strip() == (
        f"error: vLLM {release} has no Gemma4ForCausalLM (first in 0.19.0): give --engine vllm@0.19.0 or later, a"
        " release that loads it"
    )
    assert cli.run(command[0], str(path), *command[1:], "--engine", "vllm@0.19.0").exit_code == 0


def test_the_first_release_registering_gemma4_is_read_from_the_architectures_table():
    """The engines' registries, read in every release's wheel (benchmarks/engine_architectures.py): vLLM 0.19.0
    (absent in 0.18.1), SGLang 0.5.11 (absent in 0.5.10.post1). The pool's own check refuses no vLLM generation that
    unifies pages (the release is the commands' check, above), and refuses SGLang's pool, which was not read."""
    from mha_cli.core.engine.architectures_table import engines_table
    from mha_cli.core.engine.per_kind_pages import refuse_per_kind_pages
    from mha_cli.core.errors import BadInputError

    for engine, first, before in (("vllm", "0.19.0", "0.18.1"), ("sglang", "0.5.11", "0.5.10.post1")):
        table = engines_table()[engine]
        assert table["architectures"]["Gemma4ForCausalLM"]["first"] == first
        assert table["releases_read"][table["releases_read"].index(first) - 1] == before  # read, and lacking it
    model = import_hf_config(TEXT_31B, name="gemma-4-31B").model
    refuse_per_kind_pages(model, "vllm-v1")
    refuse_per_kind_pages(model, "vllm-0.21")
    with pytest.raises(BadInputError, match=r"pages of two sizes"):
        refuse_per_kind_pages(model, "sglang-0.5")


def tiny_gemma4_prefill(fields: dict) -> tuple:
    """(config, model, cache): transformers' Gemma 4 built from ``fields`` with random weights (seed 0), after a
    12-token prefill of 2 sequences."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = transformers.Gemma4TextConfig(**fields)
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = transformers.Gemma4ForCausalLM(config).eval()
        with torch.no_grad():
            cache = model(torch.randint(0, 64, (2, 12)), use_cache=True).past_key_values
    return config, model, cache


def test_shared_layers_whose_kind_no_caching_layer_holds_are_refused_as_transformers_refuses_them(cli, tmp_path):
    """Trial 354 #1: TINY with 5 of its 6 layers sharing leaves one sliding layer caching, no full one for the shared
    full layers to reuse; transformers' config refuses it, and mha priced the full layers at nothing."""
    from transformers import Gemma4TextConfig

    orphaned = {**TINY, "num_kv_shared_layers": 5}
    with pytest.raises(ValueError, match="The set of layer types producing a cache is different"):
        assert Gemma4TextConfig(**orphaned).kv_sharing_modes  # the property the model reads as it builds its layers
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "gemma4_text", **orphaned}))
    result = cli.run("kv", str(path))
    assert result.exit_code == 2
    assert "n_kv_shared_layers (5) leaves no global layer among the first 1 to hold the K/V" in result.output
    assert _kv(cli, tmp_path, {"model_type": "gemma4_text", **TINY})["bytes_per_token"] > 0  # 2 shared: both kinds kept


def test_a_last_sliding_layer_is_read_full_as_gemma4_s_config_forces_it(cli, tmp_path):
    """Trial 354 #2: Gemma4TextConfig.__post_init__ forces the last layer to full attention (transformers 5.25), so
    TINY with its last entry sliding caches as TINY; it was priced with one full layer fewer."""
    from transformers import Gemma4TextConfig

    last_sliding = {**TINY, "layer_types": ["sliding_attention", "full_attention"] * 2 + ["sliding_attention"] * 2}
    copied = {**last_sliding, "layer_types": list(last_sliding["layer_types"])}  # the config rewrites the list given
    assert Gemma4TextConfig(**copied).layer_types[-1] == "full_attention"
    forced = {**last_sliding, "layer_types": [*last_sliding["layer_types"][:-1], "full_attention"]}
    read = _kv(cli, tmp_path, {"model_type": "gemma4_text", **last_sliding}, "--seq", "64")
    assert (
        read["bytes_per_token"]
        == _kv(cli, tmp_path, {"model_type": "gemma4_text", **forced}, "--seq", "64")["bytes_per_token"]
    )
    assert any(line.startswith("layer_types' last entry read as full_attention") for line in read["assumptions"])
    assert not any(
        "last entry" in line for line in _kv(cli, tmp_path, {"model_type": "gemma4_text", **TINY})["assumptions"]
    )


def test_the_default_cycle_s_last_layer_is_full_too(cli, tmp_path):
    """Review 356 #1: without layer_types Gemma4TextConfig builds 5 sliding : 1 full and forces the last layer full;
    8 layers cache as S S S S S F S F (2 full layers), where mha's cycle gave S S S S S F S S."""
    from transformers import Gemma4TextConfig

    cycle = {key: value for key, value in TINY.items() if key != "layer_types"}
    eight = {**cycle, "num_hidden_layers": 8, "num_kv_shared_layers": 0}
    built = Gemma4TextConfig(**eight).layer_types
    assert built == ["sliding_attention"] * 5 + ["full_attention", "sliding_attention", "full_attention"]
    read = _kv(cli, tmp_path, {"model_type": "gemma4_text", **eight}, "--seq", "64")
    listed = _kv(cli, tmp_path, {"model_type": "gemma4_text", **eight, "layer_types": built}, "--seq", "64")
    assert read["total_bytes"] == listed["total_bytes"]
    assert "the default 5:1 cycle's last layer read as full_attention" in " ".join(read["assumptions"])
    four = {**cycle, "num_hidden_layers": 4, "num_kv_shared_layers": 1}  # S S S F: the full layer would share
    path = tmp_path / "four.json"
    path.write_text(json.dumps({"model_type": "gemma4_text", **four}))
    assert cli.run("kv", str(path)).exit_code == 2
    six = {**cycle, "num_hidden_layers": 6, "num_kv_shared_layers": 0}  # its last layer is full already: unsaid
    assert "cycle's last layer" not in " ".join(_kv(cli, tmp_path, {"model_type": "gemma4_text", **six})["assumptions"])
