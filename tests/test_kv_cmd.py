"""`mha kv`, `mha targets`, `mha presets`, `mha schema` through the CLI, JSON parsed."""

import json
from pathlib import Path

import pytest

from mha_cli.cli.app import app
from mha_cli.core.errors import EXIT_BAD_INPUT, EXIT_CHECK_FAILED
from mha_cli.core.fit import price_deployment
from mha_cli.core.schemas import DeploymentSpec
from mha_cli.core.sources import load_source
from tests.conftest import REPO, reference_hf_config


def test_kv_json_has_the_stable_fields(cli):
    data = cli.json("kv", "llama-3-8b", "--seq", "8k", "--batch", "4")
    assert data["bytes_per_token"] == 131_072
    assert data["total_bytes"] == 4 * 8192 * 131_072
    assert data["kv"]["bytes_per_token_per_layer"] == 4096


def test_kv_reads_hf_config_files(cli):
    data = cli.json("kv", str(reference_hf_config("deepseek-v3")))
    assert data["bytes_per_token"] == 70_272
    assert data["model"]["attention"]["variant"] == "MLA"
    assert data["kv"]["mla_cache"] == "absorbed"
    naive = cli.json("kv", str(reference_hf_config("deepseek-v3")), "--mla-cache", "naive")
    assert naive["bytes_per_token"] == 61 * 128 * 320 * 2


def test_kv_total_applies_window_paging_and_tp(cli):
    data = cli.json("kv", "gemma-2-9b", "--seq", "10000", "--block-size", "16", "--tp", "2")
    per_layer_rank = 2 * 4 * 256 * 2  # 8 KV heads over 2 ranks
    assert data["total_bytes"] == per_layer_rank * (21 * 10000 + 21 * 4096)  # 10000 and 4096 are whole blocks
    assert data["bytes_per_token"] == 344_064
    # trial 333 #3: gpt-oss-20b's 128-token windows at 1,000 tokens in 64-token blocks: tokens 872-999, blocks 13-15
    oss = cli.json("kv", "gpt-oss-20b", "--seq", "1000", "--block-size", "64")["kv"]
    assert oss["bytes_per_sequence"] == 2 * 8 * 64 * 2 * (12 * 1024 + 12 * 3 * 64)  # was 12 x 128


