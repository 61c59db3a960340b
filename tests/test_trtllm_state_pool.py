"""TensorRT-LLM's recurrent-state pool on its PyTorch backend (``core.engine.trtllm_state_pool``): one slot per
``max_batch_size`` x pp, each request's conv state in the model's dtype and its SSM state in the checkpoint's
``mamba_ssm_cache_dtype`` (else the model's), held before the free-memory fraction is taken, so the KV pool holds the
attention layers' tokens alone.

Nemotron-3-Nano-30B-A3B (``hf_configs/nvidia-nemotron-3-nano-30b-a3b.json``): 23 Mamba-2 layers of 64 heads of 64,
d_state 128, 8 groups, conv kernel 4, ``mamba_ssm_cache_dtype`` float32. One layer, one slot, tp 1: conv (64 x 64 +
2 x 8 x 128 = 6,144 channels) x 3 x 2 B = 36,864 B; SSM 64 x 64 x 128 x 4 B = 2,097,152 B; 23 layers: 49,082,368 B
(46.8 MiB)."""

from __future__ import annotations

from mha_cli.core.engine.state_slot import slot_parts_per_layer
from mha_cli.core.engine.trtllm_state_pool import priced_here, trtllm_state_pool
from mha_cli.core.sources import load_source

NEMOTRON_CONFIG = "tests/fixtures/hf_configs/nvidia-nemotron-3-nano-30b-a3b.json"
NEMOTRON = load_source(NEMOTRON_CONFIG).model
PER_SLOT = 23 * (36_864 + 2_097_152)


def test_one_slot_by_hand():
    state = NEMOTRON.recurrent
    assert slot_parts_per_layer(state, 1, conv_bytes=2, ssm_bytes=2, pad_groups=False) == (36_864, 1_048_576)
    assert slot_parts_per_layer(state, 2, conv_bytes=2, ssm_bytes=2, pad_groups=False) == (18_432, 524_288)
    # Qwen3-Next: 16 key heads and 32 value heads of 128, kernel 4: conv (32 x 128 + 2 x 16 x 128) x 3 x 2 B
    qwen3_next = load_source("tests/fixtures/hf_configs/qwen3-next-80b-a3b.json").model
    assert slot_parts_per_layer(qwen3_next.recurrent, 1, conv_bytes=2, ssm_bytes=2, pad_groups=False) == (
        8192 * 3 * 2, 32 * 128 * 128 * 2,
    )  # fmt: skip
    pool = trtllm_state_pool(NEMOTRON, tp=1, state_layers=23, slots=2048, dtype_bytes=2)
    assert pool.per_slot == PER_SLOT == 49_082_368 and pool.bytes == 2048 * PER_SLOT
    untyped = trtllm_state_pool(qwen3_next, tp=1, state_layers=1, slots=1, dtype_bytes=2)  # no dtype: the model's
    assert untyped.per_slot == 8192 * 3 * 2 + 32 * 128 * 128 * 2
    assert priced_here(NEMOTRON) and priced_here(qwen3_next)
    kimi = load_source("tests/fixtures/hf_configs/kimi-linear-48b-a3b.json").model
    assert not priced_here(kimi)  # KDA: not read


def test_the_default_batch_leaves_no_kv_pool_and_a_smaller_one_does(cli):
    """On one H100, 2,048 slots take 93.6 GiB beside 58.8 GiB of weights: TensorRT-LLM would not start, though the
    weights fit (before this rule the states were counted per request in the KV pool and 187 requests fit). At
    --max-num-seqs 16 the pool is 0.9 x (total - weights - activation peak - non-torch - 16 slots), and a request
    holds its 6 attention layers' tokens alone (2 KV heads x 128 x 2 x 2 B = 1,024 B a layer)."""
    args = ("kv", NEMOTRON_CONFIG, "--target", "h100", "--seq", "8192", "--engine", "trtllm")
    default = cli.json(*args)
    engine = default["memory"]["engine"]
    assert engine["state_pool_bytes"] == 2048 * PER_SLOT and not engine["starts"] and default["memory"]["weights_fit"]
    ways = " ".join(cli.run(*args).output.split())
    assert "--max-num-seqs 1 (TensorRT-LLM gives its Mamba cache one slot per --max_batch_size" in ways
    capped = cli.json(*args, "--max-num-seqs", "16")["memory"]["engine"]
    assert capped["state_pool_bytes"] == 16 * PER_SLOT == 785_317_888
    left = (capped["total_memory_bytes"] - capped["weights_bytes_per_rank"] - capped["activation_peak_bytes"]
            - capped["non_torch_bytes"] - 16 * PER_SLOT)  # fmt: skip
    assert capped["available_kv_bytes"] == int(left * 0.9)
    assert capped["kv_bytes_per_request"] == 8192 * 6 * 1024  # the state is in its slot
    assert capped["kv_tokens"] == capped["available_kv_bytes"] // (6 * 1024) // 32 * 32
    assert capped["admitted_per_replica"] == 16  # max_batch_size binds


def test_controls_keep_the_state_in_the_pool(cli):
    """TensorRT-LLM's C++ engine (no hybrid served there) and vLLM price no such pool."""
    for engine in ("trtllm@0.21", "vllm"):
        plan = cli.json("kv", NEMOTRON_CONFIG, "--target", "h100", "--seq", "8192", "--engine", engine)
        assert plan["memory"]["engine"]["state_pool_bytes"] == 0


def test_pipeline_stages_multiply_the_slots(cli):
    """``max_num_sequences = max_batch_size * mapping.pp_size``: two stages of 16 requests hold 32 slots each."""
    plan = cli.json("plan", NEMOTRON_CONFIG, "--target", "2xh100", "--engine", "trtllm", "--isl", "4096", "--osl",
                    "512", "--tp", "1", "--pp", "2", "--concurrency", "16", "--max-num-seqs", "16", "--closed-form")  # fmt: skip
    (line,) = [line for line in plan["memory"]["engine"]["budget"] if line["label"].startswith("recurrent-state")]
    assert "max_batch_size x pp = 32 slots" in line["how"]


def test_a_pinned_plan_names_the_batch_that_starts(cli):
    args = ("plan", NEMOTRON_CONFIG, "--target", "h100", "--engine", "trtllm", "--isl", "7168", "--osl", "1024",
            "--tp", "1", "--concurrency", "16", "--closed-form")  # fmt: skip
    refused = cli.run(*args)
    assert refused.exit_code == 2 and "use e.g. --max-num-seqs 16 or" in " ".join(refused.output.split())
    served = cli.json(*args, "--max-num-seqs", "16")
    assert "--max_batch_size 16 " in served["launch"]["trtllm"] and served["memory"]["engine"]["starts"]


def test_a_search_that_starts_nowhere_tries_smaller_batches(cli):
    """With no layout starting at max_batch_size 2,048, the search's ways out try --max-num-seqs 256, 64 and 16 (the
    users asked, where given) and name those it then picks from (trial 283 #4); the refusal names the state pool."""
    args = ("plan", NEMOTRON_CONFIG, "--target", "h100", "--engine", "trtllm", "--isl", "7168", "--osl", "1024")
    refused = cli.run(*args)
    line = " ".join(refused.output.split())
    assert refused.exit_code == 2 and "the Mamba cache's 2,048 slots (max_batch_size x pp, 93.6 GiB)" in line
    assert "ways out: --max-num-seqs 256 (" in line and "or --max-num-seqs 64 (" in line
    assert cli.run(*args, "--max-num-seqs", "256").exit_code == 0
