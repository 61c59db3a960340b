"""GGUF files read from their header alone: metadata mapped back to the config.json the file was converted from,
the tensor table's bytes from ggml's block sizes. Headers are written by gguf-py (``tests/gguf_fixture.py``), the
reference on both sides: its key names, its writer, its table of type sizes."""

from __future__ import annotations

import json
import os
import struct

import gguf
import pytest

from mha_cli.core.errors import EXIT_BAD_INPUT
from mha_cli.core.gguf import GGML_TYPES, read_gguf_header
from mha_cli.core.kv import kv_footprint
from mha_cli.core.params import count_params
from mha_cli.core.sources import load_source
from tests.conftest import reference_hf_config
from tests.gguf_fixture import BF16, F32, Q4_K, HeaderWriter, write_decoder, write_mla_decoder

LLAMA_3_8B_BF16 = 32 * 2 * 8 * 128 * 2  # layers x (K, V) x KV heads x head_dim x bf16 bytes: 131,072
LLAMA_3_8B_PARAMS = 8_030_261_248  # Meta's model card: 8.03B


def fixture(name: str) -> dict:
    return json.loads(reference_hf_config(name).read_text())


def one_line_error(result) -> str:
    assert result.exit_code == EXIT_BAD_INPUT, result.output
    assert "Traceback" not in result.output and len(result.stderr.strip().splitlines()) == 1, result.stderr
    return result.stderr


def test_every_type_has_ggml_block_and_size():
    """Each ggml type mha prices stores as many values in as many bytes as gguf-py's table says."""
    for type_id, ours in GGML_TYPES.items():
        assert gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType(type_id)] == (ours.block, ours.block_bytes), ours.name
        assert gguf.GGMLQuantizationType(type_id).name == ours.name


def test_llama_3_8b_header_prices_the_published_figures(tmp_path, cli):
    path = tmp_path / "Meta-Llama-3-8B-Instruct-Q4_K_M.gguf"
    written = write_decoder(path, "llama", fixture("llama-3-8b"))
    written.close()
    header = read_gguf_header(path)
    assert header.tensor_bytes() == written.total  # every tensor's bytes as gguf-py sizes them
    assert len(header.tensors) == 2 + 32 * 9 + 1
    q4 = next(t for t in header.tensors if t.name == "blk.0.attn_q.weight")
    assert q4.shape == (4096, 4096) and q4.bytes == 4096 * 4096 // 256 * 144  # 144 bytes per 256 values
    source = load_source(str(path))
    assert source.kind == "gguf" and source.served.model == str(path)
    assert count_params(source.model).total == LLAMA_3_8B_PARAMS
    assert kv_footprint(source.model, seq_len=8192).bytes_per_token == LLAMA_3_8B_BF16
    out = cli.json("kv", str(path))
    assert out["bytes_per_token"] == LLAMA_3_8B_BF16 and out["source_kind"] == "gguf"
    assert any("Q4_K 60%, Q6_K 40%" in line for line in out["assumptions"])


@pytest.mark.parametrize(
    ("arch", "name", "experts"),
    [("qwen3", "qwen3-8b", 0), ("qwen3moe", "qwen3-235b-a22b-instruct-2507", 128), ("llama", "llama-3.1-70b", 0)],
)
def test_a_header_reads_as_the_config_it_was_converted_from(tmp_path, arch, name, experts):
    """The model from the GGUF metadata equals the model from the published config.json: parameters, KV bytes."""
    config = fixture(name)
    path = tmp_path / f"{name}.gguf"
    write_decoder(path, arch, config, experts=experts, tied=config.get("tie_word_embeddings", False)).close()
    from_gguf, from_json = load_source(str(path)).model, load_source(str(reference_hf_config(name))).model
    assert count_params(from_gguf).total == count_params(from_json).total
    for seq in (1, 8192):
        assert (
            kv_footprint(from_gguf, seq_len=seq).bytes_per_token == kv_footprint(from_json, seq_len=seq).bytes_per_token
        )
    assert (from_gguf.block.moe is None) == (experts == 0)


