"""``mha verify --tp N`` end to end on CPU (gloo): real ranks in separate processes.

Each launch costs a few seconds of process start-up on a small machine, so the configurations are
batched: one launch at tp 4 runs seven tiny models (``run_tp_jobs``), and torchrun at tp 2 (KV heads
split, not replicated) checks the JSON keys; ``mha verify`` itself launches the fault tests (and
tests/test_verify_cmd.py's tp 2 run). Expected cache bytes are hand counts written here, not the calculator.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from mha_cli.core.deployment import merge_deployment
from mha_cli.core.errors import EXIT_BAD_INPUT, EXIT_CHECK_FAILED, EXIT_OUT_OF_MEMORY
from mha_cli.core.schemas import MLASpec, ModelSpec, MoESpec
from mha_cli.core.sources import ModelSource
from mha_cli.parallel.group import free_port
from mha_cli.parallel.plan import make_tp_job
from mha_cli.parallel.run import run_tp_jobs
from tests.children import living_children

MLA = MLASpec(kv_lora_rank=32, qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16, q_lora_rank=24)
MOE = MoESpec(n_experts=4, n_active_experts=2, n_shared_experts=1, d_ff_expert=32, n_dense_layers=1,
              scoring_func="sigmoid", topk_method="noaux_tc", n_group=2, topk_group=1)  # fmt: skip
CONFIG = """\
schema_version: 1
model:
  name: tiny-gqa
  d_model: 64
  n_layers: 3
  n_heads: 8
  n_kv_heads: 4
  vocab_size: 500
  d_ff: 128
deployment:
  seq_len: 32
  batch: 2
  kv_dtype: fp32
  tp: 2
