"""A 2025 row's ``mha`` block may state the sampler vLLM's profiling run took (``vllm_sampler``), read from its
source; ``benchmarks/fit_priors.py`` (``row_sampler``) prices the row's memory plan with it and refuses what mha does
not model.

- GPUStack's Performance Lab rows (rows7, vLLM 0.11.0) state ``flashinfer``: the lab's own vLLM 0.11.0 server reached
  FlashInfer's attention-sinks error, raised in a module that imports flashinfer (the fixture's gpusampler paragraph).
- By hand: the 32K Qwen3-32B H100 row's profiling peak is FlashInfer's 14 B a logit over 1,024 sequences of 151,936
  logits, 3.73 GB below the PyTorch sort's 38 B, which refused it (4.48 GiB of KV for a 7.83 GiB request).
"""

from __future__ import annotations

import pytest

from mha_cli.core.errors import EngineRefusedError
from mha_cli.core.safe_yaml import load_yaml_file

ROW_32K = "qwen3-32b/h100.md#L269"
VOCAB, SEQUENCES = 151_936, 1_024  # Qwen3-32B's config.json; vllm serve's max_num_seqs on a GPU of >= 70 GiB


@pytest.fixture(scope="module")
def raw(fit_priors):
    return load_yaml_file(fit_priors.ROWS_2025_FILE)


def test_every_gpustack_row_states_the_flashinfer_sampler_and_cites_why(raw):
    lab = [row for row in raw if "github.com/gpustack/gpustack/blob/" in row["url"]]
    assert len(lab) == 20 and all("not_expressible" not in row for row in lab)  # 19 usable before gpusampler
    for row in lab:
        assert row["mha"]["vllm_sampler"] == "flashinfer", row["url"]
        assert "gpt-oss-120b/a100.md at 47277d79" in " ".join(row["notes"].split()), row["url"]
    stated = [row["url"] for row in raw if "vllm_sampler" in row.get("mha", {})]
    assert len(stated) == 20  # no other source states one


def test_the_32k_h100_row_starts_on_flashinfers_peak_where_the_sort_refused_it(fit_priors, raw):
    index, row = next((i, row) for i, row in enumerate(raw) if row["url"].endswith(ROW_32K))
    plan = fit_priors.GenerationRow(index, row).engine_plan
    assert plan.starts and plan.activation_peak_bytes == SEQUENCES * VOCAB * 14 == 2_178_154_496
    assert (plan.max_num_seqs, plan.max_num_batched_tokens) == (SEQUENCES, 8192)
    # 3.73 GB freed: the sort's 38 B less FlashInfer's 14 B, a logit; the KV left holds one 32,077-token request
    freed = SEQUENCES * VOCAB * (38 - 14)
    assert freed == 3_733_979_136
    assert plan.available_kv_bytes >= 32_077 * 64 * 8 * 128 * 2 * 2  # 64 layers, 8 KV heads of 128, K and V, bf16
    without = dict(row, mha={key: value for key, value in row["mha"].items() if key != "vllm_sampler"})
    with pytest.raises(
        EngineRefusedError, match=r"7\.83 GiB KV cache is needed.*available KV cache memory \(4\.48 GiB\)"
    ):
        fit_priors.GenerationRow(index, without)
    # the two plans differ by the freed bytes alone (4.48 GiB before, rounded as vLLM's log prints it)
    assert plan.available_kv_bytes - freed == pytest.approx(4.48 * 2**30, abs=0.005 * 2**30)


@pytest.mark.parametrize(
    ("mha", "expected"),
    [
        ({"engine": "vllm"}, None),
        ({"engine": "vllm", "vllm_sampler": "flashinfer"}, "flashinfer"),
        ({"engine": "vLLM", "vllm_sampler": "torch-sort"}, "torch-sort"),
    ],
)
def test_a_rows_stated_sampler_is_passed_on(fit_priors, mha, expected):
    assert fit_priors.row_sampler(mha) == expected


@pytest.mark.parametrize(
    ("mha", "message"),
    [
        (
            {"engine": "vllm", "vllm_sampler": "flash-infer"},
            "vllm_sampler 'flash-infer' is none of torch-sort, flashinfer",
        ),
        ({"engine": "sglang", "vllm_sampler": "flashinfer"}, "a sglang row has none"),
    ],
)
def test_a_sampler_mha_does_not_model_or_on_another_engine_is_refused_in_one_line(fit_priors, mha, message):
    with pytest.raises(SystemExit, match=message) as refused:
        fit_priors.row_sampler(mha)
    assert "\n" not in str(refused.value)
