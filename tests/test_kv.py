"""KV-cache arithmetic pinned to published reference numbers and hand-counted bytes."""

import pytest

from mha_cli.core.errors import BadInputError
from mha_cli.core.kv import bytes_per_token_per_layer, kv_footprint, tokens_held
from mha_cli.core.model_migration import PARTS, flat_name
from mha_cli.core.presets import PRESET_DATA, get_preset, preset_names
from mha_cli.core.tensor_parallel import kv_heads_per_rank

# Published / hand-derived bf16 bytes per token (all layers).
REFERENCE_BF16 = {
    "llama-3-8b": 131_072,  # 32 layers * 2 * 8 KV heads * 128 * 2 B
    "llama-3-70b": 327_680,  # 80 * 2 * 8 * 128 * 2
    "deepseek-v3": 70_272,  # 61 * (512 + 64) * 2, absorbed MLA
    "gemma-2-9b": 344_064,  # 42 * 2 * 8 * 256 * 2 (explicit head_dim 256)
    "llama-2-7b": 524_288,  # 32 * 2 * 32 * 128 * 2 (MHA)
    "falcon-7b": 8_192,  # 32 * 2 * 1 * 64 * 2 (MQA)
    "qwen3-8b": 147_456,  # 36 * 2 * 8 * 128 * 2 (explicit head_dim 128)
}


@pytest.mark.parametrize(("name", "expected"), REFERENCE_BF16.items(), ids=list(REFERENCE_BF16))
def test_published_bytes_per_token(name, expected):
    assert kv_footprint(get_preset(name), seq_len=1).bytes_per_token == expected