"""


def _job(name: str, tp: int, seq: int = 24, batch: int = 1, **fields):
    model = ModelSpec(
        **({"name": name, "d_model": 64, "n_layers": 2, "n_heads": 8, "vocab_size": 300, "d_ff": 128} | fields)
    )
    loaded = ModelSource(kind="preset", origin=name, model=model)
    deployment = merge_deployment(None, model=model, seq_len=seq, batch=batch, kv_dtype="fp32", tp=tp)
    return make_tp_job(loaded, deployment, device_type="cpu", reps=2, timeout_s=120)


@pytest.fixture(scope="module")
def tp4_reports():
    """One launch of 4 ranks, four models: every KV layout but the plain split (the CLI test runs that at tp 2)."""
    windowed = {"sliding_window": 8, "layer_pattern": ["local", "global"], "qkv_bias": True, "o_bias": True}
    jobs = [
        _job("gqa-replicated", 4, n_kv_heads=2, batch=2),  # each KV head on 2 ranks
        _job("mqa", 4, n_kv_heads=1),  # the one KV head on every rank
        _job("mha", 4, n_kv_heads=8),  # 2 KV heads per rank
        _job("windowed-biased", 4, n_kv_heads=4, **windowed),
        _job("mla-moe", 4, n_heads=4, mla=MLA, moe=MOE),  # DeepSeek-V3-like: MLA, a dense layer, then MoE
        _job("sinks-head-gate", 4, n_kv_heads=4, attn_sinks=True, attn_softplus_gate="head"),  # gpt-oss, Laguna
        _job("output-gate", 4, n_kv_heads=4, attn_output_gate=True, attn_softplus_gate="element"),  # Qwen3-Next
    ]
    return {report.model_name: report for report in run_tp_jobs(jobs)}


# (name, query and KV heads per rank (the modules' own attributes), cache bytes per rank):
# 2 layers x 24 tokens x batch x (K + V) x KV heads x head_dim 8 x 4 B
CASES = [
    ("gqa-replicated", 2, 1, 2 * 24 * 2 * 2 * 1 * 8 * 4),
    ("mqa", 2, 1, 2 * 24 * 1 * 2 * 1 * 8 * 4),
    ("mha", 2, 2, 2 * 24 * 1 * 2 * 2 * 8 * 4),
    ("windowed-biased", 2, 1, (8 + 24) * 1 * 2 * 1 * 8 * 4),  # the local layer holds its 8-token window
    ("mla-moe", 1, 1, 2 * 24 * 1 * (32 + 8) * 4),  # the whole latent + rope key on every rank, no factor 2
    # per-head tensors beside q (sinks, gates) split with the query heads (core.inventory), not loaded whole
    ("sinks-head-gate", 2, 1, 2 * 24 * 1 * 2 * 1 * 8 * 4),
    ("output-gate", 2, 1, 2 * 24 * 1 * 2 * 1 * 8 * 4),
]


@pytest.mark.parametrize(("name", "q_heads", "kv_heads", "cache_bytes"), CASES, ids=[case[0] for case in CASES])
def test_every_rank_matches_hand_counts_and_one_device(name, q_heads, kv_heads, cache_bytes, tp4_reports):
    report, tp = tp4_reports[name], 4
    assert report.tp == tp and [r.rank for r in report.ranks] == list(range(tp))
    for rank in report.ranks:
        assert (rank.n_heads, rank.n_kv_heads) == (q_heads, kv_heads)
        assert rank.measured_cache_bytes == rank.predicted_cache_bytes == cache_bytes
        assert rank.measured_weight_bytes == rank.predicted_weight_bytes
        assert rank.allreduce_calls == 1 + 2 * 2 + 1  # the embedding; o_proj, down_proj (or MoE) x 2; the logits
    assert report.whole_model.cache_bytes == report.whole_model.predicted_cache_bytes == tp * cache_bytes
    assert report.tp_numerics.relative_error < 1e-5 and report.tp_numerics.positions == 1 + 4
    assert report.checks["tp_matches_single_device"] and report.passed, report.check_details
    assert report.checks["every_rank_cache_bytes_match"] and report.checks["every_rank_weight_bytes_match"]
    assert report.numerics.passed  # single-device verify's cached-decode check, run on the shards
    assert report.allreduce_ms > 0 and report.allreduce_share > 0  # 4 ranks on few cores: mostly waiting
    assert not any("identities" in note for note in report.notes)


def test_weights_per_rank_hand_count(tp4_reports):
    # gqa-replicated at tp 4: q 64x16, k and v 64x8 (one replicated head), o 16x64; MLP 3x64x32; 2 norms.
    layer = 64 * 16 + 2 * 64 * 8 + 16 * 64 + 3 * 64 * 32 + 2 * 64
    params = 2 * layer + 2 * 80 * 64 + 64  # + untied embedding and head (vocab 300 padded to 320: 80 rows), final norm
    assert {r.measured_weight_bytes for r in tp4_reports["gqa-replicated"].ranks} == {4 * params}


def test_torchrun_entry_prints_the_json_keys(tmp_path):
    """The entry torchrun starts (docs/commands/verify.md): tp = WORLD_SIZE = 2, KV heads split; rank 0 prints."""
    config = tmp_path / "tiny.yaml"
    config.write_text(CONFIG)
    torchrun = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc-per-node",
        "2",
        "--master-port",
        str(free_port()),
    ]
    worker = ["-m", "mha_cli.cli.torchrun", str(config), "--device", "cpu", "--layers", "2", "--reps", "2", "--json"]
    result = subprocess.run([*torchrun, *worker], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    data = json.loads(result.stdout)
    assert data["tp"] == 2 and data["checks"]["tp_matches_single_device"] is True and data["backend"] == "gloo"
    per_rank = 2 * 32 * 2 * 2 * 2 * 8 * 4  # 2 layers built x 32 tokens x batch 2 x (K + V) x 2 heads x 8 x 4 B
    assert [(r["rank"], r["measured_cache_bytes"], r["predicted_cache_bytes"]) for r in data["ranks"]] == [
        (0, per_rank, per_rank),
        (1, per_rank, per_rank),
    ]
    assert all(isinstance(r["measured_weight_bytes"], int) for r in data["ranks"])
    assert data["allreduce_ms"] > 0 and data["passed"] is True
    assert data["whole_model"]["n_ranks"] == 2 and data["ranks_measured"] == [0, 1]


def test_table_shows_every_rank(tp4_reports):
    from rich.console import Console

    from mha_cli.cli.verify_tp import render_tp_verify

    console = Console(record=True, width=120)
    render_tp_verify(console, tp4_reports["mqa"])
    text = console.export_text()
    assert "Every rank (gloo)" in text and text.count("2/1") == 4  # 4 ranks, 2 query heads and the shared KV head
    assert "all-reduce:" in text and "tp vs one device: equal" in text
    # the verdict is the last line, after the ranks, as the single-device and --pp reports end (trial 291 #3)
    assert text.count("PASS  ") == 1 and text.index("PASS  ") > text.index("tp vs one device: equal")
    assert text.strip().endswith("every_rank_weight_bytes_match pass")  # the verdict's checks, wrapped at 120


def test_a_failing_rank_ends_the_run_with_one_line(cli, tmp_path, monkeypatch):
    config = tmp_path / "tiny.yaml"
    config.write_text(CONFIG)
    monkeypatch.setenv("MHA_TP_FAULT", "1:raise")
    result = cli.run("verify", str(config), "--device", "cpu", "--reps", "2", "--layers", "1", "--tp-timeout", "180")
    assert result.exit_code == EXIT_CHECK_FAILED
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.output
    assert "rank 1 failed" in result.stderr and "injected fault" in result.stderr
    assert living_children() == []


def test_a_wrong_shard_fails_the_single_device_check(cli, tmp_path, monkeypatch):
    """Control: rank 1's first o_proj negated in the tp check; bytes still match, the logits must not."""
    config = tmp_path / "tiny.yaml"
    config.write_text(CONFIG)
    monkeypatch.setenv("MHA_TP_FAULT", "1:corrupt")
    result = cli.run(
        "verify", str(config), "--device", "cpu", "--reps", "2", "--layers", "1", "--tp-timeout", "180", "--json"
    )
    assert result.exit_code == EXIT_CHECK_FAILED
    assert result.stdout, result.stderr  # a rank that failed outright (not the check) prints one line, no JSON
    data = json.loads(result.stdout)
    assert data["checks"]["tp_matches_single_device"] is False and data["tp_numerics"]["relative_error"] > 1e-2
    assert data["checks"]["every_rank_cache_bytes_match"] and data["passed"] is False


