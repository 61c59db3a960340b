"""Model Runner V2's persistent sampler tables in the KV budget (``core.engine.v2_sampler_state``), counted by hand."""

from __future__ import annotations

from pathlib import Path

from mha_cli.core.engine.plan import plan_engine
from mha_cli.core.engine.settings import resolve_settings
from mha_cli.core.engine.v2_sampler_state import SamplerState, counts_sampler_state
from mha_cli.core.kv import kv_footprint
from mha_cli.core.safe_yaml import load_yaml_file
from mha_cli.core.schemas import DeploymentSpec
from mha_cli.core.sources import load_source
from mha_cli.core.targets import resolve_target
from mha_cli.core.weight_bytes import rank_weight_bytes

ROOT = Path(__file__).parent.parent
CONFIGS = ROOT / "tests/fixtures/hf_configs"
LOGS = {log["id"]: log for log in load_yaml_file(ROOT / "tests/fixtures/engine_logs.yaml")}
LABEL = "sampler state (Model Runner V2)"


def _plan(config: str, version: str, target_id: str = "h100", tp: int = 1, utilisation: float = 0.9):
    model = load_source(str(CONFIGS / config)).model
    target = resolve_target(target_id).target
    spec = DeploymentSpec(
        seq_len=8192, tp=tp, engine="vllm", engine_version=version, gpu_memory_utilization=utilisation,
        kv_dtype="bf16",
    )  # fmt: skip
    settings = resolve_settings(spec, target, tp)
    kv = kv_footprint(model, seq_len=8192, kv_dtype="bf16", tp=tp)
    return plan_engine(model, kv, target, settings, weights_bytes_per_rank=rank_weight_bytes(model, tp, "bf16"),
                       sequences_per_replica=1)  # fmt: skip


def test_qwen3_vocab_at_1024_sequences_by_hand():
    """Qwen3's 151,936 tokens, 1,024 slots: ``output_bin_counts`` 1,024 x 151,936 x 4 B = 0.58 GiB and
    ``prompt_bin_mask`` 1,024 x 4,748 x 4 B; the grammar bitmask 1,024 x (4,748 + 1 logits index) x 4 B; logit bias
    (3 x 1,024 + 128), bad words (1,024 + 129) and logprob ids (128) = 4,481 int32 a slot."""
    state = SamplerState(max_num_seqs=1024, vocab=151_936)
    assert state.mask_words == 4748  # ceil(151,936 / 32)
    assert state.penalties_bytes == 1024 * 151_936 * 4 + 1024 * 4748 * 4 == 641_777_664
    assert state.grammar_bytes == 1024 * 4749 * 4 == 19_451_904
    assert state.fixed_rows_bytes == 1024 * 4481 * 4 == 18_354_176
    assert state.bytes == 679_583_744  # 0.63 GiB
    assert "1024 x (151,936 + 4,748)" in state.how()


def test_speculative_tokens_widen_only_the_grammar_bitmask():
    """``StructuredOutputsWorker(max_num_logits=max_num_reqs * decode_query_len)``: 1 + k rows a slot."""
    plain, drafted = SamplerState(256, 32_000), SamplerState(256, 32_000, speculative_tokens=2)
    assert drafted.grammar_bytes == 3 * plain.grammar_bytes == 3 * 256 * (1000 + 1) * 4
    assert drafted.bytes - plain.bytes == 2 * plain.grammar_bytes


def test_memory_profiling_counts_them_from_027():
    """0.22.0-0.26.0's non-KV memory (non-torch + torch peak increase + weights) misses a persistent torch buffer;
    0.27.0+'s ``total_consumed`` (free-memory drop since the first snapshot) takes it."""
    assert [counts_sampler_state(release) for release in ((0, 22), (0, 26), (0, 27), (0, 32), None)] == [
        False, False, True, True, True,
    ]  # fmt: skip


def test_log_605_pays_for_them():
    """engine_logs.yaml 605 (0.27.1, Qwen3-32B, V2): the line is the hand count at 1,024 slots, on both tp ranks,
    and the budget still sums to the pool."""
    log = LOGS[605]
    plan = _plan("qwen3-32b.json", log["version"], log["target"], tp=2, utilisation=log["utilisation"])
    line = next(line for line in plan.budget if line.label == LABEL)
    assert line.bytes == -679_583_744
    assert plan.available_kv_bytes == sum(each.bytes for each in plan.budget[:-1])


def test_no_line_where_v2_does_not_run_or_the_release_leaves_them_to_the_headroom():
    """0.24 runs V2 for Qwen3 but its measurement misses the tables (a note says so); 0.28 profiles an unlisted MoE
    on the V1 runner (no V2 tables); 0.29 and the default (0.32) run V2 for every model and count them."""
    early = _plan("qwen3-32b.json", "0.24.0")
    assert all(line.label != LABEL for line in early.budget)
    assert any("sampler tables" in note and "headroom" in note for note in early.notes)
    assert all(line.label != LABEL for line in _plan("qwen3-235b-a22b-instruct-2507.json", "0.28.0", tp=8).budget)
    assert any(line.label == LABEL for line in _plan("qwen3-235b-a22b-instruct-2507.json", "0.29.0", tp=8).budget)
    latest = _plan("llama-3.1-8b.json", None)
    assert next(line.bytes for line in latest.budget if line.label == LABEL) == -SamplerState(1024, 128_256).bytes
    assert latest.budget[-2].label == "CUDA graphs (estimated before the pool)"
