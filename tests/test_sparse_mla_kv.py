"""DeepSeek-V3.2's cache as vLLM stores it, by release and GPU (``core.engine.sparse_mla_kv``): hand counts of the
61 layers' bytes a token, fp8_ds_mla 656 + the indexer's 132 = 788, plain fp8 576 + 132 = 708, bf16 1,152 + 132.

Trial 333 #1 found ``--kv-dtype fp8_e4m3`` priced 708 B a layer and ``fp8`` 788 on 8 x H200; reading vLLM 0.11-0.34
(review 335) showed the old rule (every fp8 spelling to fp8_ds_mla, ``DeepseekV32ForCausalLM.verify_and_update_config``)
ended in 0.18: since then the backend picked decides, and on Blackwell and AMD it stores plain fp8."""

from __future__ import annotations

import pytest

from mha_cli.core.engine.sparse_mla_kv import vllm_sparse_mla_kv, vllm_sparse_mla_refusal
from mha_cli.core.targets import resolve_target

LAYERS = 61
DS_MLA, PLAIN_FP8, BF16 = LAYERS * (656 + 132), LAYERS * (576 + 132), LAYERS * (1152 + 132)
MODEL = "tests/fixtures/hf_configs/deepseek-v3.2-exp.json"


def per_token(cli, target: str, *extra: str) -> int:
    return cli.json("kv", MODEL, "--seq", "32k", "--target", target, *extra)["kv"]["bytes_per_token"]


@pytest.mark.parametrize(
    ("target", "extra", "expected"),
    [
        ("8xh200", ["--kv-dtype", "fp8"], DS_MLA),  # FLASHMLA_SPARSE: fp8 served as fp8_ds_mla
        ("8xh200", ["--kv-dtype", "fp8_e4m3"], DS_MLA),  # mha writes --kv-cache-dtype fp8 for it: the same cache
        ("8xb200", ["--kv-dtype", "fp8"], PLAIN_FP8),  # FlashInfer's sparse backend first from 0.19 (quantized)
        ("8xb200", ["--kv-dtype", "fp8", "--engine", "vllm@0.17"], DS_MLA),  # 0.11-0.17: the config rewrite
        ("8xb200", ["--kv-dtype", "fp8", "--engine", "sglang"], DS_MLA),  # NSATokenToKVPool
        ("8xb200", ["--kv-dtype", "fp8", "--engine", "trtllm"], PLAIN_FP8),  # not read: plain fp8
        ("8xmi300x", ["--kv-dtype", "fp8"], PLAIN_FP8),  # ROCM_AITER_MLA_SPARSE from 0.21
        ("8xrtx-pro-6000-srv", ["--kv-dtype", "fp8"], DS_MLA),  # FLASHINFER_MLA_SPARSE_SM120 from 0.24
        ("8xh200", [], BF16),
    ],
)
def test_the_cache_is_priced_in_the_layout_the_release_stores_on_that_gpu(cli, target, extra, expected):
    assert per_token(cli, target, *extra) == expected


def test_vllm_0_18_on_blackwell_took_flashinfer_first_only_at_16_heads_a_rank_or_fewer(cli):
    """0.18's order on 10.x: FlashInfer's sparse backend first at <= 16 heads a rank (128 / tp 8), else FlashMLA's."""
    common = ("--kv-dtype", "fp8", "--engine", "vllm@0.18")
    assert per_token(cli, "8xb200", "--tp", "8", *common) == PLAIN_FP8
    assert per_token(cli, "8xb200", "--tp", "4", "--dp", "2", *common) == DS_MLA


def test_a_bf16_cache_vllm_stores_as_fp8_ds_mla_on_rtx_blackwell_is_said_not_repriced(cli):
    """From 0.24 FLASHINFER_MLA_SPARSE_SM120 serves auto as fp8_ds_mla: priced as asked (the other engines' launch
    lines share the deployment and must not gain an fp8 cache), with a note naming the flag that prices it."""
    notes = {}
    for engine in ("vllm", "vllm@0.23"):
        report = cli.json("kv", MODEL, "--seq", "32k", "--target", "8xrtx-pro-6000-srv", "--engine", engine)
        assert report["kv"]["bytes_per_token"] == BF16
        notes[engine] = [note for note in report["memory"]["engine"]["notes"] if "FLASHINFER_MLA_SPARSE_SM120" in note]
    assert notes["vllm"] and notes["vllm"][0].endswith("pass --kv-dtype fp8 to price what it allocates")
    assert notes["vllm@0.23"] == []  # the control: no such backend before 0.24