def test_kv_target_plan(cli):
    data = cli.json("kv", "llama-3-70b", "--seq", "128k", "--target", "8xh100")
    memory = data["memory"]
    assert (memory["n_devices"], memory["tp"], data["deployment"]["tp"]) == (8, 8, 8)
    # One rank of 8 (vLLM's layout): q, k, v, o and the SwiGLU split 8 ways; norms whole; the embedding and the
    # LM head split by vocabulary (128,256 rows, already a multiple of 64: 16,032 rows each per rank).
    attention, mlp, norms = 2 * 8192 * 8192 + 2 * 8192 * 1024, 3 * 8192 * 28672, 2 * 8192
    per_rank = 80 * (attention // 8 + mlp // 8 + norms) + 2 * 16_032 * 8192 + 8192
    assert memory["weight_bytes_per_device"] == 2 * per_rank == 17_640_734_720  # replicated head: 21.3 GB
    engine = data["engine"]
    assert engine["available_kv_bytes"] == memory["usable_bytes"] - memory["weight_bytes_per_device"]
    per_token = 80 * 2 * 128 * 2  # one KV head of 128 per rank, K and V, bf16
    assert engine["kv_bytes_per_token_per_rank"] == per_token
    blocks = engine["available_kv_bytes"] // (16 * per_token)
    assert (engine["kv_blocks"], engine["kv_tokens"]) == (blocks, 16 * blocks)
    assert memory["max_sequences"] == blocks // (131_072 // 16)  # whole requests of 128K tokens


def test_kv_that_does_not_fit_is_flagged_and_can_fail(cli):
    data = cli.json("kv", "llama-3-70b", "--target", "a100")
    assert data["memory"]["weights_fit"] is False and data["memory"]["fits"] is False
    result = cli.run("kv", "llama-3-70b", "--target", "a100", "--fail-if-no-fit")
    assert result.exit_code == EXIT_CHECK_FAILED
    assert "does not fit" in result.stdout
    # a way that fits is offered as one: "does not fit: --weight-dtype fp8 (...)" read as if fp8 failed too (trial 242)
    offered = " ".join(cli.run("kv", "llama-3.1-70b", "--target", "h200", "--seq", "8k", "--tp", "1").stdout.split())
    assert (
        "does not fit; ways out (each checked): --weight-dtype fp8 (weights 67.7 GiB per device; 21 sequences fit)"
        in offered
    )
    fp8 = cli.json("kv", "llama-3.1-70b", "--target", "h200", "--seq", "8k", "--tp", "1", "--weight-dtype", "fp8")
    assert fp8["memory"]["fits"] is True


def test_kv_reads_our_config_file_and_options_override_it(cli, tmp_path):
    path = tmp_path / "model.yaml"
    path.write_text(
        "model:\n  d_model: 1024\n  n_layers: 4\n  n_heads: 16\n  n_kv_heads: 4\n  vocab_size: 1000\n  d_ff: 4096\n"
        "deployment:\n  seq_len: 2k\n  batch: 3\n  kv_dtype: fp32\n"
    )
    data = cli.json("kv", str(path))
    assert data["total_bytes"] == 3 * 2048 * 4 * (2 * 4 * 64 * 4)
    assert cli.json("kv", str(path), "--kv-dtype", "bf16")["total_bytes"] == data["total_bytes"] // 2


@pytest.mark.parametrize("command", ["kv", "verify"])
def test_a_config_files_tp_that_splits_no_heads_is_refused_naming_the_file(cli, tmp_path, command):
    """deployment.tp 3 on 16 query heads: the refusal names the file and the field (it said only "pick a tp"), and
    --tp overrides it. Exit 2 (bad input), one line."""
    path = tmp_path / "model.yaml"
    path.write_text(
        "model:\n  d_model: 1024\n  n_layers: 4\n  n_heads: 16\n  n_kv_heads: 4\n  vocab_size: 1000\n  d_ff: 4096\n"
        "deployment:\n  seq_len: 2k\n  tp: 3\n"
    )
    refused = cli.run(command, str(path))
    assert refused.exit_code == 2
    assert refused.stderr.strip() == (
        f"error: {path}: deployment.tp 3: n_heads (16) must be divisible by tp (3): pick a tp that divides it (edit"
        " the file, or override it with --tp)"
    )
    if command == "kv":
        assert cli.json("kv", str(path), "--tp", "2")["deployment"]["tp"] == 2


def test_variants_table_compares_the_same_shape(cli):
    rows = {row["label"]: row for row in cli.json("kv", "llama-3-8b")["variants"]}
    assert rows["MHA"]["bytes_per_token"] == 4 * rows["GQA-8"]["bytes_per_token"]
    assert rows["GQA-8"]["is_current"] and rows["MQA"]["fraction_of_mha"] == 1 / 32
    # heads as recommend's alternatives give them: an MLA cache is a latent, no KV heads (was 32: trial 334 #6)
    assert [rows[label]["n_kv_heads"] for label in ("MHA", "GQA-8", "MQA", "MLA")] == [32, 8, 1, None]


def test_human_output_names_the_numbers(cli):
    result = cli.run("kv", "llama-3-8b", "--target", "a100")
    assert result.exit_code == 0
    assert "131,072" in result.stdout and "a100 -> a100-80gb" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["kv", "no-such-model"], "neither a preset nor a file"),
        (["kv", "llama-3-8b", "--seq", "0"], "--seq"),
        (["kv", "llama-3-8b", "--seq", "lots"], "cannot read token count"),
        (["kv", "llama-3-8b", "--kv-dtype", "fp7"], "unknown dtype 'fp7'"),
        (["kv", "llama-3-8b", "--target", "H100_SXM"], "did you mean h100-sxm?"),
        (["kv", "llama-3-8b", "--tp", "3"], "divisible by tp (3)"),
        (["kv", "llama-3-8b", "--tp", "4", "--target", "2xh100"], "must divide the 2 device(s)"),
        (["kv", "llama-3-8b", "--batch", "-1"], "--batch"),
        (["targets", "nope"], "unknown target"),
        # an empty SOURCE ("$MODEL" unset) was read as the folder '.': ". is a folder without a config.json"
        (["kv", ""], "SOURCE is empty"),
        (["check", " "], "SOURCE is empty"),
        # an empty --target ("$GPU" unset) priced no target and exited 0 on kv, check and recommend
        (["kv", "llama-3-8b", "--target", ""], "--target is empty"),
        (["check", "llama-3-8b", "--target", ""], "--target is empty"),
        (["recommend", "--params", "7B", "--target", ""], "--target is empty"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(cli, args, message):
    result = cli.run(*args)
    assert result.exit_code == EXIT_BAD_INPUT, result.output
    assert message in result.stderr
    assert "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1


def test_bad_files_exit_2(cli, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "model:\n  d_model: 4096\n  n_layers: 32\n  n_heads: 32\n  n_kv_heads: 5\n  vocab_size: 1\n  d_ff: 1\n"
    )
    result = cli.run("kv", str(bad))
    assert result.exit_code == EXIT_BAD_INPUT
    assert "n_heads (32) must be divisible by n_kv_heads (5)" in result.stderr


def test_targets_and_presets_list_as_json(cli):
    targets = cli.json("targets")["targets"]
    assert any(t["id"] == "h200" and t["memory_gb"] == 141 for t in targets)
    presets = {row["model"]["name"]: row for row in cli.json("presets")["presets"]}
    assert len(presets) >= 15
    assert {p["model"]["attention"]["variant"] for p in presets.values()} == {"MHA", "GQA", "MQA", "MLA"}
    assert presets["llama-3-8b"]["bf16_bytes_per_token"] == 131_072


def test_schema_is_a_json_schema_of_the_config_file(cli):
    result = cli.run("schema")
    document = json.loads(result.stdout)
    assert document["title"] == "mha config file"
    assert "ModelSpec" in document["$defs"] and "model" in document["required"]


def test_default_context_is_the_models_own(cli):
    assert cli.json("kv", "llama-3.1-70b")["deployment"]["seq_len"] == 131072
    data = cli.json("kv", "llama-3-8b", "--seq", "128k")
    assert data["warnings"] == ["seq_len 131,072 exceeds the 8,192 tokens llama-3-8b was trained for"]


def test_an_hf_file_without_model_type_is_still_read_as_hf(cli, tmp_path):
    path = tmp_path / "morekv.json"
    path.write_text(json.dumps({"architectures": ["X"], "hidden_size": 256, "num_hidden_layers": 2,
                                "num_attention_heads": 4, "vocab_size": 100}))  # fmt: skip
    assert cli.json("kv", str(path), "--seq", "16")["bytes_per_token"] == 2 * 2 * 256 * 2


def test_target_with_count(cli):
    resolved = cli.json("targets", "8xh100")["resolved"]
    assert (resolved["n_devices"], resolved["target"]["id"]) == (8, "h100-sxm")


def test_schema_accepts_json_flag(cli):
    assert "$defs" in cli.json("schema")


def test_replicas_share_the_batch(cli):
    # 8 devices at tp 2: 4 replicas; a batch of 10 puts 3 sequences on each device's replica.
    data = cli.json("kv", "llama-3-8b", "--seq", "8k", "--batch", "10", "--target", "8xh100", "--tp", "2")
    memory = data["memory"]
    assert (memory["replicas"], memory["sequences_per_replica"]) == (4, 3)
    assert memory["kv_bytes_per_device"] == 3 * data["kv"]["bytes_per_sequence_per_rank"]
    assert memory["fits"] == (memory["max_sequences"] >= 4 * 3)


def test_schema_fields_carry_their_docstrings(cli):
    document = cli.json("schema")
    attention = document["$defs"]["AttentionSpec"]["properties"]
    assert attention["head_dim"]["description"].startswith("Width of one head")
    assert document["$defs"]["DeploymentSpec"]["properties"]["seq_len"]["anyOf"][1]["type"] == "string"
    assert "description" in document["$defs"]["MLASpec"]["properties"]["kv_lora_rank"]


def test_ways_out_are_flags_that_make_the_plan_fit(cli):
    args = ["kv", "llama-3-70b", "--seq", "32k", "--batch", "16", "--target", "h100"]
    ways = cli.json(*args)["ways_out"]
    assert ways[0]["change"] == "--target 8xh100-sxm" and ways[0]["fits"]
    flag, value = ways[0]["change"].split()
    pasted = cli.json(*args[:-2], flag, value)["memory"]
    assert pasted["fits"] is True and pasted["max_sequences"] == ways[0]["max_sequences"]
    for way in ways:  # each way's fits and sequences are what a rerun with its flags finds
        rerun = list(args)
        words = way["change"].split()
        for flag, value in zip(words[::2], words[1::2], strict=True):
            rerun = [*rerun[: rerun.index(flag)], flag, value, *rerun[rerun.index(flag) + 2 :]] if flag in rerun else [
                *rerun, flag, value]  # fmt: skip
        memory = cli.json(*rerun)["memory"]
        assert (memory["fits"], memory["max_sequences"]) == (way["fits"], way["max_sequences"]), way


def test_ways_out_price_windows_and_mla_fp8_exactly(cli):
    # Gemma-2-9b on one A10 (24 GB) at 64k x 4: half its layers keep only a 4,096-token window.
    args = ["kv", "gemma-2-9b", "--seq", "64k", "--batch", "4", "--target", "a10"]
    seq_way = next(w for w in cli.json(*args)["ways_out"] if w["change"].startswith("--seq"))
    seq = int(seq_way["change"].split()[1])
    assert seq_way["fits"]
    assert cli.json(*args[:3], str(seq), *args[4:])["memory"]["fits"] is True
    assert cli.json(*args[:3], str(seq + 1), *args[4:])["memory"]["fits"] is False
    # DeepSeek-V3's plain fp8 latent is 576 of 1,152 bytes, half (656 B is the fp8_ds_mla layout, asked by name).
    # The generator words it so; not enough alone, it is not printed (pasted, it does not fit).
    args = ["kv", "deepseek-v3", "--seq", "128k", "--batch", "64", "--target", "8xh200", "--weight-dtype", "fp8"]
    deployment = DeploymentSpec(seq_len=131072, batch=64, target="8xh200", weight_dtype="fp8")
    assert (
        "--kv-dtype fp8 (50% of this cache; not enough on its own)"
        in price_deployment(load_source("deepseek-v3").model, deployment).ways
    )
    assert not any(w["change"] == "--kv-dtype fp8" for w in cli.json(*args)["ways_out"])
    assert cli.json(*args, "--kv-dtype", "fp8")["memory"]["fits"] is False
    # at batch 32 not enough alone, it fits with data-parallel attention: the replicas share the experts and each
    # device caches only its own sequences (at tp 8 every rank holds the whole latent of every sequence)
    ways = cli.json("kv", "deepseek-v3", "--seq", "128k", "--batch", "32", "--target", "8xh200", "--weight-dtype",
                    "fp8")["ways_out"]  # fmt: skip
    pair = next(w for w in ways if w["change"].startswith("--kv-dtype fp8 --tp "))
    assert pair["fits"] is True and pair["text"].endswith("fit)") and "together" in pair["text"]


def test_an_mla_only_option_on_another_variant_is_flagged(cli):
    """On a GQA model --mla-cache naive leaves the model's cache alone and prices the hypothetical MLA row naive: the
    warning says so (it said "ignored" while the row changed) and the row's note names the layout. Llama-3-8B's MLA
    at its shape (32 heads, nope 128 + RoPE 64 keys, 128 values): (192 + 128) x 32 x 2 B x 32 layers = 655,360
    B/token naive, (512 + 64) x 2 x 32 = 36,864 absorbed."""
    naive = cli.json("kv", "llama-3-8b", "--mla-cache", "naive")
    assert naive["warnings"] == [
        "mla_cache naive: llama-3-8b is GQA, not MLA, so its own cache is the same either way; only an MLA at its"
        " shape (`mha kv`'s variants table) is priced naive"
    ]
    absorbed = cli.json("kv", "llama-3-8b")
    assert absorbed["warnings"] == []
    assert naive["kv"]["bytes_per_token"] == absorbed["kv"]["bytes_per_token"] == 131_072
    mla = {name: next(row for row in report["variants"] if row["variant"] == "MLA") for name, report in
           (("naive", naive), ("absorbed", absorbed))}  # fmt: skip
    assert (mla["naive"]["bytes_per_token"], mla["absorbed"]["bytes_per_token"]) == (655_360, 36_864)
    assert mla["naive"]["note"].endswith("cached naive: per-head K and V (--mla-cache naive)")
    assert "naive" not in mla["absorbed"]["note"]


def test_a_valid_wide_head_is_priced_and_an_impossible_derived_row_left_out(cli, tmp_path):
    """Issue 25: one head of 10,924 is a valid model; MLA at its shape (nope 10,924 + RoPE 5,462) is over the
    schema's 16,384 bound, so that hypothetical row is left out instead of crashing (exit 70)."""
    path = tmp_path / "wide.json"
    path.write_text(
        '{"model": {"d_model": 64, "n_layers": 1, "n_heads": 1, "head_dim": 10924, "vocab_size": 10, "d_ff": 8}}'
    )
    data = cli.json("kv", str(path))
    assert data["bytes_per_token"] == 2 * 10924 * 2
    assert [row["label"] for row in data["variants"]] == ["MHA"]
    assert cli.run("check", str(path)).exit_code == 0


def test_kv_on_this_cpu_prices_memory_and_no_latency_without_a_profile(cli, tmp_path, monkeypatch):
    """The cpu target has no datasheet: its latency needs a profile of this machine (none here), not a GPU prior."""
    monkeypatch.setenv("MHA_DATA_DIR", str(tmp_path))  # no calibrated profile
    report = cli.json("kv", "llama-3-8b", "--target", "cpu")
    assert report["memory"]["target_id"] == "cpu" and report["latency"] is None


def test_the_batch_total_says_replicas_split_it(cli):
    # DP attention over 8 ranks: total_bytes is the whole batch of 32 (docs/commands/kv.md), a device holds 4 of it.
    args = ["kv", str(reference_hf_config("deepseek-v3")), "--target", "8xb300", "--seq", "128k", "--batch", "32"]
    args += ["--dp", "8", "--engine", "sglang"]
    data = cli.json(*args)
    assert data["total_bytes"] == 8 * data["memory"]["kv_bytes_per_device"]
    shown = " ".join(cli.runner.invoke(app, args, env={"COLUMNS": "250"}).stdout.split())
    assert "total_bytes: all 8 attention ranks' sequences; a device holds 4 of them (memory plan)" in shown
    assert "the batch's cache on one rank" not in shown
    assert "total: the whole batch's cache on one tp rank" in shown


def test_a_weight_format_asked_over_the_checkpoints_says_so(cli):
    """DeepSeek-V3's config stores fp8-block weights; --weight-dtype nvfp4 prices nvfp4 instead, so a warning says
    the figure is not the checkpoint's (the assumption line names what it stores). Without the flag, or asking what
    it stores, nothing is said."""
    config = "tests/fixtures/hf_configs/deepseek-v3.json"
    asked = cli.json("kv", config, "--weight-dtype", "nvfp4")
    assert asked["deployment"]["weight_dtype"] == "nvfp4"
    assert (
        "weights priced in nvfp4 (--weight-dtype), not as the checkpoint stores them (fp8-block): serving them so"
        " needs a checkpoint stored in nvfp4"
    ) in asked["warnings"]
    for args in ((), ("--weight-dtype", "fp8-block")):
        assert not any("--weight-dtype" in warning for warning in cli.json("kv", config, *args)["warnings"])


def test_vllms_quantization_flag_names_the_checkpoints_method(cli):
    """vLLM's --quantization pasted from a launch line, on a quantised checkpoint, names the checkpoint's own method
    (trial 326 #1): DeepSeek-V3's quant_method fp8 with --quantization fp8 loads its fp8 blocks as stored (vLLM's
    Fp8Config reads weight_block_size from it), so the figure and the warnings are the flag's absence's, not fp8 per
    tensor (163,173,800 B fewer) with a warning that another checkpoint is needed. Another method on it is refused,
    as vLLM refuses to start (ModelConfig._verify_quantization); on a bf16 checkpoint the flag is a format."""
    config = "tests/fixtures/hf_configs/deepseek-v3.json"
    plain, pasted = cli.json("kv", config), cli.json("kv", config, "--quantization", "fp8")
    assert pasted["deployment"]["weight_dtype"] == "fp8-block" and pasted["warnings"] == plain["warnings"]
    assert pasted["weight_bytes"] == plain["weight_bytes"]
    per_tensor = cli.json("kv", config, "--weight-dtype", "fp8")["weight_bytes"]
    assert plain["weight_bytes"] - per_tensor == 163_172_800
    refused = cli.run("kv", config, "--quantization", "modelopt_fp4")
    assert refused.exit_code == EXIT_BAD_INPUT and refused.stdout == ""
    assert refused.stderr.startswith(
        "error: --quantization modelopt_fp4: the checkpoint's quantization_config says fp8,"
    )
    assert cli.json("kv", "llama-3-8b", "--quantization", "fp8")["deployment"]["weight_dtype"] == "fp8"


def test_a_large_batch_is_written_with_thousands_separators(cli):
    """The batch row read "batch of 1048576" beside "per sequence (8,192 tokens)": every other count of the table
    is grouped in thousands."""
    printed = cli.run("kv", "llama-3-8b", "--batch", "1048576").stdout
    assert "batch of 1,048,576" in printed and "1048576" not in printed


@pytest.mark.parametrize(
    ("command", "flags", "named"),
    [("kv", ["--batch", "100000", "--fail-if-no-fit"], "--fail-if-no-fit"),
     ("kv", ["--max-num-seqs", "9999", "--max-num-batched-tokens", "16"], "--max-num-batched-tokens, --max-num-seqs"),
     ("kv", ["--kv-cache-gib", "10", "--engine", "sglang"], "--kv-cache-gib"),
     ("check", ["--gpu-memory-utilization", "0.5"], "--gpu-memory-utilization"),
     ("check", ["--no-async-scheduling"], "--no-async-scheduling"),
     # trial 406 #9: named as typed, not as --gpu-memory-utilization
     ("kv", ["--mem-fraction-static", "0.8"], "--mem-fraction-static"),
     ("check", ["--free-gpu-memory-fraction", "0.8"], "--free-gpu-memory-fraction")],
)  # fmt: skip
def test_memory_plan_options_without_a_target_are_refused(cli, command, flags, named):
    """Without a target nothing prices them: they were accepted with exit 0 (the checks that refuse them on a target
    skipped), and --fail-if-no-fit always passed a CI gate (found by newuser trial 231)."""
    refused = cli.run(command, "llama-3-8b", *flags)
    assert refused.exit_code == 2, refused.output
    verb, pronoun = ("size or judge", "them") if ", " in named else ("sizes or judges", "it")  # one flag (trial 257)
    assert refused.stderr.strip() == (
        f"error: {named} {verb} the engine's memory plan on a device: add --target (e.g. h100), or leave {pronoun} out"
    )
    on_target = cli.run(command, "llama-3-8b", *flags, "--target", "h100")
    assert "the engine's memory plan on a device" not in on_target.output  # judged there (some refused by vLLM)


def test_gemma_3n_per_sequence_is_explained_by_the_layers_that_cache(cli):
    """Gemma-3n E4B: 35 layers (7 global, 28 local), the last 15 share earlier K/V, so 4 global and 16 local layers
    cache: 4 x 32,768 x 2,048 B + 16 x 512 x 2,048 B = 285,212,672. The row said "28 layers x 512 (window)", which
    gives 29,360,640 (found by newuser trial 231)."""
    data = cli.json("kv", "gemma-3n-e4b", "--seq", "32k")["kv"]
    assert data["token_layers_by_kind"] == {"local": 16, "global": 4}
    assert data["bytes_per_sequence"] == (4 * 32_768 + 16 * 512) * 2048 == 285_212_672
    wide = cli.runner.invoke(app, ["kv", "gemma-3n-e4b", "--seq", "32k"], env={"COLUMNS": "200"})
    assert "4 layers x 32,768 tokens + 16 layers x 512 (window)" in wide.stdout


def test_a_state_convention_on_a_model_without_state_is_flagged(cli):
    """--state-convention prices fixed-state layers and indexer keys only: on Llama-3-8B it changed nothing, silently
    (found by newuser trial 231), where --mla-cache on a GQA model says so."""
    plain = cli.json("kv", "llama-3-8b")
    asked = cli.json("kv", "llama-3-8b", "--state-convention", "transformers")
    assert asked["total_bytes"] == plain["total_bytes"] and plain["warnings"] == []
    assert asked["warnings"] == [
        "state_convention transformers ignored: llama-3-8b has no fixed-state layer and no indexer key, so both"
        " conventions price it alike"
    ]


def test_a_limit_on_a_modality_the_tower_does_not_read_is_named_as_ignored(cli):
    """Gemma 3's SigLIP tower reads images only; vLLM sizes the modalities a model reads (0.32.0's
    allowed_mm_limits iterates the supported ones), so video=5 changes nothing: it was accepted silently (found by
    newuser trial 231)."""
    config = str(reference_hf_config("gemma-3-4b-it"))
    plain = cli.json("kv", config, "--target", "h100")
    video = cli.json("kv", config, "--target", "h100", "--limit-mm-per-prompt", "video=5")
    assert video["memory"]["engine"]["kv_tokens"] == plain["memory"]["engine"]["kv_tokens"]
    assert video["warnings"] == [
        "limit_mm_per_prompt video=5 ignored: gemma-3-4b-it's tower reads image only, and vLLM sizes the modalities a"
        " model reads (multimodal/processing/context.py allowed_mm_limits, 0.32.0)"
    ]
    assert cli.json("kv", config, "--target", "h100", "--limit-mm-per-prompt", "image=2")["warnings"] == []


@pytest.mark.parametrize("command", ["kv", "check"])
def test_a_config_files_tp_past_the_targets_devices_names_the_file(cli, tmp_path, command):
    """deployment.tp 2 on one H100: the refusal named --tp and --target only, not the file that set the tp (found by
    a review of this change)."""
    path = tmp_path / "model.yaml"
    path.write_text(
        "model:\n  d_model: 1024\n  n_layers: 4\n  n_heads: 16\n  n_kv_heads: 4\n  vocab_size: 1000\n  d_ff: 4096\n"
        "deployment:\n  seq_len: 2k\n  tp: 2\n"
    )
    refused = cli.run(command, str(path), "--target", "h100")
    assert refused.exit_code == 2, refused.output
    assert refused.stderr.strip() == (
        f"error: {path}: deployment.tp 2: tp (2) must divide the 1 device(s) of target 'h100' (edit the file, or"
        " override it with --tp)"
    )
    assert cli.run(command, str(path), "--target", "2xh100").exit_code in (0, 1)  # priced (check: its rules judge)


def test_no_pair_of_changes_is_offered_where_an_fp8_cache_alone_fits(cli):
    """Llama-3.1-70B at 64 x 32K on 8 H100s: an fp8 cache alone holds 78 sequences, so '--kv-dtype fp8
    --weight-dtype fp8 (together: one alone is not enough)' was false (trial 245)."""
    found = cli.json("kv", str(reference_hf_config("llama-3.1-70b")), "--target", "8xh100", "--seq", "32k",
                     "--batch", "64")  # fmt: skip
    ways = {way["change"]: way for way in found["ways_out"]}
    assert ways["--kv-dtype fp8"]["fits"] and ways["--kv-dtype fp8"]["max_sequences"] == 78
    assert "not enough on its own" not in ways["--kv-dtype fp8"]["text"]
    assert not any("alone is not enough" in way["text"] for way in ways.values())


def test_an_unknown_target_in_a_config_file_is_located(cli, tmp_path):
    """`deployment.target: h900` said only "unknown target 'h900'", naming neither the file nor the field (trial
    246)."""
    path = tmp_path / "design.yaml"
    path.write_text("model:\n  d_model: 64\n  n_layers: 2\n  n_heads: 4\n  vocab_size: 100\n  d_ff: 128\n"
                    "deployment:\n  target: h900\n")  # fmt: skip
    result = cli.run("kv", str(path))
    assert result.exit_code == EXIT_BAD_INPUT
    assert "the config file's deployment.target: unknown target 'h900'" in result.output
    assert cli.run("kv", str(path), "--target", "h100").exit_code == 0  # --target still overrides it (review 247)


@pytest.mark.parametrize("name", ["fp4", "fp4_e2m1", "nvfp4-ds-mla", "fp4-e2m1", "nvfp4_4over6"])
def test_an_fp4_cache_not_priced_is_refused_by_name_not_offered_fp8(cli, name):
    """`--kv-dtype fp4` was answered 'did you mean fp8?', a cache of twice the bytes (note62's lead)."""
    result = cli.run("kv", "llama-3-8b", "--kv-dtype", name)
    assert result.exit_code == EXIT_BAD_INPUT
    line = " ".join(result.output.split())
    assert f"{name!r} is an fp4 KV cache mha does not price yet" in line and "did you mean" not in line


def test_a_mistyped_fp8_encoding_is_never_offered_the_other_one(cli):
    """Trial 333 #8: `fp8e4m3` was offered fp8_e5m2, another encoding; torch's fp8_e4m3fn was refused."""
    for typed, offered in (("fp8e4m3", "fp8_e4m3"), ("fp8e5m2", "fp8_e5m2")):
        line = " ".join(cli.run("kv", "llama-3-8b", "--kv-dtype", typed).output.split())
        hint = line.split("did you mean ")[1].split("?")[0]
        assert offered in hint and ("e5m2" if offered.endswith("e4m3") else "e4m3") not in hint, line
    assert cli.json("kv", "llama-3-8b", "--kv-dtype", "fp8_e4m3fn")["kv"]["bytes_per_token"] == 65_536


def test_vllms_nvfp4_cache_is_priced_by_hand():
    """vLLM 0.20.0+'s nvfp4 cache: per head, K and V each head_dim / 2 bytes of fp4 values and head_dim / 16 of fp8
    scales (nvfp4_kv_cache_full_dim, 0.32.0): Llama-3-8B, 32 layers x 8 KV heads x 2 x (64 + 8) = 36,864 B a token,
    against 131,072 in bf16; refused for MLA, as vLLM refuses it; a vLLM before 0.20.0 has none."""
    from mha_cli.core.engine.plan import kv_format_note
    from mha_cli.core.kv import check_kv_dtype_fits, kv_footprint
    from mha_cli.core.presets import get_preset

    llama = get_preset("llama-3-8b")
    assert kv_footprint(llama, kv_dtype="nvfp4", seq_len=8192).bytes_per_token == 32 * 8 * 2 * 72
    with pytest.raises(Exception, match="refuses with MLA"):
        check_kv_dtype_fits(get_preset("deepseek-v3"), "nvfp4")
    assert kv_format_note("vllm", "nvfp4") is None and kv_format_note("vllm", "nvfp4", (0, 21)) is None
    assert "vLLM 0.20 has no nvfp4 KV cache (from 0.21.0)" in str(kv_format_note("vllm", "nvfp4", (0, 20)))
    assert kv_format_note("sglang", "nvfp4") is not None


def test_plan_launches_the_nvfp4_cache_only_where_vllm_has_it(cli):
    args = ("plan", "llama-3-8b", "--target", "b200", "--tp", "1", "--kv-dtype", "nvfp4", "--closed-form")
    found = cli.json(*args)
    assert "--kv-cache-dtype nvfp4" in found["launch"]["vllm"]
    older = cli.run(*args, "--engine", "vllm@0.20")  # 0.20.0 takes the flag and raises NotImplementedError
    assert older.exit_code == EXIT_BAD_INPUT and "vLLM 0.20 has no nvfp4 KV cache" in older.output
    checked = cli.json("check", "llama-3-8b", "--target", "b200", "--kv-dtype", "nvfp4", "--engine", "vllm@0.20")
    assert any("vLLM 0.20 has no nvfp4 KV cache" in note for note in checked["deployment_warnings"])


def test_a_kv_format_the_release_lacks_is_not_judged_as_a_deployment_too_large(cli):
    """An 8B on a B200 with an nvfp4 cache on vLLM 0.14: the release refuses the format, not the memory. It was
    MHA026's "0 sequences fit; none: even 32 x b200 has no room beside the weights" (trial 274 #2): now no fit rule
    fires, the format's warning stands (--strict fails on it), and the ways out are the formats it runs, each checked."""
    args = ("llama-3-8b", "--target", "b200", "--kv-dtype", "nvfp4", "--engine", "vllm@0.14")
    checked = cli.json("check", *args)
    assert not {"MHA025", "MHA026"} & set(checked["rules_fired"])
    assert any("vLLM 0.14 has no nvfp4 KV cache" in note for note in checked["deployment_warnings"])
    assert cli.run("check", *args, "--strict").exit_code == 1
    text = " ".join(cli.run("check", *args).output.split())  # the verdict line as one line
    assert "refuses the deployment whatever its memory" in text and "does not fit the target" not in text
    kv = cli.json("kv", *args)
    assert [way["change"] for way in kv["ways_out"]] == ["--kv-dtype fp8", "--kv-dtype bf16"]
    assert all(way["fits"] for way in kv["ways_out"])
    assert cli.json("check", "llama-3-8b", "--target", "b200", "--kv-dtype", "fp8", "--engine", "vllm@0.14")["passed"]


def test_a_recommended_files_unknown_target_is_located_before_its_tp_is_checked(cli, tmp_path):
    """A `recommend --out` file has deployment.tp, whose check resolved the file's target first and gave the bare
    line, without the file or the field (review 249)."""
    path = tmp_path / "design.yaml"
    path.write_text("model:\n  d_model: 64\n  n_layers: 2\n  n_heads: 4\n  vocab_size: 100\n  d_ff: 128\n"
                    "deployment:\n  tp: 1\n  target: h1000\n")  # fmt: skip
    result = cli.run("kv", str(path))
    assert (
        result.exit_code == EXIT_BAD_INPUT and "design.yaml: deployment.target: unknown target 'h1000'" in result.output
    )
    assert cli.run("kv", str(path), "--target", "h100").exit_code == 0


def test_an_interleaved_moe_says_which_layers_are_dense(cli, tmp_path):
    """Llama 4 Maverick (interleave_moe_layer_step 2: MoE on layers 1, 3, ..., 47) printed "first 1 layer dense (d_ff
    16384); MoE on 24 of 48 layers", as if one layer were dense where 24 are (found by newuser trial 251); Jamba's
    period 2 from layer 1 alike. DeepSeek's leading dense layers keep their words."""
    config = json.loads(reference_hf_config("llama-4-scout-17b-16e").read_text())
    text = dict(config["text_config"], interleave_moe_layer_step=2, num_local_experts=128)
    path = tmp_path / "maverick" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(config | {"text_config": text}))
    shown = " ".join(cli.run("kv", str(path)).output.split())
    assert "MoE on 24 of 48 layers (every 2 from layer 1), the others dense (d_ff 16384)" in shown
    assert "first 1 layer dense" not in shown
    jamba = " ".join(cli.run("kv", str(reference_hf_config("jamba-mini-1.5"))).output.split())
    assert "MoE on 16 of 32 layers (every 2 from layer 1), the others dense" in jamba
    assert "first 3 layers dense (d_ff 18432)" in " ".join(cli.run("kv", "deepseek-v3").output.split())


