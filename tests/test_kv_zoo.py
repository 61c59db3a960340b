"""The 2025-26 model zoo: every family's cache priced per layer kind, against hand counts written here and
against the cache transformers 5.24 allocates for a scaled-down copy of the same family (random weights, CPU,
nothing downloaded)."""

import json

import pytest

from mha_cli.core.errors import BadInputError
from mha_cli.core.hf_import import import_hf_config
from mha_cli.core.kv import kv_footprint
from tests.conftest import FIXTURES, reference_hf_config

BF16, FP32 = 2, 4


def imported(name: str):
    return import_hf_config(json.loads(reference_hf_config(name).read_text()))


# Published configs: (per-token bytes in bf16, fixed state bytes per sequence), each counted by hand as
# transformers' cache classes hold them (conv_kernel conv columns, an fp32 recurrent state, the indexer key in bf16).
HAND_COUNTS = {
    # 34 layers, Gemma3TextConfig defaults: 4 KV heads x head_dim 256 (the config leaves both out).
    "gemma-3-4b-it": (34 * 2 * 4 * 256 * BF16, 0),
    # 48 layers (36 chunked, 12 global NoPE), 8 KV heads x 128.
    "llama-4-scout-17b-16e": (48 * 2 * 8 * 128 * BF16, 0),
    # 12 full-attention layers (2 KV heads x 256); 36 Gated DeltaNet layers: fp32 state 32 v-heads x 128 x 128,
    # bf16 conv over q, k, v (2 * 16 * 128 + 32 * 128 channels) x kernel 4.
    "qwen3-next-80b-a3b": (
        12 * 2 * 2 * 256 * BF16,
        36 * (32 * 128 * 128 * FP32 + (2 * 16 * 128 + 32 * 128) * 4 * BF16),
    ),
    # Qwen3.6-27B (qwen3_5 text config): 16 gated-attention layers (4 KV heads x 256); 48 Gated DeltaNet layers:
    # fp32 state 48 v-heads x 128 x 128, bf16 conv over q, k, v (2 * 16 * 128 + 48 * 128 channels) x kernel 4.
    "qwen3.6-27b": (
        16 * 2 * 4 * 256 * BF16,
        48 * (48 * 128 * 128 * FP32 + (2 * 16 * 128 + 48 * 128) * 4 * BF16),
    ),
    # 4 attention layers (8 KV heads x 128); 28 Mamba layers: d_inner 8192 x d_state 16 fp32 + 8192 x 4 conv.
    "jamba-mini-1.5": (4 * 2 * 8 * 128 * BF16, 28 * (8192 * 16 * FP32 + 8192 * 4 * BF16)),
    # 44 layers, each attention (2 KV heads x 128) beside Mamba-2 (24 heads x 128 x 256, conv 3072 + 2 * 256).
    "falcon-h1-7b": (44 * 2 * 2 * 128 * BF16, 44 * (24 * 128 * 256 * FP32 + (3072 + 2 * 256) * 4 * BF16)),
    # 4 attention layers (8 KV heads x 128); 36 Mamba-2 layers: 128 heads x 64 x 128, conv 8192 + 2 * 128.
    "granite-4.0-h-small": (4 * 2 * 8 * 128 * BF16, 36 * (128 * 64 * 128 * FP32 + (8192 + 2 * 128) * 4 * BF16)),
    # 10 softmax layers (8 KV heads x 128); 70 lightning layers: 64 heads x 128 x 128 in the activation dtype.
    "minimax-text-01": (10 * 2 * 8 * 128 * BF16, 70 * 64 * 128 * 128 * BF16),
    # 7 MLA layers (latent 512 + RoPE 64); 20 KDA layers: 32 heads x 128 x 128 fp32, conv 3 x 32 x 128 x 4.
    "kimi-linear-48b-a3b": (7 * (512 + 64) * BF16, 20 * (32 * 128 * 128 * FP32 + 3 * 32 * 128 * 4 * BF16)),
    # 61 MLA layers: latent 512 + RoPE 64 + indexer key 128.
    "deepseek-v3.2-exp": (61 * (512 + 64 + 128) * BF16, 0),
    # 35 layers, the last 15 share earlier layers' K/V: 20 store 2 KV heads x 256.
    "gemma-3n-e4b": (20 * 2 * 2 * 256 * BF16, 0),
    # 32 layers, 8 KV heads x (4096 / 32).
    "command-r7b-12-2024": (32 * 2 * 8 * 128 * BF16, 0),
    # 36 layers (every 4th NoPE: no change to bytes), 4 KV heads x 128.
    "smollm3-3b": (36 * 2 * 4 * 128 * BF16, 0),
}


