"""``mha verify`` on hybrids: Gated DeltaNet (Qwen3-Next), Mamba-1 (Jamba), Mamba-2 (Granite-4.0-H), Mamba-2 beside
attention (Falcon-H1) and short-convolution (LFM2) layers are built, and the fixed state they allocate is measured against core.kv's ``state_bytes_per_layer``, byte for byte.

The fixtures are tiny configs written by transformers' own config classes (``tests/fixtures/tiny_hybrids``).
"""

from __future__ import annotations

import json

import pytest

from mha_cli.core.errors import EXIT_BAD_INPUT, EXIT_CHECK_FAILED
from mha_cli.nn.mixers import BUILT_KINDS, MixerState
from mha_cli.verify.plan import BUILT_MIXERS
from tests.conftest import FIXTURES

HYBRIDS = FIXTURES / "tiny_hybrids"
QWEN3_NEXT = str(HYBRIDS / "tiny-qwen3-next.json")
GRANITE_H = str(HYBRIDS / "tiny-granite-4.0-h.json")
JAMBA = str(HYBRIDS / "tiny-jamba.json")
FALCON_H1 = str(HYBRIDS / "tiny-falcon-h1.json")
LFM2 = str(HYBRIDS / "tiny-lfm2.json")
VERIFY = ("--device", "cpu", "--seq", "16")


@pytest.mark.parametrize("config", [QWEN3_NEXT, GRANITE_H, JAMBA], ids=["gated_deltanet", "mamba2", "mamba"])
def test_verify_measures_the_state_core_predicts(cli, config):
    report = cli.json("verify", config, *VERIFY, "--layers", "4")  # 3 linear layers and the full-attention one
    kv = cli.json("kv", config, "--seq", "16", "--state-convention", "transformers")  # what torch holds
    assert (
        report["measured_state_bytes"] == report["predicted_state_bytes"] == 3 * kv["kv"]["state_bytes_per_layer"] > 0
    )
    assert report["measured_cache_bytes"] == report["predicted_cache_bytes"] == kv["total_bytes"]
    assert report["checks"]["state_bytes_match"] and report["checks"]["numerics"] and report["passed"]
    # the mixers count exactly: the built weights are what core predicts, byte for byte
    assert (
        report["checks"]["weight_bytes_match"] and report["measured_weight_bytes"] == report["predicted_weight_bytes"]
    )
    assert report["weights_approximate"] is False  # Qwen3-Next's attention output gate is counted and built
    # trial 374 #1: layer 0 is a linear layer; its row is its mixer's weights, not an attention layer's
    assert report["predicted_weight_bytes_per_layer"] == report["weight_bytes_per_layer"]
    assert not any(note.startswith("family weights approximate") for note in report["notes"])


def test_a_default_cpu_run_extrapolates_from_the_linear_layers(cli):
    report = cli.json("verify", QWEN3_NEXT, *VERIFY)  # CPU default: 2 layers, both Gated DeltaNet
    kv = cli.json("kv", QWEN3_NEXT, "--seq", "16", "--state-convention", "transformers")
    assert report["n_layers_built"] == 2 and report["measured_state_bytes"] == report["predicted_state_bytes"] > 0
    assert report["per_rank"]["extrapolated"] and report["per_rank"]["cache_bytes"] == kv["total_bytes"]


def test_a_state_kept_in_the_activation_dtype_fails_the_check(cli, monkeypatch):
    real = MixerState.zeros.__func__

    def zeros_in_activation_dtype(cls, batch, **kwargs):  # the recurrent state in bf16, not the fp32 core prices
        return real(cls, batch, **(kwargs | {"state_dtype": kwargs["dtype"]}))

    monkeypatch.setattr(MixerState, "zeros", classmethod(zeros_in_activation_dtype))
    result = cli.run("verify", GRANITE_H, *VERIFY, "--json")
    assert result.exit_code == EXIT_CHECK_FAILED, result.output
    report = json.loads(result.stdout)
    assert report["measured_state_bytes"] < report["predicted_state_bytes"]
    assert report["checks"]["state_bytes_match"] is False and report["checks"]["numerics"] is True
    assert report["check_details"]["state_bytes_match"].startswith(f"measured {report['measured_state_bytes']:,} B !=")


@pytest.mark.parametrize(
    ("args", "message"),
    [((QWEN3_NEXT, "--tp", "2"), "without --tp 2"), ((GRANITE_H, "--pp", "2"), "without --pp 2"),
     (("llama-4-scout",), "chunked"), ((str(HYBRIDS / "tiny-nemotron-h.json"),), "MLP-only and MoE-only layers")],
)  # fmt: skip
def test_what_is_not_built_is_refused_in_one_line(cli, args, message):
    result = cli.run("verify", *args, *VERIFY)
    assert result.exit_code == EXIT_BAD_INPUT and message in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("config", "state_layers"), [(FALCON_H1, 4), (LFM2, 3)], ids=["mamba2 beside attention", "short_conv"]
)
def test_verify_measures_the_state_of_a_parallel_hybrid_and_of_short_convolutions(cli, config, state_layers):
    """Falcon-H1 runs Mamba-2 beside attention in every layer (its cache holds both); LFM2's conv layers keep only
    their convolution's last tokens. Both measured byte for byte against the price."""
    report = cli.json("verify", config, *VERIFY, "--layers", "4")
    kv = cli.json("kv", config, "--seq", "16", "--state-convention", "transformers")
    per_layer = kv["kv"]["state_bytes_per_layer"]
    assert report["measured_state_bytes"] == report["predicted_state_bytes"] == state_layers * per_layer > 0
    assert report["measured_cache_bytes"] == report["predicted_cache_bytes"] == kv["total_bytes"]
    assert report["checks"]["state_bytes_match"] and report["checks"]["numerics"] and report["passed"]


def test_plan_names_the_mixers_the_torch_ring_builds():
    assert BUILT_MIXERS == BUILT_KINDS