def test_a_llama_file_with_experts_is_mixtral(tmp_path):
    config = {**fixture("llama-3-8b"), "num_hidden_layers": 2, "num_experts_per_tok": 2}
    path = tmp_path / "mixtral.gguf"
    write_decoder(path, "llama", config, experts=8).close()
    model = load_source(str(path)).model
    assert model.family == "mixtral" and model.block.moe.n_experts == 8 and model.block.moe.n_active_experts == 2


def test_a_key_that_may_change_a_figure_is_refused_by_name(tmp_path, cli):
    path = tmp_path / "windowed.gguf"
    written = write_decoder(path, "llama", {**fixture("llama-3-8b"), "num_hidden_layers": 2})
    written.writer.add_sliding_window(4096)
    written.close()
    assert "llama.attention.sliding_window" in one_line_error(cli.run("kv", str(path)))


def test_an_architecture_not_mapped_is_refused_with_the_way_out(tmp_path, cli):
    path = tmp_path / "phi3.gguf"
    out = HeaderWriter(path, "phi3")
    out.tensor("token_embd.weight", (256, 64), F32)
    out.close()
    error = one_line_error(cli.run("kv", str(path)))
    assert "'phi3'" in error and "config.json" in error


def test_value_heads_narrower_than_key_heads_are_refused(tmp_path, cli):
    path = tmp_path / "odd.gguf"
    written = write_decoder(path, "llama", {**fixture("llama-3-8b"), "num_hidden_layers": 2, "head_dim": 128})
    written.writer.add_uint32("llama.attention.value_length", 64)  # a second value: gguf-py keeps the last write
    written.close()
    assert "value_length" in one_line_error(cli.run("kv", str(path)))