def test_a_hanging_rank_is_stopped_within_the_timeout(cli, tmp_path, monkeypatch):
    import time

    config = tmp_path / "tiny.yaml"
    config.write_text(CONFIG)
    monkeypatch.setenv("MHA_TP_FAULT", "1:hang")
    start = time.monotonic()
    result = cli.run("verify", str(config), "--device", "cpu", "--layers", "1", "--tp-timeout", "8")
    assert time.monotonic() - start < 8 + 5
    assert result.exit_code == EXIT_CHECK_FAILED
    assert result.stderr.count("\n") == 1 and "after 8 s" in result.stderr and "rank 1 at" in result.stderr
    assert living_children() == []


def test_refusals_before_any_process_starts(cli, tmp_path, monkeypatch):
    config = tmp_path / "tiny.yaml"
    config.write_text(CONFIG)
    result = cli.run("verify", str(config), "--device", "cpu", "--tp", "3")
    assert result.exit_code == EXIT_BAD_INPUT and "n_heads (8) must be divisible by tp (3)" in result.stderr
    result = cli.run("verify", str(config), "--device", "cpu", "--tp-timeout", "0")
    assert result.exit_code == EXIT_BAD_INPUT and "--tp-timeout must be greater than 0" in result.stderr
    monkeypatch.setattr("mha_cli.parallel.plan.device_free_bytes", lambda device_type, index: 2 * 100_000)
    result = cli.run("verify", str(config), "--device", "cpu", "--layers", "2")
    assert result.exit_code == EXIT_OUT_OF_MEMORY and "one of 2 ranks:" in result.stderr
    assert "each rank plans with 1/2 of the host's free memory" in result.stderr
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    result = cli.run("verify", str(config), "--tp", "2")
    assert result.exit_code == EXIT_BAD_INPUT
    assert "needs 2 CUDA devices, 1 visible: rerun with --device cpu" in result.stderr
    assert living_children() == []