@pytest.mark.parametrize(
    ("target", "engine", "kv_dtype", "said"),
    [
        ("8xh200", "vllm", "fp8_e5m2", "the latest release of vLLM has no sparse-MLA attention backend on h200"),
        ("8xb200", "vllm@0.25", "fp8_e5m2", "vLLM 0.25.x has no sparse-MLA attention backend on b200"),
        ("8xmi300x", "vllm@0.20", "fp8", "vLLM 0.20.x has no sparse-MLA attention backend on mi300x"),
        ("8xmi300x", "vllm@0.17", "fp8", "vLLM 0.17.x has no sparse-MLA attention backend on mi300x"),  # review 336 #2
        ("8xmi300x", "vllm", "fp8_e5m2", "it stores e5m2 as e4m3"),  # review 336 #5: not Triton MLA's reason
    ],
)
def test_a_format_no_sparse_backend_of_the_release_takes_is_a_note_of_kv_and_refused_by_plan(
    cli, target, engine, kv_dtype, said
):
    """As a dense MLA model's e5m2: `mha kv` prices the bytes and says so, `mha plan` refuses to launch it."""
    args = (MODEL, "--target", target, "--engine", engine, "--kv-dtype", kv_dtype)
    notes = cli.json("kv", *args, "--seq", "32k")["memory"]["engine"]["notes"]
    assert any(said in note and note.endswith("not a deployment it runs") for note in notes), notes
    refused = cli.run("plan", *args, "--tp", "8", "--concurrency", "4", "--closed-form")
    line = " ".join(refused.output.split())
    assert refused.exit_code == 2 and said in line and "a plan prices a deployment the engine runs" in line


def test_a_gpu_no_sparse_backend_runs_on_is_refused_by_plan_whatever_the_cache(cli):
    """Review 336 #7: Ampere, Ada and RTX Blackwell before vLLM 0.24 have no sparse-MLA backend (FlashMLA's and
    FlashInfer's sparse kernels: 9.x, 10.x; 12.x from 0.24): DeepSeek-V3.2 does not start, bf16 or fp8."""
    for target, engine in (("8xa100", "vllm"), ("8xrtx-pro-6000-srv", "vllm@0.23")):
        refused = cli.run("plan", MODEL, "--target", target, "--engine", engine, "--tp", "8", "--closed-form")
        line = " ".join(refused.output.split())
        assert refused.exit_code == 2 and "has no sparse-MLA attention backend on" in line, line
        assert line.endswith("a plan prices a server that starts: plan it on a Hopper or Blackwell GPU")
    control = cli.run("plan", MODEL, "--target", "8xrtx-pro-6000-srv", "--weight-dtype", "fp8", "--tp", "8",
                      "--closed-form")  # fmt: skip
    assert "has no sparse-MLA attention backend" not in control.output  # 0.24 on: FLASHINFER_MLA_SPARSE_SM120


def test_the_rule_by_release_and_gpu_family():
    """The module's table, read in the wheels: None keeps the format asked."""
    h200, b200, mi300x = (resolve_target(name).target for name in ("h200", "b200", "mi300x"))
    assert vllm_sparse_mla_kv("fp8", False, (0, 17, 1, 0), h200, 16) == "fp8_ds_mla"
    assert vllm_sparse_mla_kv("fp8", True, (0, 17, 1, 0), h200, 16) == "fp8_ds_mla"  # startswith("fp8")
    assert vllm_sparse_mla_kv("fp8", False, (0, 34, 0, 0), h200, 16) == "fp8_ds_mla"
    assert vllm_sparse_mla_kv("fp8", False, (0, 19, 0, 0), b200, 128) == "fp8"
    assert vllm_sparse_mla_kv("fp8", False, (0, 18, 0, 0), b200, 128) == "fp8_ds_mla"
    assert vllm_sparse_mla_kv(None, False, (0, 34, 0, 0), b200, 16) is None
    assert vllm_sparse_mla_kv(None, False, (0, 34, 0, 0), resolve_target("rtx-pro-6000-srv").target, 16) is None
    assert vllm_sparse_mla_kv("fp8", True, (0, 31, 0, 0), mi300x, 16) is None  # stored as e4m3: kept, refused
    assert "stores e5m2 as e4m3" in str(vllm_sparse_mla_refusal("fp8", True, (0, 31, 0, 0), mi300x))
    assert vllm_sparse_mla_refusal("fp8", False, (0, 21, 0, 0), mi300x) is None


def test_a_format_vllm_has_for_no_model_is_still_said_for_a_sparse_mla_model(cli):
    """The sparse rule only adds reasons: an int8 cache, which mha prices on vLLM for no model, keeps its note (the last
    read found the sparse branch returned before it)."""
    notes = cli.json("kv", MODEL, "--seq", "32k", "--target", "8xh200", "--kv-dtype", "int8")["memory"]["engine"]
    assert any(note.startswith("vLLM's int8 KV cache (--kv-cache-dtype int8_per_token_head") for note in notes["notes"])
