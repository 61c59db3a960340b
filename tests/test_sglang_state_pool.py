"""SGLang's pools for a hybrid Gated DeltaNet model (``core.engine.sglang_state_pool``, read in the 0.5.2-0.5.23
wheels): one request's state by hand, the state slots and the KV pool they leave at one release, the running-request
cap on each side of the releases that changed it, and the memory plan that carries them.

Qwen3.6-27B (``hf_configs/qwen3.6-27b.json``): 48 Gated DeltaNet layers, 16 key heads and 48 value heads of 128,
conv kernel 4, ``mamba_ssm_dtype`` float32. One layer, one request, tp 1: conv (2 x 16 x 128 + 48 x 128 = 10,240
channels) x 3 columns x 2 B = 61,440 B; recurrent 48 x 128 x 128 x 4 B = 3,145,728 B; the whole model 48 x
3,207,168 = 153,944,064 B (146.8 MiB)."""

from __future__ import annotations

import pytest

from mha_cli.core.engine.non_torch import NON_TORCH_ONE_RANK
from mha_cli.core.engine.plan import plan_engine
from mha_cli.core.engine.settings import resolve_settings
from mha_cli.core.engine.sglang_state_pool import priced_here, state_parts_per_layer, state_pool
from mha_cli.core.errors import BadInputError
from mha_cli.core.kv import kv_footprint
from mha_cli.core.schemas import DeploymentSpec
from mha_cli.core.sources import load_source
from mha_cli.core.targets import load_targets

QWEN36 = load_source("tests/fixtures/hf_configs/qwen3.6-27b.json").model
QWEN3_NEXT = load_source("tests/fixtures/hf_configs/qwen3-next-80b-a3b.json").model
PER_REQUEST = 153_944_064
REST = 100 * 2**30  # what the fraction leaves after the weights, for the pool-level checks


def test_one_requests_state_by_hand():
    assert state_parts_per_layer(QWEN36, 1) == (61_440, 3_145_728)
    assert state_parts_per_layer(QWEN36, 2) == (30_720, 1_572_864)  # channels and value heads split over tp
    # Qwen3-Next (16 key heads, 32 value heads, no mamba_ssm_dtype: float32) at tp 32: the 16 key-head groups are
    # padded to 32 (extra_groups_for_head_shards), 32 x 128 + 2 x 32 x 128 = 12,288 channels / 32 = 384
    assert state_parts_per_layer(QWEN3_NEXT, 32) == (384 * 3 * 2, 1 * 128 * 128 * 4)
    assert state_pool(QWEN36, REST, tp=1, state_layers=48, release="0.5.15").per_request == PER_REQUEST


def test_the_state_takes_nine_nineteenths_of_what_is_left():
    """0.5.15: share = 100 GiB x 0.9 / 1.9 = 50,861,454,821 B; 330 slots of 153,944,064 B; KV pool the rest."""
    pool = state_pool(QWEN36, REST, tp=1, state_layers=48, release="0.5.15")
    assert pool.slots == 330 and pool.state_bytes == 330 * PER_REQUEST == 50_801_541_120
    assert pool.kv_bytes == REST - 50_801_541_120 == 56_572_641_280
    assert (pool.slots_per_request, pool.running_cap) == (5, 66)  # extra_buffer with the overlap scheduler: 3 + 2


