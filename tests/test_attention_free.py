"""Attention-free families (Mamba, Falcon-Mamba, Mamba-2, xLSTM): read from their published config.json, their fixed state
priced per sequence by hand, their weights equal to transformers' built from the same config, and ``mha verify``
building them (tiny configs written by transformers' own config classes, ``tests/fixtures/tiny_attention_free``).

The state by hand, per layer, one sequence (vLLM's convention: conv_kernel - 1 conv columns, the recurrent state in
the model dtype, here bf16, 2 B a value; transformers': conv_kernel columns, the recurrent state in fp32):
Mamba-1 holds d_inner x d_state recurrent values and a conv over d_inner channels; Mamba-2 heads x head_dim x
d_state and a conv over d_inner + 2 x groups x d_state channels. xLSTM's mLSTM holds, per head, its memory C (qk head
dim x v head dim), normaliser n (qk head dim) and stabiliser m (1), in its inference_state_dtype (no engine serves
it), and no conv.
"""

from __future__ import annotations

import json

import pytest

from mha_cli.core.errors import EXIT_BAD_INPUT, BadInputError
from mha_cli.core.hf_import import import_hf_config
from mha_cli.core.kv import kv_footprint
from mha_cli.core.params import count_params
from tests.conftest import FIXTURES, reference_hf_config

TINY = FIXTURES / "tiny_attention_free"
PUBLISHED = ("mamba-2.8b-hf", "falcon-mamba-7b", "mamba-codestral-7b")

STATE_PER_LAYER_VLLM_BF16 = {
    # (conv_kernel - 1) x conv channels x 2 B + recurrent values x 2 B
    "mamba-2.8b-hf": 3 * 5120 * 2 + 5120 * 16 * 2,  # d_inner 2 x 2560, d_state 16: 194,560
    "falcon-mamba-7b": 3 * 8192 * 2 + 8192 * 16 * 2,  # intermediate_size 8192 (not expand 16 x 4096): 311,296
    "mamba-codestral-7b": 3 * (8192 + 2 * 8 * 128) * 2 + 128 * 64 * 128 * 2,  # 128 heads x 64, 8 groups: 2,158,592
}
LAYERS = {"mamba-2.8b-hf": 64, "falcon-mamba-7b": 64, "mamba-codestral-7b": 64}
TRANSFORMERS_PARAMS = {
    # transformers 5.24's MambaForCausalLM / FalconMambaForCausalLM / Mamba2ForCausalLM from each config, meta device
    "mamba-2.8b-hf": 2_768_345_600,
    "falcon-mamba-7b": 7_272_665_088,
    "mamba-codestral-7b": 7_285_403_648,  # also Mistral's published "7,285,403,648 parameters" (SOURCES.md)
}


def _published(name: str) -> dict:
    return json.loads(reference_hf_config(name).read_text())


@pytest.mark.parametrize("name", PUBLISHED)
def test_published_config_is_read_attention_free_with_no_tokens_cached(name):
    model = import_hf_config(_published(name)).model
    assert model.attention_free and model.n_layers == LAYERS[name]
    kv = kv_footprint(model, seq_len=32_768, batch=3, kv_dtype="bf16", state_convention="engine")
    assert kv.n_token_layers == 0 and kv.bytes_per_token == 0 and kv.bytes_per_token_per_layer == 0
    assert kv.state_bytes_per_layer == STATE_PER_LAYER_VLLM_BF16[name]
    assert kv.state_bytes_per_seq == LAYERS[name] * STATE_PER_LAYER_VLLM_BF16[name]
    assert kv.total_bytes == 3 * LAYERS[name] * STATE_PER_LAYER_VLLM_BF16[name]  # the same at any context