def test_a_moe_period_past_the_last_layer_is_said_not_a_crash(cli, tmp_path):
    """n_layers 2 with MoE every 4 layers from layer 3: no layer is MoE, and the render's search for the first one
    raised StopIteration, exit 70 in kv and check (the review of this change)."""
    from mha_cli.core.config_io import config_to_yaml
    from mha_cli.core.schemas import MhaConfig, ModelSpec

    moe = {"n_experts": 8, "n_active_experts": 2, "d_ff_expert": 256, "layer_period": 4, "layer_offset": 3}
    model = ModelSpec(d_model=256, n_layers=2, n_heads=4, vocab_size=1000, d_ff=512, block={"moe": moe})
    path = tmp_path / "moe.yaml"
    path.write_text(config_to_yaml(MhaConfig(model=model)))
    shown = cli.run("kv", str(path))
    assert shown.exit_code == 0 and "MoE on none of 2 layers (period 4), all dense (d_ff 512)" in " ".join(
        shown.output.split()
    )
    assert cli.run("check", str(path)).exit_code in (0, 1)


def test_a_pool_too_large_is_said_to_be_too_large(cli):
    """--kv-cache-gib 1e30 said "give the pool in GiB, greater than 0" (found by newuser trial 255)."""
    result = cli.run("kv", "llama-3-8b", "--target", "h100", "--kv-cache-gib", "1e30")
    assert result.exit_code == 2 and "greater than 0 and at most 1,048,576 (1 PiB)" in result.output