@pytest.mark.parametrize(
    ("release", "slots", "state_slots", "per_request", "cap"),
    [
        ("0.5.3", 512, 512, 1, 512),  # is_hybrid_gdn: radix cache off, 512 slots whatever the memory
        ("0.5.3.post1", 512, 512, 1, 512),  # every mambaish_config: radix cache off
        ("0.5.3.post2", 330, 330, 3, 110),  # mamba2_config alone off: the ratio split, 3 slots a request
        ("0.5.4", 330, 330, 3, 110),
        ("0.5.7", 330, 330, 5, 66),  # 0.5.7's condition gives every strategy the 2 ping-pong slots
        ("0.5.8", 330, 330, 3, 110),
        ("0.5.13", 330, 330, 3, 110),
        ("0.5.14", 330, 330, 5, 66),  # auto -> extra_buffer: 5
        ("0.5.16", 330, 330, 5, 66),
        ("0.5.17", 329, 330, 5, 65),  # the padding slot paid from the share
        ("0.5.23", 329, 330, 5, 65),
        (None, 329, 330, 5, 65),  # no release: the newest read
    ],
)
def test_each_release_before_and_after_its_change(release, slots, state_slots, per_request, cap):
    pool = state_pool(QWEN36, REST, tp=1, state_layers=48, release=release)
    assert (pool.slots, pool.state_bytes, pool.slots_per_request, pool.running_cap) == (
        slots, state_slots * PER_REQUEST, per_request, cap,
    )  # fmt: skip


def test_too_little_memory_for_one_slot_is_refused():
    pool = state_pool(QWEN36, 2 * PER_REQUEST, tp=1, state_layers=48, release="0.5.15")
    assert pool.slots == 0 and pool.refusal().startswith("RuntimeError: Not enough GPU memory for hybrid")
    pool = state_pool(QWEN36, 9 * PER_REQUEST, tp=1, state_layers=48, release="0.5.15")  # 4 slots, 5 a request
    assert pool.slots == 4 and "too small to serve any requests" in pool.refusal()
    assert state_pool(QWEN36, REST, tp=1, state_layers=48, release="0.5.15").refusal() is None


def _plan(model, release: str | None, weights: int, *, engine_generation: str | None = None):
    h200 = load_targets()["h200"]
    kv = kv_footprint(model, seq_len=9216, kv_dtype="bf16")
    deployment = DeploymentSpec(engine="sglang", engine_version=release, gpu_memory_utilization=0.8,
                                engine_generation=engine_generation)  # fmt: skip
    settings = resolve_settings(deployment, h200, 1)
    return h200, plan_engine(model, kv, h200, settings, weights_bytes_per_rank=weights, sequences_per_replica=1024)