ENGINE_COUNTS = {
    **HAND_COUNTS,
    # vLLM (MambaStateShapeCalculator, MambaStateDtypeCalculator): conv_kernel - 1 conv columns; a recurrent state
    # the config does not type in the model dtype (bf16), KDA's in fp32; the indexer key fp8 + a 4-byte scale.
    "qwen3-next-80b-a3b": (
        12 * 2 * 2 * 256 * BF16,
        36 * (32 * 128 * 128 * BF16 + (2 * 16 * 128 + 32 * 128) * 3 * BF16),
    ),
    "qwen3.6-27b": (  # its config types the recurrent state: mamba_ssm_dtype float32
        16 * 2 * 4 * 256 * BF16,
        48 * (48 * 128 * 128 * FP32 + (2 * 16 * 128 + 48 * 128) * 3 * BF16),
    ),
    "jamba-mini-1.5": (4 * 2 * 8 * 128 * BF16, 28 * (8192 * 16 * BF16 + 8192 * 3 * BF16)),
    "falcon-h1-7b": (44 * 2 * 2 * 128 * BF16, 44 * (24 * 128 * 256 * BF16 + (3072 + 2 * 256) * 3 * BF16)),
    "granite-4.0-h-small": (4 * 2 * 8 * 128 * BF16, 36 * (128 * 64 * 128 * BF16 + (8192 + 2 * 128) * 3 * BF16)),
    "kimi-linear-48b-a3b": (7 * (512 + 64) * BF16, 20 * (32 * 128 * 128 * FP32 + 3 * 32 * 128 * 3 * BF16)),
    "deepseek-v3.2-exp": (61 * ((512 + 64) * BF16 + 128 + 4), 0),
}
"""The same configs as the serving engine allocates them (``--state-convention engine``, the default)."""


@pytest.mark.parametrize("name", list(HAND_COUNTS))
@pytest.mark.parametrize(("convention", "counts"), [("transformers", HAND_COUNTS), ("engine", ENGINE_COUNTS)])
def test_published_configs_match_hand_counts(name, convention, counts):
    per_token, state = counts[name]
    footprint = kv_footprint(imported(name).model, seq_len=8192, state_convention=convention)
    assert (footprint.bytes_per_token, footprint.state_bytes_per_seq) == (per_token, state)
    assert footprint.bytes_per_sequence - state <= 8192 * per_token  # windows and chunks hold at most 8,192


def test_per_sequence_adds_the_state_once_and_windows_the_tokens():
    qwen = imported("qwen3-next-80b-a3b").model
    short, long = kv_footprint(qwen, seq_len=8192), kv_footprint(qwen, seq_len=131072, batch=2)
    per_token, state = ENGINE_COUNTS["qwen3-next-80b-a3b"]
    assert short.bytes_per_sequence == 8192 * per_token + state
    assert long.total_bytes == 2 * (131072 * per_token + state)  # the state does not grow with the context
    llama4 = imported("llama-4-scout-17b-16e").model  # 36 chunked layers hold one 8,192-token chunk at most
    assert kv_footprint(llama4, seq_len=131072).bytes_per_sequence == 2 * 8 * 128 * BF16 * (12 * 131072 + 36 * 8192)
    gemma3 = imported("gemma-3-4b-it").model  # 29 local (window 1,024) + 5 global
    assert kv_footprint(gemma3, seq_len=8192).bytes_per_sequence == 2 * 4 * 256 * BF16 * (29 * 1024 + 5 * 8192)


def test_sparse_gemma3_config_lists_every_default_assumed():
    result = imported("gemma-3-4b-it")
    notes = " | ".join(result.assumptions)
    for field in ("num_attention_heads", "num_key_value_heads", "head_dim", "vocab_size"):
        assert f"{field} absent" in notes and "Gemma3TextConfig" in notes, field