def test_an_empty_config_json_is_said_in_hugging_faces_words(cli, tmp_path):
    """A config.json of {} said "model: missing (required)", mha's own schema's words (found by newuser trial 255)."""
    (tmp_path / "config.json").write_text("{}")
    result = cli.run("kv", str(tmp_path))
    assert result.exit_code == 2
    assert "a config.json without model_type, architectures or hidden_size (nor mha's own model:): it is empty" in (
        " ".join(result.output.split())
    )


def test_a_design_past_its_context_is_named_as_the_design(cli, tmp_path):
    """recommend names its designs "recommended": check said "the 4,096 tokens recommended was trained for" (trial
    262 #8)."""
    out = tmp_path / "r.yaml"
    assert (
        cli.run("recommend", "--params", "350M", "--seq", "4096", "--target", "h100", "--out", str(out)).exit_code == 0
    )
    data = cli.json("kv", str(out), "--seq", "16k")
    assert "seq_len 16,384 exceeds the 4,096 tokens the design was made for" in data["warnings"]


def test_pipeline_stages_are_refused_naming_the_command_that_prices_them(cli):
    """Trial 300 #5: ``mha kv --pp 2`` was answered "No such option: --pp (did you mean --tp ...)", offering another
    parallelism; vLLM's spelling too. One stage is what kv prices, taken."""
    for flag in ("--pp", "--pipeline-parallel-size"):
        refused = cli.run("kv", "llama-3-8b", flag, "2")
        assert refused.exit_code == 2 and "`mha plan SOURCE --target ... --pp 2` prices each stage" in refused.output
    assert cli.json("kv", "llama-3-8b", "--pp", "1")["bytes_per_token"] == 131_072