def test_a_stated_state_dtype_is_read():
    """vLLM's ``mamba_ssm_cache_dtype`` float32: the recurrent state at 4 B a value, the conv's still at 2 B."""
    config = _published("mamba-2.8b-hf") | {"mamba_ssm_cache_dtype": "float32"}
    model = import_hf_config(config).model
    kv = kv_footprint(model, seq_len=4096, batch=1, kv_dtype="bf16", state_convention="engine")
    assert kv.state_bytes_per_layer == 3 * 5120 * 2 + 5120 * 16 * 4


@pytest.mark.parametrize("name", PUBLISHED)
def test_parameters_equal_the_transformers_count(name):
    assert count_params(import_hf_config(_published(name)).model).total == TRANSFORMERS_PARAMS[name]


@pytest.mark.parametrize("name", PUBLISHED)
def test_mamba_parameters_equal_transformers(name):
    """The counts above, against transformers' own model built from each published config on the meta device."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = _published(name)
    fields = {k: v for k, v in config.items() if k not in ("architectures", "model_type")}
    with torch.device("meta"):
        theirs = transformers.AutoModelForCausalLM.from_config(
            transformers.AutoConfig.for_model(config["model_type"], **fields)
        )
    assert sum(p.numel() for p in theirs.parameters()) == TRANSFORMERS_PARAMS[name]


def test_mamba_2_8b_is_near_its_published_size():
    """state-spaces/mamba-2.8b: "2.8B" (its name); the count is 2.77B (tied embeddings, no LM head of its own)."""
    total = count_params(import_hf_config(_published("mamba-2.8b-hf")).model).total
    assert abs(total - 2.8e9) / 2.8e9 < 0.02


@pytest.mark.parametrize(
    ("field", "value"),
    [("attn_layer_indices", [3, 7]), ("hybrid_override_pattern", "MM*M"), ("residual_in_fp32", None)],
)
def test_a_field_that_would_change_a_figure_is_still_refused(field, value):
    """The control: attention layers named by a field no Mamba reader reads are refused by name, never priced as an
    attention-free stack; a field left unread at any value (``residual_in_fp32``) is not."""
    config = _published("mamba-2.8b-hf") | {field: value}
    if value is None:
        assert import_hf_config(config).model.attention_free
        return
    with pytest.raises(BadInputError, match=field):
        import_hf_config(config)


def test_a_mamba2_head_count_is_not_read_as_attention_heads():
    """Mamba-2's ``num_heads`` (128) and ``head_dim`` (64) size the state, never an attention cache."""
    model = import_hf_config(_published("mamba-codestral-7b")).model
    assert model.recurrent is not None and (model.recurrent.n_heads, model.recurrent.head_dim) == (128, 64)
    assert model.attention.n_heads == 1 and model.mlp_kind(0) == "none"


def test_kv_json_and_table_say_there_is_no_per_token_cache(cli):
    config = str(reference_hf_config("mamba-codestral-7b"))
    report = cli.json("kv", config, "--seq", "32k", "--target", "h100")
    assert report["bytes_per_token"] == 0 and report["variants"] == []
    assert report["state_bytes_per_seq"] == 64 * STATE_PER_LAYER_VLLM_BF16["mamba-codestral-7b"]
    engine = report["engine"]
    assert engine["max_concurrency"] == pytest.approx(engine["available_kv_bytes"] / report["state_bytes_per_seq"])
    text = cli.run("kv", config, "--seq", "32k", "--target", "h100").output
    assert "attention-free" in text and "no layer caches tokens" in text
    assert "0 B/token" not in text and "Same shape, other projections" not in text
    assert "per token, per layer" not in text  # the attention rows are gone, not printed as 0


def test_check_judges_no_attention_geometry(cli):
    report = cli.json("check", str(reference_hf_config("mamba-2.8b-hf")))
    assert report["passed"] and report["rules_fired"] == []  # MHA061 (head_dim 2560) would fire on the placeholder


# verify: the tiny models, built ----------------------------------------------------------------------------------