def test_vocab_size_is_not_needed_for_a_kv_figure():
    config = {"model_type": "brand_new", "hidden_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 16,
              "num_key_value_heads": 4, "intermediate_size": 4096}  # fmt: skip
    result = import_hf_config(config)
    assert kv_footprint(result.model, seq_len=1).bytes_per_token == 4 * 2 * 4 * 64 * BF16
    assert any("vocab_size absent" in note for note in result.assumptions)


def test_qwen2_slides_only_from_max_window_layers():
    config = json.loads(reference_hf_config("qwen2.5-7b").read_text()) | {"use_sliding_window": True,
                                                                          "sliding_window": 4096}  # fmt: skip
    model = import_hf_config(config).model  # max_window_layers 28 = every layer: none slides
    assert model.n_local_layers == 0
    model = import_hf_config(config | {"max_window_layers": 20}).model
    assert [model.layer_kind(i) for i in (19, 20, 27)] == ["global", "local", "local"]


def test_the_v32_fixture_is_the_hubs_fp8_block_checkpoint(cli):
    """The fixture is the hub's config.json verbatim (tests/fixtures/hf_configs/SOURCES.md), quantization_config and
    all: priced as its fp8 128 x 128 block checkpoint, as the preset is, not in bf16 (171,263,734,272 B a device
    before, from an assembled copy without quantization_config). The indexer's wq_b (8,192 x 1,536, replicated) is
    fp8 with its 64 x 12 fp32 block scales, as vLLM holds it; wk and weights_proj bf16, which vLLM upcasts them to
    (``core.params.QUANTISED_INDEXER_PARTS``): 61 x (25,165,824 - 12,582,912 - 3,072) B less than with wq_b in bf16
    (86,843,121,184, trial 375 #1)."""
    args = ("--target", "8xh200", "--seq", "8k")
    fixture = cli.json("kv", str(reference_hf_config("deepseek-v3.2-exp")), *args)
    assert fixture["deployment"]["checkpoint_format"] == fixture["deployment"]["weight_dtype"] == "fp8-block"
    preset = cli.json("kv", "deepseek-v3.2-exp", *args)
    wq_b_in_fp8 = 61 * (8192 * 1536 * 2 - 8192 * 1536 - 64 * 12 * 4)
    assert fixture["memory"]["weight_bytes_per_device"] == preset["memory"]["weight_bytes_per_device"]
    assert preset["memory"]["weight_bytes_per_device"] == 86_843_121_184 - wq_b_in_fp8 == 86_075_750_944


def test_plain_fp8_and_the_sparse_mla_layout():
    v32 = imported("deepseek-v3.2-exp").model
    assert kv_footprint(v32, seq_len=1, kv_dtype="fp8").bytes_per_token == 61 * (512 + 64 + 132)  # engine key
    fp8_everywhere = kv_footprint(v32, seq_len=1, kv_dtype="fp8", state_convention="transformers")
    assert fp8_everywhere.bytes_per_token == 61 * (512 + 64 + 128)
    # fp8_ds_mla: 512 fp8 + 4 fp32 scales + 64 bf16 RoPE values, indexer 128 fp8 + one fp32 scale.
    assert kv_footprint(v32, seq_len=1, kv_dtype="fp8_ds_mla").bytes_per_token == 61 * (656 + 132)
    with pytest.raises(BadInputError, match=r"fp8_ds_mla .* needs an MLA model"):
        kv_footprint(imported("smollm3-3b").model, seq_len=1, kv_dtype="fp8-ds-mla")


def test_quantised_kv_leaves_the_fixed_state_alone():
    jamba = imported("jamba-mini-1.5").model
    bf16, fp8 = kv_footprint(jamba, seq_len=1024), kv_footprint(jamba, seq_len=1024, kv_dtype="fp8")
    assert fp8.bytes_per_token * 2 == bf16.bytes_per_token
    assert fp8.state_bytes_per_seq == bf16.state_bytes_per_seq


def test_state_splits_over_tensor_parallel_ranks():
    qwen = imported("qwen3-next-80b-a3b").model  # 32 value heads, 8192 conv channels: a quarter each on 4 ranks
    split = kv_footprint(qwen, seq_len=1024, tp=2)
    assert split.state_bytes_per_seq_per_rank == 36 * (16 * 128 * 128 * BF16 + 4096 * 3 * BF16)
    held_by_transformers = kv_footprint(qwen, seq_len=1024, tp=2, state_convention="transformers")
    assert held_by_transformers.state_bytes_per_seq_per_rank == 36 * (16 * 128 * 128 * FP32 + 4096 * 4 * BF16)