@pytest.mark.parametrize("command", [("kv", "llama-3-8b"), ("recommend", "--params", "7B", "--seq", "8192")])
def test_a_step_of_fewer_tokens_than_the_batch_is_no_refusal_of_an_option_not_given(cli, command):
    """Trial 311 #8: ``--batch 8 --max-num-batched-tokens 1`` was refused as "--max-num-seqs (8) must not exceed
    --max-num-batched-tokens (1)": the --max-num-seqs way out, probed at the batch, raised vLLM's refusal as the
    command's. A cap the engine refuses is no way out; the plan says the batch does not run at once."""
    result = cli.run(*command, "--target", "h100", "--batch", "8", "--max-num-batched-tokens", "1")
    assert result.exit_code == 0 and "--max-num-seqs (8)" not in result.output
    data = cli.json(*command, "--target", "h100", "--batch", "8", "--max-num-batched-tokens", "1")
    assert data["memory"]["engine"]["max_num_seqs"] == 1 and data["memory"]["fits"] is False


@pytest.mark.parametrize(("engine", "offered"), [("vllm", False), ("sglang", True), ("trtllm", True)])
def test_a_sequence_cap_past_the_step_is_a_way_out_where_the_engine_takes_it(cli, engine, offered):
    """vLLM refuses max_num_seqs above max_num_batched_tokens; SGLang's chunked-prefill size and TensorRT-LLM's step
    cap no running requests, so --max-num-seqs 600 with a 512-token step is their way out (review 312 #1: it was
    dropped for every engine)."""
    data = cli.json("kv", "llama-3-8b", "--target", "h100", "--engine", engine, "--batch", "600", "--seq", "512",
                    "--max-num-seqs", "8", "--max-num-batched-tokens", "512")  # fmt: skip
    texts = [way["text"] for way in data["ways_out"]]
    assert any(text.startswith("--max-num-seqs 600 ") for text in texts) == offered and "--batch 8" in texts


