"""vLLM's hybrid KV cache manager turned off by a KV connector (``core.engine.vllm_rule_releases``): every release
from 0.9.1 to 0.21 turns it off under any ``--kv-transfer-config``; from 0.22 only for a connector that does not
subclass ``SupportsHMA``, and NixlConnector does (read in the wheels; review 276 found 0.22.0's check).
``plan --disaggregated`` launches every vLLM worker with NixlConnector, so before 0.22 its sliding-window models are
held and moved as full attention there, and its Mamba hybrids would not start (trial 274 #1). The host tier of
``--kv-offloading-size`` is an OffloadingConnector too, which 0.11.1-0.20 serve only with the manager off."""

from __future__ import annotations

import shlex

import yaml

from mha_cli.core.engine.vllm_rule_releases import (
    connector_turns_off_hybrid,
    has_hybrid_manager,
    offload_turns_off_hybrid,
)
from mha_cli.core.errors import EXIT_BAD_INPUT
from mha_cli.core.sources import load_source
from tests.conftest import reference_hf_config

GPT_OSS_LAYER = 8 * 64 * 2 * 2
"""gpt-oss-20b, one layer, one token: 8 KV heads x head_dim 64 x (K, V) x 2 B = 2,048 B; 24 layers, every other one
sliding with a 128-token window."""


def test_the_connector_rule_by_release():
    assert connector_turns_off_hybrid("nixl", (0, 21)) and connector_turns_off_hybrid("nixl", (0, 10))
    assert not connector_turns_off_hybrid("nixl", (0, 22))
    assert not connector_turns_off_hybrid("nixl", None)  # the latest release read (0.32)
    assert not connector_turns_off_hybrid(None, (0, 21))  # control: no connector
    assert has_hybrid_manager("0.9.1") and has_hybrid_manager("0.9") and not has_hybrid_manager("0.9.0")


def _with_connector(tmp_path, config: str) -> str:
    """``config``'s model in a config file whose deployment runs NixlConnector."""
    model = load_source(str(reference_hf_config(config))).model
    path = tmp_path / f"{config}.yaml"
    document = {"schema_version": 2, "model": model.model_dump(mode="json", exclude_none=True),
                "deployment": {"kv_connector": "nixl"}}  # fmt: skip
    path.write_text(yaml.safe_dump(document))
    return str(path)


def test_a_connector_before_022_prices_sliding_layers_as_full(cli, tmp_path):
    """Gemma-3-4B at 32K on an H100: with NixlConnector, 0.21 holds all 34 layers in one full group, int(blocks x 16
    / 32,768) requests at once, and says why; 0.22 keeps its six sliding groups apart, as 0.21 does without one."""
    args = ("kv", _with_connector(tmp_path, "gemma-3-4b-it"), "--target", "h100", "--seq", "32768")
    off = cli.json(*args, "--engine", "vllm@0.21")["engine"]
    assert [(group["kind"], group["n_layers"]) for group in off["groups"]] == [("full", 34)]
    assert off["admitted_per_replica"] == off["kv_blocks"] * 16 // 32768
    assert any("NixlConnector) turns vLLM 0.21's hybrid KV cache manager off" in note for note in off["notes"])
    on = cli.json(*args, "--engine", "vllm@0.22")["engine"]
    assert [group["kind"] for group in on["groups"]].count("sliding") == 6
    plain = cli.json("kv", str(reference_hf_config("gemma-3-4b-it")), "--target", "h100", "--seq", "32768",
                     "--engine", "vllm@0.21")["engine"]  # fmt: skip
    assert [group["kind"] for group in plain["groups"]].count("sliding") == 6
    assert plain["admitted_per_replica"] > 4 * off["admitted_per_replica"]
    # the launch line carries the connector it was priced with
    plan = cli.json("plan", args[1], "--target", "h100", "--isl", "8000", "--osl", "500", "--engine", "vllm@0.21")
    words = shlex.split(plan["launch"]["vllm"])
    assert words[words.index("--kv-transfer-config") + 1] == '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'