def test_unknown_layer_type_is_one_clear_error():
    config = json.loads(reference_hf_config("qwen3-next-80b-a3b").read_text())
    with pytest.raises(BadInputError, match="unknown layer type"):
        import_hf_config(config | {"num_hidden_layers": 2, "layer_types": ["full_attention", "mystery"]})


def test_kv_json_reports_state_and_includes_it_in_total(cli):
    path = str(reference_hf_config("falcon-h1-7b"))
    out = cli.json("kv", path, "--seq", "8k", "--batch", "2")
    per_token, state = ENGINE_COUNTS["falcon-h1-7b"]
    assert (out["bytes_per_token"], out["state_bytes_per_seq"]) == (per_token, state)
    assert out["total_bytes"] == 2 * (8192 * per_token + state)


def test_memory_plan_and_ways_out_count_the_state(cli):
    path = str(reference_hf_config("qwen3-next-80b-a3b"))
    out = cli.json("kv", path, "--seq", "8k", "--batch", "4", "--target", "h100")
    per_token, state = ENGINE_COUNTS["qwen3-next-80b-a3b"]
    assert out["memory"]["kv_bytes_per_device"] == 4 * (8192 * per_token + state)
    free = out["memory"]["usable_bytes"] - out["memory"]["weight_bytes_per_device"]
    assert out["memory"]["max_sequences"] == max(0, free) // (8192 * per_token + state)


# --- the cache transformers allocates for a scaled-down copy -------------------------------------------------

TINY = {  # each family's own config.json spelling, tiny widths, the family's layer layout
    "qwen3_next": dict(hidden_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
                       linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=16,
                       linear_value_head_dim=8, linear_conv_kernel_dim=4, num_experts=4, num_experts_per_tok=2,
                       moe_intermediate_size=32, shared_expert_intermediate_size=32, intermediate_size=64,
                       vocab_size=128),
    "qwen3_5_text": dict(hidden_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                         head_dim=32, linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=16,
                         linear_value_head_dim=8, linear_conv_kernel_dim=3, intermediate_size=64, vocab_size=128,
                         layer_types=["linear_attention", "full_attention"] * 2, pad_token_id=0),
    "jamba": dict(hidden_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                  attn_layer_period=4, attn_layer_offset=2, mamba_d_state=8, mamba_d_conv=4, mamba_expand=2,
                  num_experts=2, intermediate_size=64, vocab_size=128),
    "falcon_h1": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                      mamba_d_ssm=96, mamba_n_heads=6, mamba_d_head=16, mamba_n_groups=2, mamba_d_state=8,
                      mamba_d_conv=4, mamba_chunk_size=4, intermediate_size=64, vocab_size=128),
    "granitemoehybrid": dict(hidden_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                             layer_types=["mamba", "mamba", "mamba", "attention"], mamba_n_heads=8, mamba_d_head=16,
                             mamba_n_groups=1, mamba_d_state=8, mamba_d_conv=4, mamba_expand=2, mamba_chunk_size=4,
                             num_local_experts=2, num_experts_per_tok=1, intermediate_size=32,
                             shared_intermediate_size=32, vocab_size=128),
    "minimax": dict(hidden_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                    layer_types=["linear_attention", "full_attention"] * 2, num_local_experts=2,
                    intermediate_size=32, vocab_size=128, block_size=4),
    "kimi_linear": dict(hidden_size=64, num_hidden_layers=4, num_attention_heads=4, kv_lora_rank=32,
                        qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16, moe_intermediate_size=32,
                        linear_attn_config={"full_attn_layers": [4], "kda_layers": [1, 2, 3], "head_dim": 16,
                                            "num_heads": 4, "short_conv_kernel_size": 4},
                        intermediate_size=64, num_local_experts=4, num_experts_per_tok=2, vocab_size=128,
                        pad_token_id=0, bos_token_id=1, eos_token_id=2),
    "deepseek_v32": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
                         kv_lora_rank=32, q_lora_rank=48, qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16,
                         index_head_dim=24, index_n_heads=2, index_topk=4, n_routed_experts=4, num_experts_per_tok=2,
                         n_group=1, topk_group=1, moe_intermediate_size=32, intermediate_size=64,
                         first_k_dense_replace=1, vocab_size=128),
    "gemma3n_text": dict(hidden_size=64, num_hidden_layers=10, num_attention_heads=4, num_key_value_heads=2,
                         head_dim=16, sliding_window=4, num_kv_shared_layers=4, intermediate_size=64, vocab_size=128,
                         vocab_size_per_layer_input=128, hidden_size_per_layer_input=8, laurel_rank=4,
                         altup_num_inputs=2),
    "llama4_text": dict(hidden_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                        head_dim=16, attention_chunk_size=4, intermediate_size=32, intermediate_size_mlp=64,
                        num_local_experts=2, vocab_size=128),
    "qwen2": dict(hidden_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                  intermediate_size=64, vocab_size=128, use_sliding_window=True, sliding_window=4,
                  max_window_layers=2),
    "cohere2": dict(hidden_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                    intermediate_size=64, vocab_size=128, sliding_window=4, sliding_window_pattern=4),
    "smollm3": dict(hidden_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                    intermediate_size=64, vocab_size=128, pad_token_id=0),
}  # fmt: skip
WINDOWED = {"gemma3n_text", "llama4_text", "qwen2", "cohere2"}  # measured with a StaticCache: min(seq, window)
SEQ = 10