def test_vllm_logs_its_capacity_on_one_line_from_028(cli):
    """Trial 326 #3: vLLM 0.28 and later log the pool's tokens and its maximum concurrency as one line
    (``update_kv_cache_capacity``; two ``info_once`` lines through 0.27.0), so the line a user greps for is that one."""
    latest = cli.json("kv", "llama-3-8b", "--target", "h100", "--seq", "8k")["memory"]["engine"]["log_lines"]
    assert latest[1:] == ["GPU KV cache size: 435,744 tokens, Maximum concurrency for 8,192 tokens per request: 53.19x"]
    for release in ("vllm@0.28.0", "vllm@0.34.0"):
        lines = cli.json("kv", "llama-3-8b", "--target", "h100", "--seq", "8k", "--engine", release)["memory"]
        assert len(lines["engine"]["log_lines"]) == 2 and ", Maximum concurrency" in lines["engine"]["log_lines"][1]
    older = cli.json("kv", "llama-3-8b", "--target", "h100", "--seq", "8k", "--engine", "vllm@0.27.0")
    assert older["memory"]["engine"]["log_lines"][1:] == [
        "GPU KV cache size: 448,448 tokens",
        "Maximum concurrency for 8,192 tokens per request: 54.74x",
    ]


def test_vllms_quantization_flag_as_vllm_0_21_reads_each_checkpoint(cli, tmp_path):
    """Review 329 #1-#4, against vLLM 0.21.0's ``_verify_quantization`` and its overrides: a bitsandbytes checkpoint's
    method is bitsandbytes (fp8 refused); the Marlin and MoE WNA16 kernels of a GPTQ checkpoint are its own method
    (``override_quantization_method`` takes them), AWQ's Marlin is not; gpt-oss's MXFP4 and ModelOpt checkpoints run as
    stored whatever is typed (their overrides ignore it); a checkpoint mha cannot read stays refused, not priced in
    the format typed."""
    base = json.loads((REPO / "tests" / "fixtures" / "hf_configs" / "llama-3-8b.json").read_text())
    configs = {
        "bnb": {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4"},
        "gptq": {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True},
        "hqq": {"quant_method": "hqq", "weight_bits": 4},
    }
    paths = {}
    for name, quantization in configs.items():
        paths[name] = tmp_path / f"{name}.json"
        paths[name].write_text(json.dumps({**base, "quantization_config": quantization}))

    def weights(*args: str) -> tuple[str, int]:
        data = cli.json("kv", *args)
        return data["deployment"]["weight_dtype"], data["weight_bytes"]

    assert weights(str(paths["bnb"]), "--quantization", "bitsandbytes") == weights(str(paths["bnb"]))
    assert weights(str(paths["bnb"]))[0] == "nf4"
    for kernel in ("gptq_marlin", "moe_wna16", "gptq"):
        assert weights(str(paths["gptq"]), "--quantization", kernel) == weights(str(paths["gptq"]))
    for config, typed, said in ((paths["bnb"], "fp8", "says bitsandbytes"), (paths["gptq"], "awq_marlin", "says gptq")):
        refused = cli.run("kv", str(config), "--quantization", typed)
        assert refused.exit_code == EXIT_BAD_INPUT and said in refused.stderr and len(refused.stderr.splitlines()) == 1
    hf_configs = REPO / "tests" / "fixtures" / "hf_configs"
    for config in ("gpt-oss-20b.json", "kimi-k2.6-nvfp4.json"):
        stored = weights(str(hf_configs / config))
        assert weights(str(hf_configs / config), "--quantization", "fp8") == stored
    unread = cli.run("kv", str(paths["hqq"]), "--quantization", "fp8")
    assert (
        unread.exit_code == EXIT_BAD_INPUT and "quant_method 'hqq' is not a weight format mha prices" in unread.stderr
    )


def test_the_per_rank_row_of_an_mla_cache_names_the_latent_not_kv_heads(cli):
    """Trial 338 #10: DeepSeek-V3 at tp 8 read "tp=8: 1 KV head(s)"; its cache is one latent, whole on every rank
    (61 x 576 x 2 = 70,272 B a token per rank, as on one GPU). A GQA model keeps its heads (Llama-3-70B: 1 of 8)."""
    from mha_cli.cli.app import app

    def per_rank_row(*args: str) -> str:
        shown = cli.runner.invoke(app, ["kv", *args, "--tp", "8"], env={"COLUMNS": "200"}).stdout
        return " ".join(next(line for line in shown.splitlines() if "per token, per rank" in line).split())

    mla = per_rank_row("deepseek-v3")
    assert "70,272" in mla and "tp=8: the latent on every rank (not sharded)" in mla and "KV head" not in mla
    assert "tp=8: 1 KV head(s)" in per_rank_row("llama-3-70b")


def test_a_hybrids_token_count_says_it_is_concurrency_times_the_context(cli):
    """Trial 338 #9: Qwen3-Next on 4 x H100 showed 2,219,739 tokens beside "7,587 blocks of 320 x 4 groups", which
    make 2,427,840: vLLM logs a hybrid's tokens as max concurrency x max_model_len, and the row now says so."""
    from mha_cli.cli.app import app

    args = ["kv", "qwen3-next-80b-a3b", "--target", "4xh100", "--seq", "32k"]
    engine = cli.json(*args)["memory"]["engine"]
    assert engine["kv_tokens"] == int(engine["max_concurrency"] * 32_768) != engine["kv_blocks"] // 4 * 320
    shown = cli.runner.invoke(app, args, env={"COLUMNS": "250"}).stdout
    row = " ".join(next(line for line in shown.splitlines() if "KV cache size (tokens)" in line).split())
    assert f"{engine['kv_tokens']:,}" in row and "max concurrency x 32,768, as vLLM logs it" in row


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_kv_lists_the_engines_refusals_check_counts(cli, engine):
    """check counted SGLang's refusal of a context past Llama-2-7B's 4,096 tokens among its warnings and kv's JSON
    warnings lacked it (trial 357 #2): both now list the same lines (core.engine_warnings)."""
    args = ("llama-2-7b", "--seq", "32k", "--target", "h100", "--engine", engine)
    kv, check = cli.json("kv", *args), cli.json("check", *args)
    override = {"sglang": "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1", "vllm": "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"}
    assert any(override[engine] in line for line in kv["warnings"])
    assert kv["warnings"] == check["deployment_warnings"]


def test_vllm_s_data_parallel_size_on_a_dense_model_is_replicas_in_kv_as_in_plan(cli):
    """kv refused `--tensor-parallel-size 4 --data-parallel-size 2` on a dense model that plan accepts and writes in
    its lines (trial 357 #4): the same plan as --tp 4 on the 8 GPUs, two replicas."""
    pasted = cli.json(
        "kv", "llama-3-8b", "--target", "8xh100", "--tensor-parallel-size", "4", "--data-parallel-size", "2"
    )
    plain = cli.json("kv", "llama-3-8b", "--target", "8xh100", "--tp", "4")
    assert pasted["memory"] == plain["memory"] and pasted["memory"]["replicas"] == 2


def test_an_odd_rotary_width_is_warned_and_still_priced(cli, tmp_path):
    """Trial 392 #4: Llama-3.1-8B's config at hidden_size 4,000 gives head_dim 125, priced (32 x 8 x 125 x 2 x 2 B =
    128,000 B a token) without a word, where ``mha check`` fails it (MHA095: RoPE turns pairs). kv warns in MHA095's
    words; the published config (head_dim 128) is not warned (the control), nor is a model none of whose layers
    rotates (review 395 #1: Jamba at hidden_size 4,000, whose check then failed MHA095 too)."""
    config = json.loads(Path("tests/fixtures/hf_configs/llama-3.1-8b.json").read_text())
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps(config | {"hidden_size": 4000}))
    data = cli.json("kv", str(odd))
    assert data["bytes_per_token"] == 32 * 8 * 125 * 2 * 2
    said = "attention.head_dim 125 rotates 125 values a head: RoPE turns them in pairs"
    assert any(w.startswith(said) and w.endswith("(`mha check`'s MHA095; the bytes are priced as given)")
               for w in data["warnings"])  # fmt: skip
    assert not any("rotates" in w for w in cli.json("kv", "tests/fixtures/hf_configs/llama-3.1-8b.json")["warnings"])
    jamba = json.loads(Path("tests/fixtures/hf_configs/jamba-mini-1.5.json").read_text())
    unrotated = tmp_path / "jamba.json"
    unrotated.write_text(json.dumps(jamba | {"hidden_size": 4000}))
    assert not any("rotates" in w for w in cli.json("kv", str(unrotated))["warnings"])
    checked = cli.run("check", str(unrotated))
    assert checked.exit_code in (0, 1) and "MHA095" not in checked.output  # 1: another rule's finding, not a crash


