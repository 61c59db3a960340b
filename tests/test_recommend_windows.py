"""MHA028: local:global window patterns in the trade-off. Priced exactly per layer kind, chosen under --priority
inference at long context (and over a riskier attention when the batch does not fit), alternatives only otherwise,
carried by the config file, ``--format hf`` (transformers' ``layer_types``) and ``mha kv`` reading it back."""

from __future__ import annotations

import json

import pytest

from mha_cli.core.rules import catalog as C

LONG = ["--params", "7B", "--seq", "131072"]


def _layers_of(kinds: list[str], kind: str) -> int:
    return sum(k == kind for k in kinds)


def test_inference_at_long_context_picks_the_smallest_cache_in_the_lowest_risk_class(cli):
    data = cli.json("recommend", *LONG, "--priority", "inference")
    m = data["model"]
    chosen = next(a for a in data["alternatives"] if a["is_recommended"])
    assert chosen["label"] == f"GQA-{m['n_kv_heads']} 5:1 w1024" and chosen["layer_pattern"] == "5:1 w1024"
    kinds = m["layer_types"]
    assert len(kinds) == m["n_layers"] and m["sliding_window"] == 1024
    assert kinds[:6] == ["sliding_attention"] * 5 + ["full_attention"]  # Gemma 3's order: every 6th layer global
    # each global layer caches the whole context, each local one its window: 2 x KV heads x head_dim x 2 B a token
    per_token_layer = 2 * m["n_kv_heads"] * m["head_dim"] * 2
    tokens = _layers_of(kinds, "full_attention") * 131072 + _layers_of(kinds, "sliding_attention") * 1024
    assert data["kv"]["bytes_per_sequence"] == chosen["kv_bytes_at_seq"] == tokens * per_token_layer
    plain = next(a for a in data["alternatives"] if a["label"] == f"GQA-{m['n_kv_heads']}")
    assert plain["kv_bytes_at_seq"] > 5 * chosen["kv_bytes_at_seq"]  # a sixth of the layers hold the context
    assert plain["verdict"] == "same risk, larger cache" and plain["bytes_per_token"] == chosen["bytes_per_token"]
    assert "MHA028" in data["rules_fired"]


def test_balanced_keeps_every_layer_global_and_shows_the_patterns(cli):
    data = cli.json("recommend", *LONG)
    assert data["model"]["sliding_window"] is None
    assert set(data["model"]["layer_types"]) == {"full_attention"}
    windows = [a for a in data["alternatives"] if a["layer_pattern"]]
    patterns = [f"{lo}:{gl} w{w}" for lo, gl, w, _ in C.WINDOW_PATTERNS]
    assert [a["layer_pattern"] for a in windows] == patterns
    assert all(a["verdict"].startswith("excluded (MHA028") for a in windows)
    # mildest first: each pattern caches less than the one before
    sizes = [a["kv_bytes_at_seq"] for a in windows]
    assert sizes == sorted(sizes, reverse=True)


def test_short_contexts_and_mla_get_no_patterns(cli):
    short = cli.json("recommend", "--params", "7B", "--seq", "16384", "--priority", "inference")
    assert not any(a["layer_pattern"] for a in short["alternatives"])
    mla = cli.json("recommend", *LONG, "--priority", "inference", "--variant", "MLA")
    assert mla["model"]["sliding_window"] is None and not any(a["layer_pattern"] for a in mla["alternatives"])


def test_a_pattern_beats_a_riskier_attention_when_the_batch_does_not_fit(cli):
    args = ["--params", "70B", "--seq", "131072", "--batch", "32", "--target", "8xh100", "--priority", "inference"]
    data = cli.json("recommend", *args)
    chosen = next(a for a in data["alternatives"] if a["is_recommended"])
    assert chosen["layer_pattern"] is not None and chosen["quality_risk"] == "low" and chosen["fits"]
    mqa = next(a for a in data["alternatives"] if a["label"] == "MQA")  # what nothing but fewer KV heads left
    assert mqa["quality_risk"] == "high" and not mqa["fits"]
    assert data["fits"] and data["memory"]["max_sequences"] >= 32