def hand_count_bf16_sequence_bytes(fields: dict, seq_len: int, convention: str = "engine") -> int:
    """An independent count from the preset's raw fields: values per token per layer, 2 bytes each, windows and
    chunks applied layer by layer, shared-K/V layers skipped, plus each state layer's fixed state (no ModelSpec, no
    calculator code). ``engine`` as vLLM allocates the state (conv_kernel - 1 columns of bf16; the recurrent state
    in bf16 unless the preset types it, KDA's fp32) and DeepSeek-V3.2's indexer key (fp8 + a 4-byte scale per 128
    values); ``transformers`` as its caches do (conv_kernel columns, an fp32 recurrent state, the key in bf16)."""
    engine = convention == "engine"
    if "mla" in fields:
        token_bytes = 2 * (fields["mla"]["kv_lora_rank"] + fields["mla"].get("qk_rope_head_dim", 64))
        index = (fields["mla"].get("indexer") or {}).get("index_head_dim", 0)
        token_bytes += (index + 4 * -(-index // 128)) if engine else 2 * index
    else:
        n_kv = fields.get("n_kv_heads", fields["n_heads"])
        head_dim = fields.get("head_dim", fields["d_model"] // fields["n_heads"])
        token_bytes = 2 * 2 * n_kv * head_dim
    default = "local" if fields.get("sliding_window") else "chunked" if fields.get("attention_chunk") else "global"
    pattern = fields.get("layer_pattern") or [default]
    held = {"global": seq_len, "linear": 0}
    held["local"] = min(seq_len, fields.get("sliding_window") or seq_len)
    held["chunked"] = min(seq_len, fields.get("attention_chunk") or seq_len)
    state = fields.get("recurrent") or {}
    state_bytes = 0
    if state:
        recurrent = state["n_heads"] * state["head_dim"] * state["state_dim"]
        typed = state.get("state_dtype", "auto")
        fp32 = typed == "fp32" or (typed == "auto" and (not engine or state["kind"] == "kda"))
        state_bytes = recurrent * (4 if fp32 else 2)
        columns = state.get("conv_kernel", 0) - (1 if engine and state.get("conv_kernel") else 0)
        state_bytes += state.get("conv_dim", 0) * columns * 2
    first_shared = fields["n_layers"] - fields.get("n_kv_shared_layers", 0)
    total = 0
    for layer in range(fields["n_layers"]):
        kind = pattern[layer % len(pattern)]
        if layer < first_shared:
            total += held[kind] * token_bytes
        if kind == "linear" or state.get("on_attention_layers"):
            total += state_bytes
    return total


def flat_preset(name: str) -> dict:
    """The preset's own data as written (before its family's layout), its parts' fields under their flat names."""
    data = dict(PRESET_DATA[name])
    for part in PARTS:
        for field, value in data.pop(part, {}).items():
            data[flat_name(part, field)] = value
    return data


@pytest.mark.parametrize("name", preset_names())
@pytest.mark.parametrize("convention", ["engine", "transformers"])
def test_every_preset_matches_a_hand_count(name, convention):
    for seq in (4096, 20000):  # 20,000 tokens pass Llama-4's 8,192-token chunk too
        footprint = kv_footprint(get_preset(name), seq_len=seq, batch=3, state_convention=convention)
        expected = hand_count_bf16_sequence_bytes(flat_preset(name), seq, convention)
        assert footprint.bytes_per_sequence == expected
        assert footprint.total_bytes == 3 * expected


def test_the_two_conventions_differ_only_where_a_state_or_an_indexer_is():
    """A control: the conventions must disagree on every hybrid with a conv or an untyped state and on DeepSeek-V3.2,
    and agree everywhere else."""
    for name in preset_names():
        fields = flat_preset(name)
        engine = kv_footprint(get_preset(name), seq_len=4096).bytes_per_sequence
        transformers = kv_footprint(get_preset(name), seq_len=4096, state_convention="transformers").bytes_per_sequence
        state = fields.get("recurrent") or {}
        # MiniMax's lightning state is typed (activation) and has no conv: both hold it alike
        special = (
            "indexer" in (fields.get("mla") or {})
            or bool(state.get("conv_kernel"))
            or (state and state.get("state_dtype", "auto") == "auto")
        )
        assert (engine < transformers) if special else (engine == transformers), name
    # Qwen3-Next's Gated DeltaNet layer: 32 x 128 x 128 recurrent values, 8,192 conv channels.
    next_80b = get_preset("qwen3-next-80b-a3b")
    assert kv_footprint(next_80b, seq_len=1).state_bytes_per_layer == 32 * 128 * 128 * 2 + 8192 * 3 * 2
    assert kv_footprint(next_80b, seq_len=1, state_convention="transformers").state_bytes_per_layer == (
        32 * 128 * 128 * 4 + 8192 * 4 * 2
    )
    # DeepSeek-V3.2: 61 layers x (576 x 2 B latent + 128 fp8 + 4 B scale) = 85,904 B a token, whatever the KV dtype.
    v32 = get_preset("deepseek-v3.2-exp")
    assert kv_footprint(v32, seq_len=1).bytes_per_token == 61 * (576 * 2 + 132)
    assert kv_footprint(v32, seq_len=1, state_convention="transformers").bytes_per_token == 85_888


def test_dtypes_scale_and_add_their_scales():
    model = get_preset("llama-3-8b")  # 8 KV heads, head_dim 128, 32 layers
    per_layer = {d: bytes_per_token_per_layer(model, d) for d in ("fp32", "bf16", "fp8", "int8", "int4")}
    assert per_layer["fp32"] == 2 * 8 * 128 * 4
    assert per_layer["bf16"] == 2 * 8 * 128 * 2
    assert per_layer["fp8"] == 2 * 8 * 128  # per-tensor scale: nothing per token
    assert per_layer["int8"] == 2 * 8 * (128 + 2)  # one fp16 scale per cached vector
    assert per_layer["int4"] == 2 * 8 * (64 + 4 * 4)  # 4 groups of 32, scale + zero each


def test_mla_absorbed_naive_and_fp8_layouts():
    v3 = get_preset("deepseek-v3")
    assert bytes_per_token_per_layer(v3, "bf16") == 1152
    assert bytes_per_token_per_layer(v3, "fp8") == 576  # plain fp8: 1 B per value, per-tensor scale
    v32 = get_preset("deepseek-v3.2-exp")  # the same latent, with the lightning indexer's 132 B key beside it
    assert bytes_per_token_per_layer(v32, "fp8_ds_mla") == 656 + 132  # sparse FlashMLA: 512 + 4 * 4 + 64 * 2
    assert bytes_per_token_per_layer(v32, "fp8-ds-mla") == 656 + 132
    naive = bytes_per_token_per_layer(v3, "bf16", "naive")
    assert naive == 128 * (192 + 128) * 2  # decompressed K (nope + rope) and V per head


def test_sliding_window_layers_hold_the_window():
    gemma = get_preset("gemma-2-9b")  # 21 local layers (window 4096) + 21 global
    footprint = kv_footprint(gemma, seq_len=8192)
    per_layer = 2 * 8 * 256 * 2
    assert footprint.bytes_per_sequence == per_layer * (21 * 8192 + 21 * 4096)
    short = kv_footprint(gemma, seq_len=1000)
    assert short.bytes_per_sequence == per_layer * 42 * 1000


def test_gemma3_five_local_to_one_global():
    gemma3 = get_preset("gemma-3-27b")
    assert (gemma3.n_local_layers, gemma3.n_global_layers) == (52, 10)
    footprint = kv_footprint(gemma3, seq_len=32768)
    assert footprint.bytes_per_sequence == 2 * 16 * 128 * 2 * (10 * 32768 + 52 * 1024)


def test_paged_cache_rounds_up_to_whole_blocks():
    assert tokens_held(1000, None, 16) == 1008
    assert tokens_held(1000, 256, 16) == 256  # a chunk: starts on a block edge
    assert tokens_held(1000, 250, 16) == 256
    # a sliding window straddles block edges (trial 333 #3): the last 256 of 1,000 tokens, 744-999, lie in blocks
    # 46-62, 17 blocks, one more than 256 / 16; a sequence shorter than it, its own; in blocks of 1 the window
    assert tokens_held(1000, 256, 16, sliding=True) == 17 * 16
    assert tokens_held(1000, 250, 16, sliding=True) == 17 * 16
    assert tokens_held(100, 256, 16, sliding=True) == 7 * 16
    assert tokens_held(10_000, 4096, 16, sliding=True) == 4096  # tokens 5,904-9,999: blocks 369-624, whole
    assert tokens_held(1000, 128, 1, sliding=True) == 128 == tokens_held(1000, 128)
    assert tokens_held(1024, 128, 64, sliding=True) == 128  # tokens 896-1,023: blocks 14-15, an edge
    footprint = kv_footprint(get_preset("llama-3-8b"), seq_len=1000, block_size=16)
    assert footprint.bytes_per_sequence == 1008 * 131_072


def test_tensor_parallel_shards_and_replicates_kv_heads():
    llama = get_preset("llama-3-70b")  # 8 KV heads
    assert kv_heads_per_rank(llama, 2) == 4
    assert kv_heads_per_rank(llama, 8) == 1
    assert kv_heads_per_rank(llama, 16) == 1  # replicated: 16 ranks hold 8 heads twice
    sharded = kv_footprint(llama, seq_len=1024, batch=2, tp=16)
    assert sharded.bytes_per_token_per_rank == 80 * 2 * 1 * 128 * 2
    assert sharded.total_bytes == 2 * 1024 * sharded.bytes_per_token_per_rank
    assert sharded.total_bytes_all_ranks == 16 * sharded.total_bytes > 2 * sharded.bytes_per_sequence


def test_mla_latent_is_not_sharded():
    v3 = get_preset("deepseek-v3")
    assert kv_footprint(v3, seq_len=10, tp=8).bytes_per_token_per_rank == 70_272
    assert kv_footprint(v3, seq_len=10, tp=8, mla_cache="naive").bytes_per_token_per_rank == 61 * 16 * 320 * 2


def test_tp_that_splits_heads_unevenly_is_bad_input():
    with pytest.raises(BadInputError, match=r"n_kv_heads \(8\) must be divisible by tp \(3\)|n_heads"):
        kv_footprint(get_preset("llama-3-8b"), seq_len=8, tp=3)
    with pytest.raises(BadInputError, match="n_heads"):
        kv_footprint(get_preset("falcon-7b"), seq_len=8, tp=2)  # 71 query heads


def test_fp8_ds_mla_is_refused_on_dense_mla(cli):
    """fp8_ds_mla is vLLM's sparse-MLA cache (FlashMLASparseBackend, for models with DeepSeek-V3.2's indexer); its
    dense MLA backends (FlashMLA, FlashInfer MLA, Triton MLA) list fp8 but not fp8_ds_mla in
    supported_kv_cache_dtypes, so DeepSeek-V3 (dense) is refused in one line where it was priced at 656 B a layer."""
    from mha_cli.core.errors import BadInputError

    with pytest.raises(
        BadInputError, match=r"^kv dtype fp8_ds_mla is the sparse-MLA cache .* deepseek-v3 is dense MLA"
    ):
        bytes_per_token_per_layer(get_preset("deepseek-v3"), "fp8_ds_mla")
    assert bytes_per_token_per_layer(get_preset("deepseek-v3"), "fp8") == 576
    result = cli.run("kv", "tests/fixtures/hf_configs/deepseek-v3.json", "--kv-dtype", "fp8_ds_mla")
    assert result.exit_code == 2 and result.stderr.strip() == (
        "error: kv dtype fp8_ds_mla is the sparse-MLA cache (vLLM's FlashMLASparseBackend, for models with"
        " DeepSeek-V3.2's indexer) and deepseek-v3 is dense MLA, whose vLLM backends take fp8, not fp8_ds_mla: use"
        " --kv-dtype fp8"
    )
    assert cli.run("kv", "deepseek-v3.2-exp", "--kv-dtype", "fp8_ds_mla").exit_code == 0


def test_an_mla_models_mha_row_says_which_head_width_it_prices():
    """DeepSeek-V3's header shows head_dim 192 while its MHA row is 61 x 128 x (128 + 128) x 2 = 3,997,696 B a token,
    DeepSeek-V2's d_h: the row says so (trial 245)."""
    from mha_cli.core.variants import variant_options

    mha = next(option for option in variant_options(get_preset("deepseek-v3")) if option.label == "MHA")
    assert mha.model.attention.head_dim == 128 and "heads of 128: DeepSeek-V2's d_h" in mha.note
    assert "192-wide MLA query head" in mha.note


@pytest.mark.parametrize(
    ("preset", "n_heads", "compared"), [("qwen2.5-7b", 28, "GQA-4"), ("llama-3.1-405b", 128, "GQA-16")]
)
def test_the_gqa_a_shape_is_compared_with_is_the_one_recommend_designs(preset, n_heads, compared):
    """The same shape as MHA is compared with rule MHA020's GQA: GQA-4 at 28 heads (tp 2, 4 and 8 split it), not
    GQA-7, the divisor nearest 8 that no tp of 2, 4 or 8 splits (trial 345 #4); GQA-16 at 128, not GQA-8 (a group of
    16, past MHA020's 8). A model already GQA keeps its own count (the control: 405B's own GQA-8 stays its row)."""
    from mha_cli.core.variants import variant_options

    model = get_preset(preset)
    assert model.attention.n_heads == n_heads
    own = f"GQA-{model.attention.n_kv_heads}"
    assert [o.label for o in variant_options(model) if o.variant == "GQA"] == [own]
    as_mha = model.model_copy(
        update={"attention": model.attention.model_copy(update={"variant": "MHA", "n_kv_heads": n_heads})}
    )
    assert [o.label for o in variant_options(as_mha) if o.variant == "GQA"] == [compared]