def test_a_connector_stops_a_mamba_hybrid_before_022(cli, tmp_path):
    """vLLM's ``unify_hybrid_kv_cache_specs`` cannot make Mamba and attention specs one kind: it raises. ``check``
    warns (so --strict fails), ``kv`` names the way out the refusal gives; 0.22 starts it."""
    path = _with_connector(tmp_path, "granite-4.0-h-small")
    args = ("kv", path, "--target", "h100", "--seq", "8192")
    off = cli.json(*args, "--engine", "vllm@0.21")
    assert not off["engine"]["starts"] and "Hybrid KV cache manager is disabled" in off["engine"]["refusal"]
    assert [way["text"] for way in off["ways_out"]] == [f"none: {off['engine']['refusal']}"]
    assert "use --engine vllm@0.22 or later" in off["engine"]["refusal"]
    checked = cli.json("check", path, "--target", "h100", "--engine", "vllm@0.21")
    assert any("vllm would not start: ValueError: Hybrid KV cache manager" in w for w in checked["deployment_warnings"])
    assert cli.run("check", path, "--target", "h100", "--engine", "vllm@0.21", "--strict").exit_code == 1
    assert cli.json(*args, "--engine", "vllm@0.22")["engine"]["starts"]
    assert cli.run("check", path, "--target", "h100", "--engine", "vllm@0.22", "--strict").exit_code == 0


def test_the_connector_names_vllm_09_on_only(cli, tmp_path):
    path = _with_connector(tmp_path, "gemma-3-4b-it")
    for engine in ("sglang", "vllm@0.8.5"):
        result = cli.run("kv", path, "--target", "h100", "--engine", engine)
        assert result.exit_code == EXIT_BAD_INPUT and "kv_connector names vLLM's NixlConnector" in result.stderr


def _disaggregated(cli, engine: str, model: str = "gpt-oss-20b") -> dict:
    return cli.json("plan", model, "--target", "4xh100", "--disaggregated", "--isl", "32000", "--osl", "768",
                    "--engine", engine)  # fmt: skip


def test_disaggregated_vllm_workers_hold_and_move_windows_as_the_release_does(cli):
    """gpt-oss-20b, 32,000-token prompts: before 0.22 the transfer moves every layer's 32,000 tokens; from 0.22 the
    12 sliding layers move their 128-token window. The decode worker admits fewer before 0.22."""
    old, new = _disaggregated(cli, "vllm@0.21"), _disaggregated(cli, "vllm@0.22")
    assert old["pairings"][0]["transfer"]["bytes"] == 24 * GPT_OSS_LAYER * 32000
    assert new["pairings"][0]["transfer"]["bytes"] == 12 * GPT_OSS_LAYER * (32000 + 128)
    assert any("NixlConnector turns vLLM 0.21's hybrid KV cache manager off" in note for note in old["notes"])
    assert not any("hybrid KV cache manager off" in note for note in new["notes"])
    assert old["decode"][0]["admitted"] < new["decode"][0]["admitted"]
    # 0.9.0 has no hybrid manager to turn off (its sliding layers are full anyway): no note says it does
    gemma = ("plan", str(reference_hf_config("gemma-3-4b-it")), "--target", "2xh100", "--disaggregated", "--isl", "8000",
             "--osl", "200", "--engine")  # fmt: skip
    assert not any("hybrid KV cache manager off" in note for note in cli.json(*gemma, "vllm@0.9.0")["notes"])
    assert any("hybrid KV cache manager off" in note for note in cli.json(*gemma, "vllm@0.9.1")["notes"])


def test_the_aggregated_comparison_runs_no_connector(cli, tmp_path):
    """A config file's kv_connector prices the disaggregated workers, not the aggregated servers beside them (review
    276 #5): their figures equal those of the same model without one."""
    args = ("--target", "2xh100", "--disaggregated", "--isl", "16000", "--osl", "500", "--engine", "vllm@0.21")
    with_connector = cli.json("plan", _with_connector(tmp_path, "gemma-3-4b-it"), *args)["aggregated"]
    plain = cli.json("plan", str(reference_hf_config("gemma-3-4b-it")), *args)["aggregated"]
    assert [(a["itl_ms"], a["output_tokens_per_s_per_gpu"]) for a in with_connector] == [
        (a["itl_ms"], a["output_tokens_per_s_per_gpu"]) for a in plain
    ]


def test_disaggregated_vllm_refuses_a_mamba_hybrid_before_022(cli):
    result = cli.run("plan", str(reference_hf_config("granite-4.0-h-small")), "--target", "4xh100", "--disaggregated",
                     "--isl", "8000", "--osl", "500", "--engine", "vllm@0.21")  # fmt: skip
    assert result.exit_code == EXIT_BAD_INPUT
    assert "turns vLLM 0.21's hybrid KV cache manager off" in result.stderr and "vllm@0.22" in result.stderr


def test_sglang_off_its_swa_pool_moves_every_token(cli):
    """SGLang 0.5.2 serves gpt-oss off its hybrid SWA pool (from 0.5.8): its pool, and so its transfer, holds every
    layer's 32,000 tokens; the latest, on the pool, moves the sliding layers' window."""
    plan = _disaggregated(cli, "sglang@0.5.2")
    assert plan["pairings"][0]["transfer"]["bytes"] == 24 * GPT_OSS_LAYER * 32000
    plan = _disaggregated(cli, "sglang")
    assert plan["pairings"][0]["transfer"]["bytes"] == 12 * GPT_OSS_LAYER * (32000 + 128)