def _cache_bytes(cache) -> int:
    """Bytes of every tensor a transformers cache holds: K/V, indexer keys, conv and recurrent states."""
    import torch

    tensors = []
    for layer in cache.layers:
        tensors += [getattr(layer, name, None) for name in ("keys", "values", "indexer_keys")]
        for name in ("conv_states", "recurrent_states"):
            tensors += list((getattr(layer, name, None) or {}).values())
    tensors += list(getattr(cache, "linear_cache", []))  # MiniMax keeps its lightning states apart
    return sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor))


@pytest.mark.parametrize("model_type", list(TINY))
def test_scaled_down_copy_matches_the_cache_transformers_allocates(model_type):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from transformers.cache_utils import StaticCache

    torch.manual_seed(0)
    config = transformers.AutoConfig.for_model(model_type, **TINY[model_type])
    model = transformers.AutoModelForCausalLM.from_config(config).to(torch.bfloat16).eval()
    ids = torch.randint(0, 128, (1, SEQ))
    kwargs = {"cache": StaticCache(config=config, max_cache_len=SEQ)} if model_type in WINDOWED else {}
    with torch.no_grad():
        measured = _cache_bytes(model(ids, use_cache=True, **kwargs).past_key_values)

    ours = import_hf_config({"model_type": model_type, **TINY[model_type]}).model
    assert kv_footprint(ours, seq_len=SEQ, kv_dtype="bf16", state_convention="transformers").bytes_per_sequence == (
        measured
    )


PRESET_OF_FIXTURE = {
    "gemma-3-4b-it": "gemma-3-4b", "llama-4-scout-17b-16e": "llama-4-scout", "qwen3-next-80b-a3b": "qwen3-next-80b-a3b",
    "jamba-mini-1.5": "jamba-mini-1.5", "falcon-h1-7b": "falcon-h1-7b", "granite-4.0-h-small": "granite-4.0-h-small",
    "minimax-text-01": "minimax-text-01", "kimi-linear-48b-a3b": "kimi-linear-48b-a3b",
    "deepseek-v3.2-exp": "deepseek-v3.2-exp", "gemma-3n-e4b": "gemma-3n-e4b", "command-r7b-12-2024": "command-r7b",
    "smollm3-3b": "smollm3-3b", "kimi-k2-instruct": "kimi-k2", "minimax-m2": "minimax-m2", "minimax-m2.7": "minimax-m2.7",
}  # fmt: skip


@pytest.mark.parametrize("name", list(PRESET_OF_FIXTURE))
def test_presets_price_like_their_published_config(name):
    from mha_cli.core.presets import get_preset

    preset, fixture = get_preset(PRESET_OF_FIXTURE[name]), imported(name).model
    for seq in (8192, 131072):
        ours, theirs = kv_footprint(preset, seq_len=seq), kv_footprint(fixture, seq_len=seq)
        assert (ours.bytes_per_token, ours.state_bytes_per_seq, ours.bytes_per_sequence) == (
            theirs.bytes_per_token, theirs.state_bytes_per_seq, theirs.bytes_per_sequence,
        )  # fmt: skip
    assert (preset.d_model, preset.n_layers, preset.attention.n_heads, preset.attention.n_kv_heads) == (
        fixture.d_model, fixture.n_layers, fixture.attention.n_heads, fixture.attention.n_kv_heads,
    )  # fmt: skip