def test_the_state_convention_note_names_kda_only_on_kda(cli):
    """Trial 392 #6: every hybrid's note read "..., KDA's in fp32", Kimi-Linear's mixer, on Qwen3-Next too."""
    said = {}
    for name in ("kimi-linear-48b-a3b", "qwen3-next-80b-a3b"):
        data = cli.json("kv", f"tests/fixtures/hf_configs/{name}.json")
        said[name] = next(w for w in data["warnings"] if w.startswith("fixed state as vLLM allocates it"))
    assert "KDA's recurrent state in fp32)" in said["kimi-linear-48b-a3b"]
    assert "KDA" not in said["qwen3-next-80b-a3b"] and "does not type in the model dtype)" in said["qwen3-next-80b-a3b"]


def test_a_typed_tp_that_splits_no_heads_names_the_largest_that_does_on_a_multi_gpu_target(cli):
    """Trial 406 #3: docs/input-limits.md says the message names the largest tp that splits the model on a multi-GPU
    target; a typed --tp 3 on 6 x H100 (Llama-3-8B: 32 query, 8 KV heads) named none, only a tp from the device count
    did. Both name --tp 2 (which divides the 6 devices, 3 replicas); the control, one device, has nothing to keep."""
    typed = cli.run("kv", "llama-3-8b", "--target", "6xh100", "--tp", "3")
    counted = cli.run("kv", "llama-3-8b", "--target", "6xh100")
    for result, tp in ((typed, 3), (counted, 6)):
        assert result.exit_code == 2
        assert result.stderr.strip() == (
            f"error: n_heads (32) must be divisible by tp ({tp}): pick a tp that divides it; or split less and keep"
            " replicas: --tp 2"
        )
    assert cli.json("kv", "llama-3-8b", "--target", "6xh100", "--tp", "2")["memory"]["replicas"] == 3
    assert "keep replicas" not in cli.run("kv", "llama-3-8b", "--target", "h100", "--tp", "3").stderr
    planned = cli.run("plan", "llama-3-8b", "--target", "6xh100", "--tp", "3", "--closed-form")  # review 408 #8
    assert planned.exit_code == 2 and planned.stderr.strip().endswith("; or split less and keep replicas: --tp 2")
    staged = cli.run("plan", "llama-3-8b", "--target", "6xh100", "--tp", "3", "--pp", "2", "--closed-form")
    assert staged.stderr.strip().endswith("keep replicas: --tp 1")  # review 409 #3: tp x pp divides the 6
    # review 408 #1: "split less" names a smaller tp only (Falcon-H1's 2 KV heads: tp 6 replicates them evenly)
    falcon = cli.run("kv", "falcon-h1-7b", "--target", "6xh100", "--tp", "3").stderr
    assert falcon.strip().endswith("or split less and keep replicas: --tp 2")