TINY_STATE_TRANSFORMERS = {
    # conv_kernel (4) x conv channels x 2 B (bf16) + recurrent values x 4 B (fp32), per layer; 3 layers
    "tiny-mamba": 4 * 64 * 2 + 64 * 8 * 4,  # hidden 32, expand 2: d_inner 64, d_state 8
    "tiny-falcon-mamba": 4 * 64 * 2 + 64 * 8 * 4,
    "tiny-mamba2": 4 * (64 + 2 * 2 * 8) * 2 + 8 * 8 * 8 * 4,  # 8 heads x 8, 2 groups, d_state 8
}


@pytest.mark.parametrize("name", sorted(TINY_STATE_TRANSFORMERS))
def test_verify_measures_the_state_core_predicts(cli, name):
    pytest.importorskip("torch")
    report = cli.json("verify", str(TINY / f"{name}.json"), "--device", "cpu", "--seq", "16", "--layers", "3")
    assert report["measured_state_bytes"] == report["predicted_state_bytes"] == 3 * TINY_STATE_TRANSFORMERS[name]
    assert report["measured_cache_bytes"] == report["measured_state_bytes"]  # nothing else is cached
    assert report["measured_weight_bytes"] == report["predicted_weight_bytes"]
    assert all(report["checks"].values()) and report["passed"]
    # trial 374 #1, #2: layer 0's row is its mixer's weights, not a norm's; no heads, no per-token bytes
    assert report["predicted_weight_bytes_per_layer"] == report["weight_bytes_per_layer"] > 1024
    assert report["variant"] == "attention-free" and report["predicted_bytes_per_token_per_layer"] == 0


