"""GGUF files read from their header alone: metadata mapped back to the config.json the file was converted from,
the tensor table's bytes from ggml's block sizes. Headers are written by gguf-py (``tests/gguf_fixture.py``), the
reference on both sides: its key names, its writer, its table of type sizes."""

from __future__ import annotations

import json
import struct

import gguf
import pytest

from mha_cli.core.errors import EXIT_BAD_INPUT
from mha_cli.core.gguf import GGML_TYPES, read_gguf_header
from mha_cli.core.kv import kv_footprint
from mha_cli.core.params import count_params
from mha_cli.core.sources import load_source
from tests.conftest import reference_hf_config
from tests.gguf_fixture import BF16, F32, Q4_K, HeaderWriter, write_decoder

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
    assert (from_gguf.moe is None) == (experts == 0)


def test_a_llama_file_with_experts_is_mixtral(tmp_path):
    config = {**fixture("llama-3-8b"), "num_hidden_layers": 2, "num_experts_per_tok": 2}
    path = tmp_path / "mixtral.gguf"
    write_decoder(path, "llama", config, experts=8).close()
    model = load_source(str(path)).model
    assert model.family == "mixtral" and model.moe.n_experts == 8 and model.moe.n_active_experts == 2


def test_a_key_that_may_change_a_figure_is_refused_by_name(tmp_path, cli):
    path = tmp_path / "windowed.gguf"
    written = write_decoder(path, "llama", {**fixture("llama-3-8b"), "num_hidden_layers": 2})
    written.writer.add_sliding_window(4096)
    written.close()
    assert "llama.attention.sliding_window" in one_line_error(cli.run("kv", str(path)))


def test_an_architecture_not_mapped_is_refused_with_the_way_out(tmp_path, cli):
    path = tmp_path / "gemma.gguf"
    out = HeaderWriter(path, "gemma3")
    out.tensor("token_embd.weight", (256, 64), F32)
    out.close()
    error = one_line_error(cli.run("kv", str(path)))
    assert "'gemma3'" in error and "config.json" in error


def test_value_heads_narrower_than_key_heads_are_refused(tmp_path, cli):
    path = tmp_path / "odd.gguf"
    written = write_decoder(path, "llama", {**fixture("llama-3-8b"), "num_hidden_layers": 2, "head_dim": 128})
    written.writer.add_uint32("llama.attention.value_length", 64)  # a second value: gguf-py keeps the last write
    written.close()
    assert "value_length" in one_line_error(cli.run("kv", str(path)))


def test_broken_files_get_one_line(tmp_path, cli):
    path = tmp_path / "model.gguf"
    write_decoder(path, "llama", {**fixture("llama-3-8b"), "num_hidden_layers": 2}).close()
    whole = path.read_bytes()
    cases = {
        "truncated": whole[: len(whole) // 2],
        "not gguf": b"PK\x03\x04" + whole[4:],
        "big-endian": whole[:4] + struct.pack(">I", 3) + whole[8:],
        "empty": b"",
    }
    for label, data in cases.items():
        path.write_bytes(data)
        error = one_line_error(cli.run("kv", str(path)))
        assert str(path.name) in error, (label, error)


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