def test_broken_files_get_one_line(tmp_path, cli):
    path = tmp_path / "model.gguf"
    written = write_decoder(path, "llama", {**fixture("llama-3-8b"), "num_hidden_layers": 2})
    written.close()
    with path.open("rb") as handle:
        whole = handle.read(written.header_bytes)  # the header: the data is a hole of the file
    cases = {
        "truncated": whole[: len(whole) // 2],
        "header alone": whole,  # its tensor table runs past the file (a partial download)
        "not gguf": b"PK\x03\x04" + whole[4:],
        "big-endian": whole[:4] + struct.pack(">I", 3) + whole[8:],
        "empty": b"",
    }
    for label, data in cases.items():
        path.write_bytes(data)
        error = one_line_error(cli.run("kv", str(path)))
        assert str(path.name) in error, (label, error)


def test_a_float32_key_reads_as_the_decimal_it_was_written_from():
    from mha_cli.core.gguf import shortest_float32

    for written in (2.827, 1e-6, 1e-5, 0.1, 50.0, 1_000_000.0):
        widened = struct.unpack("<f", struct.pack("<f", written))[0]  # what a float32 key holds
        assert widened != written or written in (50.0, 1_000_000.0)
        assert shortest_float32(widened) == written


def test_bf16_embedding_bytes_are_two_a_value(tmp_path):
    path = tmp_path / "small.gguf"
    out = HeaderWriter(path, "llama")
    out.tensor("token_embd.weight", (1000, 64), BF16)
    out.tensor("blk.0.attn_q.weight", (64, 256), Q4_K)
    out.close()
    header = read_gguf_header(path)
    assert [t.bytes for t in header.tensors] == [1000 * 64 * 2, 64 * 256 // 256 * 144]


def test_the_plan_holds_the_files_bytes_and_launches_it_with_vllm(tmp_path, cli):
    """Weights per rank are the file's tensors (its F32 norms held in bf16, as the engine holds them), shared over
    tp as the weight inventory splits them; the launch line serves the file with vLLM only."""
    path = tmp_path / "llama3.gguf"
    written = write_decoder(path, "llama", fixture("llama-3-8b"))
    written.close()
    norms = (2 * 32 + 1) * 4096  # two per layer and the final one, F32 in the file
    held = written.total - norms * 2  # 4 B a value stored, 2 held
    one = cli.json("kv", str(path), "--target", "h100")
    assert one["weights_from"] == "checkpoint headers"
    assert one["memory"]["engine"]["weights_bytes_per_rank"] == held
    assert any("Q4_K 60%, Q6_K 40%" in line and "as int4" in line for line in one["assumptions"])
    two = cli.json("kv", str(path), "--target", "2xh100")["memory"]["engine"]["weights_bytes_per_rank"]
    assert held / 2 < two < held * 0.52  # half of it, and the replicated norms
    plan = cli.json("plan", str(path), "--target", "2xh100", "--isl", "1024", "--osl", "128", "--concurrency", "8",
                    "--closed-form")  # fmt: skip
    assert list(plan["launch"]) == ["vllm"] and plan["launch"]["vllm"].startswith(f"vllm serve {path} ")
    assert "--tokenizer" in plan["launch_note"]


def test_a_disaggregated_plan_launches_a_gguf_file_with_vllm_only(tmp_path, cli):
    """The disaggregated lines, like the aggregated ones, serve the file with vLLM's GGUF loader alone: SGLang was
    not priced for it (control: the same model from its config.json gets both engines' lines)."""
    path = tmp_path / "llama3.gguf"
    write_decoder(path, "llama", fixture("llama-3-8b"), token_list=False).close()
    args = ("--target", "2xh100", "--isl", "1024", "--osl", "128", "--disaggregated", "--closed-form")
    plan = cli.json("plan", str(path), *args)
    assert list(plan["launch"]) == ["vllm"] and f"vllm serve {path} " in plan["launch"]["vllm"]
    assert "both engines" not in plan["launch_note"] and "--tokenizer" in plan["launch_note"]
    assert list(cli.json("plan", str(reference_hf_config("llama-3-8b")), *args)["launch"]) == ["vllm", "sglang"]


def test_a_gguf_file_keeps_its_own_format_and_vllm(tmp_path, cli):
    """Another weight format or engine would price something the file is not: both refused in one line."""
    path = tmp_path / "m.gguf"
    write_decoder(path, "llama", {**fixture("llama-3-8b"), "num_hidden_layers": 2}).close()
    assert "--weight-dtype bf16" in one_line_error(
        cli.run("kv", str(path), "--target", "h100", "--weight-dtype", "bf16")
    )
    assert "--engine trtllm" in one_line_error(cli.run("plan", str(path), "--target", "h100", "--engine", "trtllm"))
    assert cli.run("kv", str(path), "--target", "h100", "--engine", "vllm@0.20").exit_code == 0


def test_a_header_without_a_head_count_is_one_line(tmp_path, cli):
    path = tmp_path / "partial.gguf"
    out = HeaderWriter(path, "llama")
    out.writer.add_embedding_length(64)
    out.writer.add_block_count(2)
    out.tensor("token_embd.weight", (256, 64), F32)
    out.close()
    assert "llama.attention.head_count" in one_line_error(cli.run("kv", str(path)))


# Gemma 2, Gemma 3 and DeepSeek-V2/V3 (architecture deepseek2), written as llama.cpp's converter writes them ----------


def _same_model_both_ways(path, reference_config: dict) -> tuple:
    """(model from the GGUF header, model from the config.json it stands for)."""
    from mha_cli.core.hf_import import import_hf_config

    return load_source(str(path)).model, import_hf_config(json.loads(json.dumps(reference_config)))


def _assert_priced_alike(from_gguf, from_json) -> None:
    """Parameters and the KV per token at a short and a long context (sliding windows bite at the long one)."""
    assert count_params(from_gguf).total == count_params(from_json.model).total
    for seq in (1, 8192, 131072):
        ours = kv_footprint(from_gguf, seq_len=seq).bytes_per_token
        assert ours == kv_footprint(from_json.model, seq_len=seq).bytes_per_token, seq


VISION_FIXTURES = reference_hf_config("gemma-2-9b").parents[1] / "vision"


def test_gemma2_header_reads_as_its_config(tmp_path):
    config = fixture("gemma-2-9b")
    path = tmp_path / "gemma-2-9b.gguf"
    write_decoder(path, "gemma2", config, tied=True, token_list=False).close()
    from_gguf, from_json = _same_model_both_ways(path, config)
    _assert_priced_alike(from_gguf, from_json)
    assert from_gguf.family == "gemma2" and from_gguf.layers.sliding_window == 4096
    assert (from_gguf.attention.logit_softcap, from_gguf.embeddings.final_logit_softcap) == (50.0, 30.0)
    # 42 layers alternating 4,096-token windows and global ones; 8 KV heads of 256, K and V, bf16
    per_layer = 2 * 8 * 256 * 2
    assert kv_footprint(from_gguf, seq_len=8192).total_bytes == (21 * 4096 + 21 * 8192) * per_layer


def test_gemma3_header_reads_as_its_config_with_five_local_layers_to_one_global(tmp_path):
    config = json.loads((VISION_FIXTURES / "gemma-3-12b-it.json").read_text())["text_config"]
    path = tmp_path / "gemma-3-12b-it.gguf"
    write_decoder(path, "gemma3", config, tied=True, token_list=False).close()
    from_gguf, from_json = _same_model_both_ways(path, config)
    _assert_priced_alike(from_gguf, from_json)
    assert from_gguf.family == "gemma3_text" and from_gguf.attention.qk_norm and from_gguf.layers.sliding_window == 1024
    # 48 layers: 40 hold a 1,024-token window, 8 every token; 8 KV heads of 256, K and V, bf16
    assert kv_footprint(from_gguf, seq_len=8192).total_bytes == (40 * 1024 + 8 * 8192) * 2 * 8 * 256 * 2
    assert any("mmproj" in line for line in load_source(str(path)).assumptions)


def test_gemma3_layer_flags_in_the_header_are_read(tmp_path):
    config = {**json.loads((VISION_FIXTURES / "gemma-3-12b-it.json").read_text())["text_config"],
              "num_hidden_layers": 4}  # fmt: skip
    path = tmp_path / "flags.gguf"
    written = write_decoder(path, "gemma3", config, tied=True, token_list=False)
    written.writer.add_sliding_window_pattern([True, False, True, False])
    written.writer.add_rope_freq_base_swa(20_000.0)  # the local layers' RoPE base, where a converter writes it
    written.close()
    model = load_source(str(path)).model
    assert kv_footprint(model, seq_len=8192).total_bytes == (2 * 1024 + 2 * 8192) * 2 * 8 * 256 * 2
    assert model.attention.rope_local.theta == 20_000.0


@pytest.mark.parametrize(
    ("name", "family", "latent"),
    [("deepseek-v3", "deepseek_v3", 576), ("kimi-k2-instruct", "deepseek_v3", 576),
     ("deepseek-v2-lite", "deepseek_v2", 576)],
)  # fmt: skip
def test_a_deepseek2_header_reads_as_its_config(tmp_path, name, family, latent):
    """MLA's latent (kv_lora_rank 512 + RoPE 64 = 576 values a layer, no factor 2), the experts and the router as the
    config.json says; the family by the router's scoring function (Kimi-K2 is converted as deepseek2 too)."""
    config = fixture(name)
    path = tmp_path / f"{name}.gguf"
    write_mla_decoder(path, config).close()
    from_gguf, from_json = _same_model_both_ways(path, config)
    _assert_priced_alike(from_gguf, from_json)
    assert (
        from_gguf.family == family
        and from_gguf.attention.mla == from_json.model.attention.mla
        and from_gguf.block.moe == from_json.model.block.moe
    )
    assert kv_footprint(from_gguf, seq_len=1).bytes_per_token == config["num_hidden_layers"] * latent * 2


def test_deepseek_v3_header_prices_the_guide_s_figure(tmp_path, cli):
    path = tmp_path / "DeepSeek-V3-Q4_K_M.gguf"
    write_mla_decoder(path, fixture("deepseek-v3")).close()
    out = cli.json("kv", str(path))
    assert out["bytes_per_token"] == 61 * 576 * 2 == 70_272  # GUIDE.md: DeepSeek-V3 in bf16
    assert any("router: sigmoid" in line for line in out["assumptions"])


def test_a_deepseek2_file_from_before_the_latent_cache_reads_the_same_model(tmp_path):
    """Early-2025 files: per-head K (192) and V (128) widths, as many KV heads as query heads; the same model, and
    the note that llama.cpp caches this file per head."""
    config = fixture("deepseek-v2-lite")
    new, old = tmp_path / "new.gguf", tmp_path / "old.gguf"
    write_mla_decoder(new, config).close()
    write_mla_decoder(old, config, latent_cache=False).close()
    assert load_source(str(old)).model == load_source(str(new)).model.model_copy(update={"name": "old"})
    assert any("per-head K and V" in line for line in load_source(str(old)).assumptions)


@pytest.mark.parametrize(
    "drop",
    ["deepseek2.attention.kv_lora_rank", "deepseek2.rope.dimension_count", "deepseek2.attention.value_length_mla",
     "deepseek2.leading_dense_block_count"],
)  # fmt: skip
def test_a_deepseek2_header_missing_a_width_is_refused_naming_it(tmp_path, cli, drop):
    path = tmp_path / "partial.gguf"
    written = write_mla_decoder(path, {**fixture("deepseek-v2-lite"), "num_hidden_layers": 2})
    del written.writer.kv_data[0][drop]
    written.close()
    assert drop in one_line_error(cli.run("kv", str(path)))


def test_a_gemma_header_without_its_head_width_is_refused_naming_it(tmp_path, cli):
    """Gemma's heads are not hidden_size / heads wide (Gemma 3 4B: 256, not 2560 / 8 = 320): no guess."""
    config = {**fixture("gemma-2-9b"), "num_hidden_layers": 2}
    config.pop("head_dim")
    path = tmp_path / "gemma.gguf"
    write_decoder(path, "gemma2", config, tied=True, token_list=False).close()
    assert "gemma2.attention.key_length" in one_line_error(cli.run("kv", str(path)))


def test_a_deepseek2_mla_key_at_odds_with_the_latent_is_refused(tmp_path, cli):
    path = tmp_path / "odd.gguf"
    written = write_mla_decoder(path, {**fixture("deepseek-v2-lite"), "num_hidden_layers": 2})
    written.writer.add_uint32("deepseek2.attention.value_length", 128)  # per-head V beside the latent's keys
    written.close()
    assert "value_length" in one_line_error(cli.run("kv", str(path)))


def test_a_split_gguf_shard_is_refused_not_priced_as_the_model(tmp_path, cli):
    """The first shard of a gguf-split file (split.count 2) was priced as the whole model's weights, about half of
    them (found by newuser trial 255): vLLM loads one file, so the shards are merged first (docs/models.md)."""
    path = tmp_path / "model-00001-of-00002.gguf"
    written = write_decoder(path, "llama", {**fixture("llama-3-8b"), "num_hidden_layers": 2})
    written.writer.add_uint16("split.no", 0)
    written.writer.add_uint16("split.count", 2)
    written.close()
    error = one_line_error(cli.run("kv", str(path)))
    assert "shard 1 of 2 of a split GGUF (split.count)" in error and "llama-gguf-split --merge" in error


def test_a_gguf_cut_short_is_refused_and_a_whole_one_priced(tmp_path, cli):
    """A GGUF whose data ends before its tensor table says (a partial download) was priced at the table's full bytes
    (found by newuser trial 255); the same file at its full size prices."""
    path = tmp_path / "model.gguf"
    written = write_decoder(path, "llama", {**fixture("llama-3-8b"), "num_hidden_layers": 2})
    written.close()
    assert cli.run("kv", str(path)).exit_code == 0
    os.truncate(path, os.path.getsize(path) - 1)
    error = one_line_error(cli.run("kv", str(path)))
    assert "its tensor table needs" in error and "a truncated or partial download?" in error


def test_a_gguf_file_is_not_told_it_needs_a_checkpoint_stored_so(cli, tmp_path):
    """The AWQ/GPTQ warning of kv and check (trial 357 #5) must not fire for weights a file stores (review 363 #3)."""
    path = tmp_path / "l.gguf"
    write_decoder(path, "llama", fixture("llama-3-8b")).close()
    assert not any("calibrated offline" in w for w in cli.json("kv", str(path), "--target", "h100")["warnings"])