@pytest.mark.parametrize("name", ["tiny-mamba", "tiny-falcon-mamba", "tiny-mamba2"])
def test_the_built_model_gives_transformers_logits(name):
    """Our decoder from the tiny config, transformers' weights loaded by name (strictly): the same logits in a
    prefill and in prefill + cached decode steps."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from mha_cli.nn import build_model
    from mha_cli.nn.hf_state_dict import load_transformers_state_dict

    config = json.loads((TINY / f"{name}.json").read_text())
    fields = {k: v for k, v in config.items() if k != "model_type"}
    hf_config = transformers.AutoConfig.for_model(config["model_type"], **fields)
    torch.manual_seed(0)
    theirs = transformers.AutoModelForCausalLM.from_config(hf_config).eval()
    with torch.no_grad():
        for param_name, param in theirs.named_parameters():
            if param_name.endswith("norm.weight") or param_name.endswith("norm_f.weight"):
                param.add_(0.2 * torch.randn_like(param))
    ours = build_model(import_hf_config(config).model).eval()
    load_transformers_state_dict(ours, theirs.state_dict())
    ids = torch.randint(0, hf_config.vocab_size, (2, 9), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = theirs(input_ids=ids).logits  # (b, s, v)
        assert (ours(ids) - expected).abs().max() < 1e-4
        caches = ours.new_cache(batch=2, max_seq=9)
        steps = [ours(ids[:, :5], caches)] + [ours(ids[:, p : p + 1], caches, start_pos=p) for p in range(5, 9)]
    assert (torch.cat(steps, dim=1) - expected).abs().max() < 1e-4


def test_verify_refuses_a_stack_mixing_mlp_free_and_mlp_layers(cli):
    """The relaxed refusal still holds where layer sizes by kind would conflate the two (Nemotron-H)."""
    result = cli.run("verify", str(FIXTURES / "tiny_hybrids" / "tiny-nemotron-h.json"), "--device", "cpu")
    assert result.exit_code == EXIT_BAD_INPUT and len(result.output.strip().splitlines()) == 1, result.output


# xLSTM: priced, not built ---------------------------------------------------------------------------------------

XLSTM_7B_STATE_PER_LAYER = 8 * (256 * 512 + 256 + 1) * 4  # 8 heads; qk 2048 / 8, v 4096 / 8; fp32: 4,202,528 B


def test_xlstm_7b_state_by_hand_and_its_weights_equal_transformers():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = _published("xlstm-7b")
    model = import_hf_config(config).model
    assert model.attention_free and model.n_layers == 32 and model.block.d_ff == 10_944  # 2.667 x 4096 up to 64s
    for convention in ("engine", "transformers"):  # its inference_state_dtype, float32, either way
        kv = kv_footprint(model, seq_len=100_000, batch=2, kv_dtype="bf16", state_convention=convention)
        assert kv.bytes_per_token == 0 and kv.state_bytes_per_layer == XLSTM_7B_STATE_PER_LAYER
        assert kv.total_bytes == 2 * 32 * XLSTM_7B_STATE_PER_LAYER
    kernels = ("chunkwise_kernel",)  # the triton kernel the 7B names: transformers 5.24 accepts its native ones only
    fields = {k: v for k, v in config.items() if k not in ("architectures", "model_type", *kernels)}
    with torch.device("meta"):
        theirs = transformers.xLSTMForCausalLM(transformers.xLSTMConfig(**fields))
    assert count_params(model).total == sum(p.numel() for p in theirs.parameters()) == 6_865_424_896


def test_xlstm_state_equals_the_cache_transformers_allocates():
    """A tiny xLSTM run by transformers in bf16: the bytes of its xLSTMCache (C, n and m of every block) are the
    price, for the batch. Its native fallback keeps them in the activations' dtype, so the config says bfloat16;
    at float32 (the default, xLSTM's kernels) the price doubles."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = transformers.xLSTMConfig(
        hidden_size=128,
        embedding_dim=128,
        num_heads=2,
        num_hidden_layers=2,
        num_blocks=2,
        vocab_size=100,
        inference_state_dtype="bfloat16",
    )
    torch.manual_seed(0)
    theirs = transformers.xLSTMForCausalLM(config).eval().to(torch.bfloat16)
    with torch.no_grad():
        cache = theirs(input_ids=torch.randint(0, 100, (3, 5)), use_cache=True).cache
    allocated = sum(t.numel() * t.element_size() for state in cache.rnn_state.values() for t in state)
    model = import_hf_config(config.to_dict()).model
    kv = kv_footprint(model, seq_len=5, batch=3, kv_dtype="bf16", state_convention="transformers")
    assert kv.total_bytes == allocated == 3 * 2 * (2 * (32 * 64 + 32 + 1)) * 2
    fp32 = import_hf_config(config.to_dict() | {"inference_state_dtype": "float32"}).model
    assert kv_footprint(fp32, seq_len=5, batch=3, kv_dtype="bf16").total_bytes == 2 * allocated


def test_verify_refuses_the_unbuilt_mlstm_in_one_line(cli):
    result = cli.run("verify", str(reference_hf_config("xlstm-7b")), "--device", "cpu")
    assert result.exit_code == EXIT_BAD_INPUT and "linear (mlstm)" in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1


# RWKV-4 (transformers' rwkv): priced, not built ------------------------------------------------------------------


def _tiny_rwkv(**overrides):
    transformers = pytest.importorskip("transformers")
    fields = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2, vocab_size=100, context_length=32)
    return transformers.RwkvConfig(**(fields | overrides))