def test_the_plan_prices_the_state_pool_and_caps_the_running_requests():
    """Qwen3.6-27B on an H200 at mem_fraction_static 0.8, 50 GiB of weights, 9,216-token requests, SGLang 0.5.16:
    rest = (139.80 GiB - 256 MiB) x 0.8 - 50 GiB - 64 MiB of RoPE tables (262,144 x 64 x 4 B); 203 slots
    (9/19 of rest over 153,944,064 B); 203 // 5 = 40 requests, under the KV pool's 57.7 (16 attention layers x 4 KV
    heads x 256 x 2 x 2 B = 65,536 B a token; 532,038 tokens)."""
    h200, plan = _plan(QWEN36, "0.5.16", 50 * 2**30)
    rest = int((h200.device_memory_bytes - NON_TORCH_ONE_RANK) * 0.8) - 50 * 2**30 - 262_144 * 64 * 4
    slots = int(rest * 0.9 / 1.9 // PER_REQUEST)
    assert slots == 203
    state_line = next(line for line in plan.budget if line.label == "recurrent-state pool (Mamba cache)")
    assert state_line.bytes == -slots * PER_REQUEST
    assert plan.available_kv_bytes == rest - slots * PER_REQUEST == sum(line.bytes for line in plan.budget[:-1])
    assert plan.kv_tokens == plan.available_kv_bytes // 65_536 == 532_038
    assert plan.kv_bytes_per_request == 9216 * 65_536  # the state is not in the KV pool
    assert plan.kv_tokens / 9216 > 40 and plan.max_concurrency == 40 and plan.admitted_per_replica == 40
    assert plan.log_lines[0].startswith("Mamba Cache is allocated. max_mamba_cache_size: 203, conv_state size: 0.56GB")
    assert plan.log_lines[1].startswith("KV Cache is allocated.")
    # 0.5.13 (no_buffer: 3 slots a request): 67 by the state, so the KV pool's 57.7 bind
    _, older = _plan(QWEN36, "0.5.13", 50 * 2**30)
    assert older.available_kv_bytes == plan.available_kv_bytes and older.max_concurrency == plan.kv_tokens / 9216


def test_controls_keep_the_shared_pool():
    """A model of no state layers, and sglang-0.4 (no hybrid GDN model), price no state pool; before this rule the
    state was counted per request inside the KV pool, which admitted about twice as many here."""
    _, plan = _plan(QWEN36, None, 50 * 2**30, engine_generation="sglang-0.4")
    assert not any(line.label.startswith("recurrent-state") for line in plan.budget)
    assert plan.kv_bytes_per_request == 9216 * 65_536 + 48 * 3_207_168  # the old, shared pricing
    assert plan.max_concurrency > 2 * 40
    assert priced_here(QWEN36) and priced_here(QWEN3_NEXT)
    minimax = load_source("tests/fixtures/hf_configs/minimax-text-01.json").model
    assert not priced_here(minimax)  # lightning attention: its strategy is set per architecture, not read here


def test_sglangs_running_requests_are_the_state_pools_cap_too():
    """SGLang's max_running_requests is its request pool's rows, and the last step of max_num_reqs is min(...,
    max_mamba_cache_size // mamba ratio) (``_resolve_max_num_reqs``, model_runner_kv_cache_mixin.py 0.5.10-0.5.15;
    ``kv_cache_configurator.py`` 0.5.16 on): 203 slots // 5 = 40, not the default's 2,048 (min(532,038 // 2,
    clamp(int(532,038 / 9,216 x 512), 2048, 4096))). The launch lines and the simulated loop take this cap."""
    _, plan = _plan(QWEN36, "0.5.16", 50 * 2**30)
    assert plan.max_num_seqs == 40
    assert any("the state pool's 40 below it" in note for note in plan.notes)
    _, older = _plan(QWEN36, "0.5.13", 50 * 2**30)  # 67 by the state: the KV pool's 57 bind, the cap is 67
    assert older.max_num_seqs == 67


def test_the_plans_simulated_loop_and_launch_line_stay_within_the_state_pools_cap(cli):
    """Qwen3.6-27B on one H200 under SGLang at 64 users: the state pool admits 43 (215 slots // 5), so the simulated
    loop runs at most 43 and the launch line writes --max-running-requests 43."""
    config = "tests/fixtures/hf_configs/qwen3.6-27b.json"
    out = cli.json("plan", config, "--target", "h200", "--engine", "sglang", "--tp", "1", "--concurrency", "64")
    assert out["memory"]["engine"]["max_num_seqs"] == out["running_per_replica"] == 43
    assert out["simulated"]["max_running"] <= 43
    search = cli.run("plan", config, "--target", "h200", "--engine", "sglang", "--concurrency", "64")
    assert search.exit_code == 0, search.output
    assert "--max-running-requests 43 " in " ".join(search.stdout.split())


def test_speculative_decoding_over_the_state_pool_is_refused_in_one_line(cli):
    """SGLang's handle_max_mamba_cache also sets aside the drafts' intermediate states (about one request's state x
    running requests x (k + 1): ~25 GiB for Qwen3.6-27B's MTP on an H200), which mha does not price: one line, exit 2,
    naming the way to plan it; the control without speculative decoding plans."""
    args = ("plan", "tests/fixtures/hf_configs/qwen3.6-27b.json", "--target", "h200", "--engine", "sglang", "--tp", "1",
            "--concurrency", "16", "--closed-form")  # fmt: skip
    refused = cli.run(*args, "--speculative-config", '{"method":"mtp","num_speculative_tokens":3}')
    assert refused.exit_code == 2 and "Traceback" not in refused.output
    line = " ".join(refused.output.split())
    assert "state pool for a hybrid Gated DeltaNet model under speculative decoding is not priced" in line
    assert "--engine vllm" in line
    assert cli.run(*args).exit_code == 0


# Mamba-2 hybrids. Nemotron-3-Nano-30B-A3B (``hf_configs/nvidia-nemotron-3-nano-30b-a3b.json``): 23 Mamba-2 layers of
# 64 heads of 64, d_state 128, 8 groups, conv kernel 4, ``mamba_ssm_cache_dtype`` float32. One layer, one request,
# tp 1: conv (64 x 64 + 2 x 8 x 128 = 6,144 channels) x 3 x 2 B = 36,864 B; recurrent 64 x 64 x 128 x 4 B =
# 2,097,152 B; 23 layers: 49,082,368 B (46.8 MiB).
NEMOTRON = load_source("tests/fixtures/hf_configs/nvidia-nemotron-3-nano-30b-a3b.json").model
NEMOTRON_PER_REQUEST = 23 * (36_864 + 2_097_152)


def test_one_mamba2_requests_state_by_hand():
    assert state_parts_per_layer(NEMOTRON, 1) == (36_864, 2_097_152)
    # tp 16: the 8 groups are padded to 16 (extra_groups_for_head_shards): (4,096 + 2 x 16 x 128) / 16 = 512 channels
    assert state_parts_per_layer(NEMOTRON, 16) == (512 * 3 * 2, 4 * 64 * 128 * 4)
    # Falcon-H1-7B: 24 heads of 128, d_state 256, one group, no ssm dtype in its config (float32)
    falcon = load_source("tests/fixtures/hf_configs/falcon-h1-7b.json").model
    assert state_parts_per_layer(falcon, 1) == ((3072 + 2 * 256) * 3 * 2, 24 * 128 * 256 * 4)
    assert state_parts_per_layer(falcon, 2) == ((3072 + 2 * 2 * 256) // 2 * 3 * 2, 12 * 128 * 256 * 4)
    granite = load_source("tests/fixtures/hf_configs/granite-4.0-h-small.json").model
    assert state_parts_per_layer(granite, 1) == ((8192 + 2 * 128) * 3 * 2, 128 * 64 * 128 * 4)
    assert priced_here(NEMOTRON) and priced_here(falcon) and priced_here(granite)
    assert state_pool(NEMOTRON, REST, tp=1, state_layers=23, release=None).per_request == NEMOTRON_PER_REQUEST


@pytest.mark.parametrize(
    ("release", "radix_cache", "requested", "slots", "state_slots", "per_request", "cap"),
    [
        # 0.5.3.post1-0.5.6: mamba2_config turns the radix cache off; 512 slots, or --max-running-requests
        ("0.5.6", True, None, 512, 512, 1, 512),
        ("0.5.6", True, 64, 64, 64, 1, 64),
        # 0.5.6.post1: MambaRadixCache (no_buffer) for Nemotron-H: 100 GiB x 0.9 / 1.9 // 49,082,368 = 1,036 slots
        ("0.5.6.post1", True, None, 1036, 1036, 3, 345),
        ("0.5.7", True, None, 1036, 1036, 5, 207),  # the 2 ping-pong slots for every strategy in 0.5.7 alone
        ("0.5.8", True, None, 1036, 1036, 3, 345),
        ("0.5.13", True, 64, 1036, 1036, 3, 345),  # the radix cache on: a given cap does not size the pool
        ("0.5.14", True, None, 1036, 1036, 5, 207),  # extra_buffer: Nemotron-H in _support_mamba_cache_extra_buffer
        ("0.5.17", True, None, 1035, 1036, 5, 207),  # the padding slot from the share
        ("0.5.23", True, None, 1035, 1036, 5, 207),
        # --disable-radix-cache: one slot a request; 512 before 0.5.9, the ratio split after, the cap where given
        ("0.5.8", False, None, 512, 512, 1, 512),
        ("0.5.9", False, None, 1036, 1036, 1, 1036),
        ("0.5.23", False, None, 1035, 1036, 1, 1035),
        ("0.5.23", False, 64, 64, 65, 1, 64),
    ],
)
def test_each_release_of_a_mamba2_hybrid(release, radix_cache, requested, slots, state_slots, per_request, cap):
    pool = state_pool(
        NEMOTRON, REST, tp=1, state_layers=23, release=release, requested=requested, radix_cache=radix_cache
    )
    assert (pool.slots, pool.state_bytes, pool.slots_per_request, pool.running_cap) == (
        slots, state_slots * NEMOTRON_PER_REQUEST, per_request, cap,
    )  # fmt: skip
    assert pool.kv_bytes == REST - state_slots * NEMOTRON_PER_REQUEST


def test_dp_attention_splits_a_radix_off_pool_where_sglang_does():
    """With the radix cache off, SGLang divides the server's slots (512, or --max-running-requests) over its
    DP-attention ranks: a Gated DeltaNet model's always, a Mamba-2 model's from 0.5.7 only; before, each Mamba-2 rank
    takes the whole figure, which is refused."""
    assert state_pool(QWEN36, REST, tp=1, state_layers=48, release="0.5.3", dp_ranks=4).slots == 128
    assert state_pool(QWEN36, REST, tp=1, state_layers=48, release="0.5.3", dp_ranks=4, requested=16).slots == 16
    off = state_pool(NEMOTRON, REST, tp=1, state_layers=23, release="0.5.8", radix_cache=False, dp_ranks=4)
    assert (off.slots, off.slots_per_request) == (128, 1)
    with pytest.raises(BadInputError, match=r"plan it without --dp, or with --engine sglang@0\.5\.7 or later"):
        state_pool(NEMOTRON, REST, tp=1, state_layers=23, release="0.5.6", dp_ranks=4)
    kept = state_pool(NEMOTRON, REST, tp=1, state_layers=23, release="0.5.10", dp_ranks=4)  # the split: per rank
    assert kept.slots == 1036


def test_nemotron_on_one_h100_by_release(cli):
    """Nemotron-3-Nano (58.8 GiB of bf16 weights) on one H100 at 8,192 tokens: SGLang 0.5.6's fraction (0.834) leaves
    7,534,949,087 B (the control: before the rule, all of it was the KV pool and 74 requests fit, the state counted
    per request). Its 512 slots take 23.4 GiB, so SGLang would not start, though the weights fit; --max-num-seqs 64
    gives 64 slots and it starts. 0.5.23 (fraction 0.829) leaves 7,111,143,189 B and splits: 9/19 of it is 67 slots
    + 1 padding slot (3,337,601,024 B), 67 // 5 = 13 requests at once. (Before trial 371 #2 a RoPE table was charged,
    which SGLang's nemotron_h.py never builds: 262,144 x 128 x 4 B = 134,217,728 B less, 66 + 1 slots.)"""
    args = ("kv", "tests/fixtures/hf_configs/nvidia-nemotron-3-nano-30b-a3b.json", "--target", "h100", "--seq", "8192")
    old = cli.json(*args, "--engine", "sglang@0.5.6")
    assert old["memory"]["weights_fit"] and not old["memory"]["engine"]["starts"]
    assert old["memory"]["engine"]["state_pool_bytes"] == 512 * NEMOTRON_PER_REQUEST
    capped = cli.json(*args, "--engine", "sglang@0.5.6", "--max-num-seqs", "64")
    assert (
        capped["memory"]["engine"]["starts"]
        and capped["memory"]["engine"]["state_pool_bytes"] == 64 * NEMOTRON_PER_REQUEST
    )
    new = cli.json(*args, "--engine", "sglang@0.5.23")["memory"]["engine"]
    rest = new["available_kv_bytes"] + new["state_pool_bytes"]
    assert rest == 7_111_143_189 and new["state_pool_bytes"] == 68 * NEMOTRON_PER_REQUEST == 3_337_601_024
    assert new["admitted_per_replica"] == 13 and new["max_num_seqs"] == 13
    assert old["memory"]["engine"]["available_kv_bytes"] == 0  # 7,534,949,087 - 512 x 49,082,368 < 0
    assert new["kv_tokens"] == new["available_kv_bytes"] // 6144  # 6 attention layers x 2 KV heads x 128 x 2 x 2 B
    assert new["ideal_max_concurrency"] == new["available_kv_bytes"] / (8192 * 6144)  # the states are apart (trial 283)
    ways = cli.run(*args, "--engine", "sglang@0.5.6")
    assert "--max-num-seqs 1 (with its radix cache off, SGLang gives its Mamba cache one slot" in " ".join(
        ways.output.split()
    )
    table = cli.run(*args, "--engine", "sglang@0.5.23").output  # the batch's row says its states are in the pool
    assert "state pool above" in table and "the states apart" in table
    checked = cli.json("check", *args[1:], "--engine", "sglang@0.5.6")
    (finding,) = [f["message"] for f in checked["findings"] if f["id"] == "MHA026"]
    assert "0 sequences of 8,192 tokens fit (the engine's recurrent-state pool takes 23.4 GiB first)" in finding


def test_a_plan_pinned_where_the_state_pool_does_not_fit_names_the_running_cap(cli):
    """SGLang 0.5.6 sizes Nemotron-H's state pool at --max-running-requests (512 unless given): at 8 users on one H100
    the plan says so, the way out is checked, and the line it then writes asks for those 8 slots."""
    args = ("plan", "tests/fixtures/hf_configs/nvidia-nemotron-3-nano-30b-a3b.json", "--target", "h100", "--engine",
            "sglang@0.5.6", "--tp", "1", "--isl", "7168", "--osl", "1024", "--concurrency", "8", "--closed-form")  # fmt: skip
    refused = cli.run(*args)
    assert refused.exit_code == 2 and "Traceback" not in refused.output
    assert "use e.g. --max-num-seqs 8 or" in " ".join(refused.output.split())
    served = cli.run(*args, "--max-num-seqs", "8")
    assert served.exit_code == 0, served.output
    assert "--max-running-requests 8 " in " ".join(served.stdout.split())
    # --disable-radix-cache from 0.5.9: the split with one slot a request; the line writes the slots as its cap
    split = cli.json(*args[:5], "sglang@0.5.9", *args[6:], "--no-enable-prefix-caching")
    # 7,534,949,087 x 0.9 / 1.9 // 49,082,368 (71 with the RoPE table SGLang never built: trial 371 #2)
    assert split["memory"]["engine"]["max_num_seqs"] == 72


# KDA. Kimi-Linear-48B-A3B (``hf_configs/kimi-linear-48b-a3b.json``): 20 KDA layers of 32 heads of 128, kernel 4; one
# layer, one request, tp 2: three convolutions over 32 x 128 channels each, / 2 x 3 x 2 B = 36,864 B; recurrent 16 x
# 128 x 128 x 4 B (``KimiLinearCacheParams``: fp32) = 1,048,576 B; 20 layers: 21,708,800 B.
KIMI = load_source("tests/fixtures/hf_configs/kimi-linear-48b-a3b.json").model
KIMI_PER_REQUEST = 20 * (36_864 + 1_048_576)


@pytest.mark.parametrize(
    ("release", "slots", "state_slots", "per_request", "cap"),
    [
        ("0.5.8", 512, 512, 1, 512),  # "Disabling Radix Cache for KimiLinearForCausalLM": 512 slots
        ("0.5.10", 2342, 2342, 1, 2342),  # radix off, from 0.5.9 the ratio split: one slot a request
        ("0.5.14", 2342, 2342, 3, 780),  # the radix cache kept, no_buffer (not in the extra-buffer list)
        ("0.5.16", 2342, 2342, 5, 468),  # in _MAMBA_EXTRA_BUFFER_ARCHS from 0.5.16
        ("0.5.23", 2341, 2342, 5, 468),
    ],
)
def test_each_release_of_a_kda_hybrid(release, slots, state_slots, per_request, cap):
    """100 GiB x 0.9 / 1.9 // 21,708,800 = 2,342 slots."""
    assert state_parts_per_layer(KIMI, 2) == (36_864, 1_048_576) and priced_here(KIMI)
    pool = state_pool(KIMI, REST, tp=2, state_layers=20, release=release)
    assert (pool.slots, pool.state_bytes, pool.slots_per_request, pool.running_cap) == (
        slots, state_slots * KIMI_PER_REQUEST, per_request, cap,
    )  # fmt: skip