def test_the_offload_rule_by_release():
    """``--kv-offloading-size`` (0.11.1 on) builds an OffloadingConnector after vLLM has decided its hybrid manager;
    it supports the manager (``SupportsHMA``) only from 0.21, so 0.11.1-0.20 serve it with the manager off."""
    assert (
        offload_turns_off_hybrid((0, 11, 1, 0))
        and offload_turns_off_hybrid((0, 20))
        and offload_turns_off_hybrid((0, 16))
    )
    assert not offload_turns_off_hybrid((0, 21)) and not offload_turns_off_hybrid((0, 21, 0, 0))
    assert not offload_turns_off_hybrid((0, 11)) and not offload_turns_off_hybrid((0, 11, 0, 0))  # no such flag yet
    assert not offload_turns_off_hybrid(None)  # the latest release read


def test_a_host_tier_before_021_prices_sliding_layers_as_full_and_says_so_on_the_line(cli):
    """Gemma-3-4B at 32K on an H100 with a 64 GiB host tier: vLLM 0.20 would refuse the OffloadingConnector with its
    hybrid manager on, so its line asks --disable-hybrid-kv-cache-manager and the plan holds all 34 layers in one full
    group, as the NixlConnector case does; 0.21 keeps its sliding groups and writes no such flag. The control without
    the tier keeps the groups on 0.20 too."""
    config = str(reference_hf_config("gemma-3-4b-it"))
    args = ("plan", config, "--target", "h100", "--isl", "30000", "--osl", "2000", "--tp", "1", "--concurrency", "4",
            "--closed-form")  # fmt: skip
    off = cli.json(*args, "--engine", "vllm@0.20", "--kv-offload-gib", "64")
    engine = off["memory"]["engine"]
    assert [(group["kind"], group["n_layers"]) for group in engine["groups"]] == [("full", 34)]
    assert any("OffloadingConnector) only with its hybrid KV cache manager off" in note for note in engine["notes"])
    words = shlex.split(off["launch"]["vllm"])
    assert "--disable-hybrid-kv-cache-manager" in words and "--kv-offloading-size" in words
    on = cli.json(*args, "--engine", "vllm@0.21", "--kv-offload-gib", "64")
    assert [group["kind"] for group in on["memory"]["engine"]["groups"]].count("sliding") == 6
    assert "--disable-hybrid-kv-cache-manager" not in shlex.split(on["launch"]["vllm"])
    plain = cli.json(*args, "--engine", "vllm@0.20")["memory"]["engine"]
    assert [group["kind"] for group in plain["groups"]].count("sliding") == 6
    assert plain["admitted_per_replica"] > engine["admitted_per_replica"]


def test_a_host_tier_before_021_stops_a_mamba_hybrid(cli):
    """With the manager off, vLLM cannot unify Mamba and attention specs: 0.20 would not start Granite-4.0-H with a
    host tier, and the refusal names the release that serves it."""
    args = ("plan", str(reference_hf_config("granite-4.0-h-small")), "--target", "h100", "--isl", "4096", "--osl",
            "512", "--tp", "1", "--concurrency", "8", "--closed-form", "--kv-offload-gib", "64")  # fmt: skip
    refused = cli.run(*args, "--engine", "vllm@0.20")
    assert refused.exit_code == EXIT_BAD_INPUT and "Traceback" not in refused.output
    line = " ".join(refused.output.split())
    assert "Hybrid KV cache manager is disabled" in line and "plan it without --kv-offload-gib" in line


def test_a_host_tier_from_021_refuses_a_mamba_hybrid_without_prefix_caching(cli):
    """0.21 on keeps the manager beside the tier, but asserts that a Mamba hybrid's blocks align with its prefix
    hashes, which only its Mamba align mode (--enable-prefix-caching) gives; the tier of such a hybrid is not priced:
    one line, exit 2; the control without the tier plans."""
    args = ("plan", str(reference_hf_config("granite-4.0-h-small")), "--target", "h100", "--isl", "4096", "--osl",
            "512", "--tp", "1", "--concurrency", "8", "--closed-form", "--engine", "vllm@0.21")  # fmt: skip
    refused = cli.run(*args, "--kv-offload-gib", "64")
    assert refused.exit_code == EXIT_BAD_INPUT and len(refused.output.strip().splitlines()) == 1
    assert "hybrid is not priced here (0.21 and later serve it only with prefix caching on" in (
        " ".join(refused.output.split())
    )
    assert cli.run(*args).exit_code == 0