def test_presets_list_the_new_families_with_their_state(cli):
    rows = {row["model"]["name"]: row for row in cli.json("presets")["presets"]}
    assert rows["qwen3-next-80b-a3b"]["bf16_state_bytes_per_seq"] == ENGINE_COUNTS["qwen3-next-80b-a3b"][1]
    assert rows["llama-4-scout"]["bf16_bytes_per_token"] == HAND_COUNTS["llama-4-scout-17b-16e"][0]


def test_verify_refuses_layers_the_torch_ring_does_not_build(cli):
    result = cli.run("verify", "llama-4-scout", "--seq", "64")
    assert result.exit_code == 2
    assert "Gated DeltaNet / Mamba / Mamba-2 / lightning / KDA / short-conv layers only" in result.output
    assert "chunked" in result.output


def test_a_config_can_state_its_ssm_dtype():
    config = json.loads(reference_hf_config("qwen3-next-80b-a3b").read_text())
    halved = import_hf_config(config | {"mamba_ssm_dtype": "bfloat16"}).model
    conv = 2 * 16 * 128 + 32 * 128  # channels
    per_layer = 32 * 128 * 128 * BF16 + conv * 4 * BF16
    assert kv_footprint(halved, seq_len=1, state_convention="transformers").state_bytes_per_seq == 36 * per_layer
    typed_fp32 = import_hf_config(config | {"mamba_ssm_dtype": "float32"}).model  # vLLM keeps a typed state so
    assert kv_footprint(typed_fp32, seq_len=1).state_bytes_per_seq == 36 * (32 * 128 * 128 * FP32 + conv * 3 * BF16)
    with pytest.raises(BadInputError, match="mamba_ssm_dtype"):
        import_hf_config(config | {"mamba_ssm_dtype": "int8"})


def test_the_table_shows_layer_kinds_and_the_fixed_state(cli):
    from mha_cli.cli.app import app

    def table(*args: str) -> str:
        result = cli.runner.invoke(app, list(args), env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        return result.output

    jamba = table("kv", "jamba-mini-1.5", "--seq", "8k")
    assert "4 global, 28 mamba layers" in jamba and "fixed state per sequence" in jamba
    assert "28 layers x 311,296 B fixed state" in jamba  # (8192 x 16 + 8192 x 3) x 2 B, as vLLM holds it
    assert "--state-convention transformers" in jamba
    assert "132 of it indexer key" in table("kv", "deepseek-v3.2-exp", "--kv-dtype", "fp8_ds_mla")


def test_the_output_says_which_allocation_a_state_follows(cli):
    """Default: the engine's, said in a warning with the way to the other; a bad value is one line and exit 2."""
    engine = cli.json("kv", "jamba-mini-1.5", "--seq", "8k")
    held = cli.json("kv", "jamba-mini-1.5", "--seq", "8k", "--state-convention", "transformers")
    assert (engine["kv"]["state_convention"], held["kv"]["state_convention"]) == ("engine", "transformers")
    assert engine["state_bytes_per_seq"] == ENGINE_COUNTS["jamba-mini-1.5"][1]
    assert held["state_bytes_per_seq"] == HAND_COUNTS["jamba-mini-1.5"][1]
    assert any("as vLLM allocates it" in w and "--state-convention transformers" in w for w in engine["warnings"])
    assert cli.json("kv", "llama-3-8b")["kv"]["state_convention"] is None  # nothing to hold: nothing said
    assert not any("state-convention" in w for w in cli.json("kv", "llama-3-8b")["warnings"])
    bad = cli.run("kv", "jamba-mini-1.5", "--state-convention", "vllm")
    assert bad.exit_code == 2 and "--state-convention" in bad.output and "Traceback" not in bad.output


def test_verify_says_it_predicts_the_state_torch_holds(cli):
    report = cli.json(
        "verify", str(FIXTURES / "tiny_hybrids" / "tiny-qwen3-next.json"), "--device", "cpu", "--seq", "16"
    )
    assert report["measured_state_bytes"] == report["predicted_state_bytes"] > 0
    assert any("as the torch ring holds it" in note and "vLLM holds" in note for note in report["notes"])