def test_the_one_device_reference_is_sized_before_any_rank_starts():
    """Hand count of a check stack (2 layers, d 64, 8 heads, d_ff 128 gated, vocab 3,000, untied): embedding and head
    2 x 3,000 x 64, each layer 4 x 64 x 64 attention + 3 x 64 x 128 MLP + 2 x 64 norms, the final norm 64: 466,240
    values, 1,864,960 B in float32, and the cache of the check's 4 + 4 tokens (--seq 8), 8 x 2 layers x 8 heads x 8 x
    (K, V) x 4 B = 8,192 B; with its prompt's activations (verify's workspace_bytes) it is refused exactly when it
    outgrows the usable 90% of the host's free memory, before any rank starts, where the bf16 ranks' plans fit."""
    from mha_cli.core.errors import OutOfMemoryError
    from mha_cli.parallel.plan import CHECK_VALUE_BYTES, check_reference_bytes
    from mha_cli.parallel.rank_run import CHECK_DTYPE
    from mha_cli.verify.plan import first_layers, workspace_bytes

    assert CHECK_DTYPE.itemsize == CHECK_VALUE_BYTES
    model = ModelSpec(name="tiny", d_model=64, n_layers=2, n_heads=8, vocab_size=3000, d_ff=128)
    loaded = ModelSource(kind="preset", origin="tiny", model=model)
    deployment = merge_deployment(None, model=model, seq_len=8, batch=1, kv_dtype="bf16", tp=2)

    def host(free: int):
        return lambda device_type, ranks: free // ranks  # the host's free memory, shared by the CPU ranks

    job = make_tp_job(loaded, deployment, device_type="cpu", reps=2, free_bytes=host(10**9))
    need = 2 * 3000 * 64 + 2 * (4 * 64 * 64 + 3 * 64 * 128 + 2 * 64) + 64
    assert need * 4 == 1_864_960
    assert check_reference_bytes(job.plan, 8) == need * 4 + 8 * 2 * 8 * 8 * 2 * 4 == 1_873_152
    check = first_layers(model, 2)  # and the reference's prompt of 4 tokens: its activations and logits
    workspace = workspace_bytes(check, batch=1, prefill_tokens=4, context=8, value_bytes=4)
    enough = -(-(1_873_152 + workspace) * 10 // 9)  # the smallest free figure whose 90% holds the reference
    make_tp_job(loaded, deployment, device_type="cpu", reps=2, free_bytes=host(enough))
    with pytest.raises(OutOfMemoryError, match=r"reference needs .* or verify with --tp 1 \(no tp check\)"):
        make_tp_job(loaded, deployment, device_type="cpu", reps=2, free_bytes=host(enough - 2))


def test_a_check_without_every_layer_kind_says_so():
    """DeepSeek-like: 3 dense layers, then MoE. Two layers built (the CPU default) check no MoE layer: the report
    says so and names --layers 4; four built check one of each, and say nothing."""
    from mha_cli.parallel.rank_run import _notes

    moe = MOE.model_copy(update={"n_dense_layers": 3})
    model = ModelSpec(name="moe", d_model=64, n_layers=6, n_heads=8, vocab_size=300, d_ff=128, moe=moe)
    loaded = ModelSource(kind="preset", origin="moe", model=model)
    deployment = merge_deployment(None, model=model, seq_len=24, batch=1, kv_dtype="fp32", tp=2)
    two = make_tp_job(loaded, deployment, device_type="cpu", layers=2, reps=2)
    four = make_tp_job(loaded, deployment, device_type="cpu", layers=4, reps=2)
    assert (two.check_layers, four.check_layers) == (2, 4)
    missing = (
        "tp check: not every layer kind was in it (one of each needs the first 4 layers, 2 were built): --layers 4"
    )
    assert any(note.startswith(missing) for note in _notes(two))
    assert not any("not every layer kind" in note for note in _notes(four))


def test_a_one_layer_check_of_a_uniform_model_names_what_it_missed_not_a_layer_kind():
    """Trial 374 #6: every layer alike, --layers 1 said "not every layer kind was in it"; what one layer misses is a
    layer's output feeding the next across the ranks."""
    from mha_cli.parallel.rank_run import _notes

    model = ModelSpec(name="plain", d_model=64, n_layers=4, n_heads=8, vocab_size=300, d_ff=128)
    loaded = ModelSource(kind="preset", origin="plain", model=model)
    deployment = merge_deployment(None, model=model, seq_len=24, batch=1, kv_dtype="fp32", tp=2)
    one = make_tp_job(loaded, deployment, device_type="cpu", layers=1, reps=2)
    notes = _notes(one)
    assert not any("not every layer kind" in note for note in notes)
    assert any(note.startswith("tp check: 1 layer built, so no layer's output fed another's") for note in notes)
    two = make_tp_job(loaded, deployment, device_type="cpu", layers=2, reps=2)
    assert not any("layer built, so" in note for note in _notes(two))