def test_the_pattern_travels_in_the_config_and_hf_formats(cli, tmp_path):
    args = ["recommend", "--params", "300M", "--seq", "65536", "--priority", "inference"]
    data = cli.json(*args)
    config = tmp_path / "design.yaml"
    assert cli.run(*args, "--out", str(config)).exit_code == 0
    again = cli.json("kv", str(config))
    assert again["kv"]["bytes_per_sequence"] == data["kv"]["bytes_per_sequence"]
    hf = tmp_path / "hf" / "config.json"
    hf.parent.mkdir()
    assert cli.run(*args, "--out", str(hf), "--format", "hf").exit_code == 0
    written = json.loads(hf.read_text())
    assert written["model_type"] == "ministral" and written["layer_types"] == data["model"]["layer_types"]
    assert cli.json("kv", str(hf), "--seq", "65536")["kv"]["bytes_per_sequence"] == data["kv"]["bytes_per_sequence"]


def test_transformers_builds_the_windowed_design(cli, tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    args = ["recommend", "--params", "300M", "--seq", "65536", "--priority", "inference"]
    assert cli.run(*args, "--out", str(tmp_path / "config.json"), "--format", "hf").exit_code == 0
    data = cli.json(*args)
    config = transformers.AutoConfig.from_pretrained(tmp_path)
    assert config.sliding_window == 1024 and list(config.layer_types) == data["model"]["layer_types"]
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    assert sum(p.numel() for p in model.parameters()) == data["model"]["total_params"]


def test_verify_measures_the_local_layers_ring(cli, tmp_path):
    pytest.importorskip("torch")
    config = tmp_path / "design.yaml"
    assert cli.run("recommend", "--params", "50M", "--seq", "32768", "--priority", "inference", "--out",
                   str(config)).exit_code == 0  # fmt: skip
    import yaml

    assert yaml.safe_load(config.read_text())["model"]["layers"]["sliding_window"] == 1024
    report = cli.json("verify", str(config), "--device", "cpu", "--seq", "2048", "--layers", "6")
    assert report["checks"]["cache_bytes_match"] is True  # 5 local layers hold 1,024 tokens, the 6th all 2,048


def test_when_nothing_fits_the_pick_is_what_the_engine_admits_most_of(cli):
    """tp 8 replicates 8 KV heads' worth on every rank: MQA's smaller raw cache holds no more sequences than GQA-8
    (37), while GQA-8 5:1 w1024 runs 245 (its scheduler's count, decoding requests on their windows' blocks,
    ``core.engine.window_blocks``; the logged concurrency says 184); nothing holds 512, so the pick is the one the
    engine admits most of."""
    data = cli.json("recommend", "--params", "7B", "--seq", "131072", "--priority", "inference", "--target", "8xh100",
                    "--tp", "8", "--batch", "512", "--engine", "vllm@0.19")  # fmt: skip  # V1's budget (no graph line; 0.20 has one)
    assert data["fits"] is False
    chosen = next(a for a in data["alternatives"] if a["is_recommended"])
    assert chosen["max_sequences"] == max(a["max_sequences"] for a in data["alternatives"]) == 245
    assert chosen["quality_risk"] == "low"
    batch = next(w for w in data["ways_out"] if w["change"].startswith("--batch"))
    assert batch["change"] == "--batch 245" and batch["fits"]


def test_the_hf_config_names_the_class_vllm_loads_it_as(cli, tmp_path):
    """No vLLM or SGLang release read registers MinistralForCausalLM (outputs/engine_flags/architectures.json): the
    written config names MistralForCausalLM, whose vLLM llama.py reads layer_types from 0.10.1."""
    args = ["recommend", "--params", "300M", "--seq", "65536", "--priority", "inference"]
    hf = tmp_path / "config.json"
    assert cli.run(*args, "--engine", "vllm", "--out", str(hf), "--format", "hf").exit_code == 0
    assert json.loads(hf.read_text())["architectures"] == ["MistralForCausalLM"]
    assert cli.run("kv", str(hf), "--target", "h100", "--engine", "vllm@0.10.1").exit_code == 0
    for command in (["kv", str(hf)], ["plan", str(hf), "--closed-form"]):
        assert cli.run(*command, "--target", "h100", "--engine", "vllm").exit_code == 0
        early = cli.run(*command, "--target", "h100", "--engine", "vllm@0.10.0")
        assert early.exit_code == 2 and "(first in 0.10.1): give --engine vllm@0.10.1 or later" in early.stderr
    refused = cli.run(*args, "--engine", "vllm@0.10.0", "--out", str(tmp_path / "early.json"), "--format", "hf")
    assert refused.exit_code == 2 and not (tmp_path / "early.json").exists()


def test_a_fitting_balanced_pick_is_not_called_unfit_when_the_admitted_count_moves_the_pick(cli):
    """On a B200 at 131,072 tokens vLLM's scheduler runs 146 sequences of GQA-8 5:1 w1024, decoding ones on their
    windows' blocks (``core.engine.window_blocks``; the start-up sizer's reservation of a 16,384-token step a sliding
    group gave 60, below GQA-3's 63): the pick follows what is admitted, and the rows and the trace say so instead of
    'larger cache' and 'does not fit'."""
    args = ["--params", "1B", "--seq", "131072", "--target", "b200", "--priority", "inference"]
    data = cli.json("recommend", *args)
    rows = {a["label"]: a for a in data["alternatives"]}
    chosen = next(a for a in data["alternatives"] if a["is_recommended"])
    plain = rows["GQA-8"]
    assert chosen["label"] == "GQA-8 5:1 w1024" and chosen["max_sequences"] == 146 > rows["GQA-3"]["max_sequences"]
    assert rows["GQA-3"]["verdict"] == "same risk, fewer sequences admitted"
    assert plain["fits"] and plain["max_sequences"] > 1
    step = next(t for t in data["trace"] if t["id"] == "MHA022")
    assert "does not fit" not in step["message"]
    assert step["message"].startswith("GQA-8 fits batch 1; at 131,072 tokens the goal is the most sequences")
    assert f"{chosen['label']} admits {chosen['max_sequences']}" in step["message"]


def test_a_window_the_engine_admits_no_more_sequences_of_is_not_taken(cli):
    """400B at 32K on 8 x B200 with SGLang: the patterns run the 15 sequences plain GQA-16 does, so the design
    without windows is kept, and the rows and the trace say why. On vLLM the start-up sizer's reservation of
    4,095 + 2 x 16,384 tokens a sliding group (2,049 blocks, above a full group's 2,048) made 1:1 and 3:1 w4096 admit
    as many as GQA-16 too; its scheduler runs more of them, decoding ones on their windows' blocks: 28, 45 and 78
    of 5:1 w1024 against 16, which is taken."""
    args = ["--params", "400B", "--seq", "32k", "--target", "8xb200", "--priority", "inference"]
    data = cli.json("recommend", *args, "--engine", "sglang", "--explain")
    rows = {a["label"]: a for a in data["alternatives"]}
    chosen = next(a for a in data["alternatives"] if a["is_recommended"])
    assert chosen["label"] == "GQA-16" and chosen["layer_pattern"] is None and chosen["max_sequences"] == 15
    assert "sliding_attention" not in (data["model"].get("layer_types") or [])
    for label in ("GQA-16 1:1 w4096", "GQA-16 3:1 w4096", "GQA-16 5:1 w1024"):
        assert rows[label]["max_sequences"] == 15 and rows[label]["kv_bytes_at_seq"] < chosen["kv_bytes_at_seq"]
        assert rows[label]["verdict"] == "same risk, as many sequences admitted: kept without windows"
    step = next(t for t in data["trace"] if t["id"] == "MHA022")
    assert "so the design without windows is kept (simpler, no quality risk from the window)" in step["message"]
    on_vllm = {a["label"]: a for a in cli.json("recommend", *args)["alternatives"]}
    assert [on_vllm[label]["max_sequences"] for label in ("GQA-16", "GQA-16 1:1 w4096", "GQA-16 3:1 w4096",
                                                          "GQA-16 5:1 w1024")] == [16, 28, 45, 78]  # fmt: skip
    assert on_vllm["GQA-16 5:1 w1024"]["is_recommended"]