def test_rwkv_weights_and_state_equal_transformers():
    """Per layer and sequence: numerator, denominator and maximum in fp32 (3 x 64 x 4 B) and the two token shifts
    in bf16 (2 x 64 x 2 B): 1,024 B, as transformers' RwkvModel returns its state."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = _tiny_rwkv()
    torch.manual_seed(0)
    theirs = transformers.RwkvForCausalLM(config).eval().to(torch.bfloat16)
    with torch.no_grad():
        state = theirs(input_ids=torch.randint(0, 100, (3, 5)), use_cache=True).state
    allocated = sum(t.numel() * t.element_size() for t in state)
    model = import_hf_config(config.to_dict()).model
    assert model.attention_free and count_params(model).total == sum(p.numel() for p in theirs.parameters())
    kv = kv_footprint(model, seq_len=5, batch=3, kv_dtype="bf16", state_convention="transformers")
    assert kv.state_bytes_per_layer == 3 * 64 * 4 + 2 * 64 * 2
    assert kv.total_bytes == allocated == 3 * 2 * kv.state_bytes_per_layer


def test_rwkv_with_a_narrower_time_mix_is_refused():
    """transformers sizes the state by hidden_size and cannot run it: refused in one line, not priced."""
    with pytest.raises(BadInputError, match="attention_hidden_size 48 differs from hidden_size 64"):
        import_hf_config(_tiny_rwkv(attention_hidden_size=48).to_dict())


def test_verify_refuses_the_unbuilt_rwkv_in_one_line(cli, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(_tiny_rwkv().to_json_string())
    result = cli.run("verify", str(path), "--device", "cpu")
    assert result.exit_code == EXIT_BAD_INPUT and "linear (rwkv)" in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.parametrize("version", [5, 6, 7])
def test_newer_rwkv_is_refused_saying_why(version):
    """RWKV-5/6/7 carry ``num_attention_heads`` (RWKV-6) or none: never priced as a Llama-style decoder."""
    config = {"model_type": f"rwkv{version}", "hidden_size": 2048, "num_hidden_layers": 24, "vocab_size": 65536}
    with pytest.raises(BadInputError, match=f"RWKV-{version} runs only as remote code"):
        import_hf_config(config | {"num_attention_heads": 32, "head_size": 64})


def test_the_rwkv7_refusal_says_why_and_what_is_priced_instead(cli, tmp_path):
    """One line, exit 2: no engine serves it (vLLM's registry has no RWKV), and RWKV-4 is what mha prices."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "rwkv7", "architectures": ["RWKV7ForCausalLM"], "hidden_size": 2048,
                                "num_hidden_layers": 24, "head_dim": 64, "vocab_size": 65536}))  # fmt: skip
    result = cli.run("kv", str(path))
    assert result.exit_code == EXIT_BAD_INPUT and len(result.output.strip().splitlines()) == 1, result.output
    line = " ".join(result.output.split())
    assert "'rwkv7'" in line and "vLLM's model registry" in line and "RWKV-4, model_type rwkv" in line


def test_tensor_parallelism_is_refused_naming_the_mixers_not_the_placeholder_heads(cli):
    result = cli.run("kv", str(reference_hf_config("mamba-codestral-7b")), "--tp", "4")
    assert result.exit_code == EXIT_BAD_INPUT and "attention-free model's mixers" in result.output, result.output
    assert "n_heads" not in result.output and len(result.output.strip().splitlines()) == 1


def test_a_simulated_plan_admits_requests_by_state(cli):
    """The serving loop's pool is states (vLLM's one block of max_model_len a request), not 0 KV tokens."""
    config = str(reference_hf_config("mamba-2.8b-hf"))
    result = cli.run("plan", config, "--target", "h100", "--tp", "1", "--concurrency", "8", "--num-prompts", "16")
    assert result.exit_code == 0, result.output
    assert "no KV tokens (fixed states only, whatever a request's length)" in " ".join(result.output.split())
    assert "0 KV tokens" not in result.output


def test_a_mixer_no_engine_serves_gets_no_launch_line(cli):
    """xLSTM is priced, but vLLM, SGLang and TensorRT-LLM have no such model: the search names no line to paste (a
    Mamba model, which vLLM serves, keeps its lines)."""
    args = ("--target", "2xh100", "--closed-form", "--isl", "1024", "--osl", "128", "--concurrency", "4")
    xlstm = cli.json("plan", "tests/fixtures/hf_configs/xlstm-7b.json", *args)
    assert xlstm["chosen"] is not None and xlstm["launch"] == {} and "no launch line" in xlstm["launch_note"]
    mamba = cli.json("plan", "tests/fixtures/hf_configs/mamba-2.8b-hf.json", *args)
    assert mamba["launch"]["vllm"].startswith("vllm serve ")
