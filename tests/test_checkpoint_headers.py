"""Exact weights from checkpoint headers: small safetensors files written here (by the ``safetensors`` package, or by
hand from the format's README with struct and json, both independent of ``core.checkpoint_headers``) for a bf16, an
fp8-block and an NVFP4 model, each summed against a hand count; a sharded checkpoint with its index; corrupt
headers refused in one line; the note naming a total that disagrees with the config's count; the commands pricing
the rank's weights from the headers and saying so."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from mha_cli.core.checkpoint_headers import tensor_kind
from mha_cli.core.errors import EXIT_BAD_INPUT
from tests.hf_cache_fixture import add_snapshot

HIDDEN, INTER, HEADS, KV_HEADS, HEAD_DIM, VOCAB, LAYERS = 64, 128, 4, 2, 16, 256, 2
LLAMA = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": HIDDEN, "intermediate_size": INTER,
    "num_hidden_layers": LAYERS, "num_attention_heads": HEADS, "num_key_value_heads": KV_HEADS, "vocab_size": VOCAB,
    "max_position_embeddings": 2048, "rms_norm_eps": 1e-5, "tie_word_embeddings": False, "hidden_act": "silu",
    "head_dim": HEAD_DIM, "rope_theta": 500000.0, "torch_dtype": "bfloat16",
}  # fmt: skip

# Hand counts of the tiny Llama above, in parameters: embedding and head 256 x 64 each; per layer q 64x64, k and v
# 32x64, o 64x64 (12,288), gate and up 128x64, down 64x128 (24,576), two norms of 64; the final norm 64.
EMBEDDING = VOCAB * HIDDEN  # 16,384
ATTENTION = 64 * 64 + 32 * 64 + 32 * 64 + 64 * 64  # 12,288 per layer
MLP = 3 * 128 * 64  # 24,576 per layer
NORMS = LAYERS * 2 * 64 + 64  # 320
BF16_BYTES = 2 * (2 * EMBEDDING + LAYERS * (ATTENTION + MLP) + NORMS)  # 213,632
assert BF16_BYTES == 213_632
# One rank of tp 2: half the vocabulary rows (256 is a multiple of 64), q 32x64, k and v 16x64, o 64x32, gate and
# up 64x64, down 64x64; the norms whole.
TP2_RANK_BYTES = 2 * (2 * EMBEDDING // 2 + LAYERS * (2048 + 1024 + 1024 + 2048 + 3 * 4096) + NORMS)  # 107,136
assert TP2_RANK_BYTES == 107_136


def llama_shapes() -> dict[str, tuple[int, ...]]:
    """Every tensor of the tiny Llama checkpoint, Hugging Face's names and (out, in) shapes."""
    shapes: dict[str, tuple[int, ...]] = {"model.embed_tokens.weight": (VOCAB, HIDDEN)}
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        shapes |= {p + "input_layernorm.weight": (HIDDEN,), p + "post_attention_layernorm.weight": (HIDDEN,)}
        shapes |= {p + "self_attn.q_proj.weight": (64, 64), p + "self_attn.k_proj.weight": (32, 64),
                   p + "self_attn.v_proj.weight": (32, 64), p + "self_attn.o_proj.weight": (64, 64)}  # fmt: skip
        shapes |= {p + "mlp.gate_proj.weight": (INTER, HIDDEN), p + "mlp.up_proj.weight": (INTER, HIDDEN),
                   p + "mlp.down_proj.weight": (HIDDEN, INTER)}  # fmt: skip
    return shapes | {"model.norm.weight": (HIDDEN,), "lm_head.weight": (VOCAB, HIDDEN)}


def save_torch(path: Path, shapes: dict[str, tuple[int, ...]], dtype: torch.dtype = torch.bfloat16) -> None:
    """``shapes`` as zero tensors of ``dtype``, written by the safetensors package."""
    save_file({name: torch.zeros(shape, dtype=dtype) for name, shape in shapes.items()}, str(path))


HAND_BITS = {"BF16": 16, "F16": 16, "F32": 32, "F8_E4M3": 8, "U8": 8, "I32": 32}


def write_by_hand(path: Path, tensors: dict[str, tuple[str, tuple[int, ...]]], header: bytes | None = None) -> None:
    """A safetensors file from the format's README: an 8-byte little-endian length, the JSON table, the data."""
    table, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, (dtype, shape) in tensors.items():
        size = 1
        for n in shape:
            size *= n
        nbytes = size * HAND_BITS[dtype] // 8
        table[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    text = json.dumps(table).encode() if header is None else header
    path.write_bytes(struct.pack("<Q", len(text)) + text + bytes(offset))


def model_folder(tmp_path: Path, name: str = "tiny", **config: object) -> Path:
    folder = tmp_path / name
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(LLAMA | config))
    return folder


def bf16_folder(tmp_path: Path, extra: dict[str, tuple[int, ...]] | None = None) -> Path:
    folder = model_folder(tmp_path)
    save_torch(folder / "model.safetensors", llama_shapes() | (extra or {}))
    return folder


def kv_json(cli, *args: str) -> dict:
    return cli.json("kv", *args)


def headers_of(report: dict) -> dict:
    return report["deployment"]["checkpoint_headers"]


def test_a_bf16_checkpoint_is_its_hand_count_by_dtype_and_kind(cli, tmp_path):
    report = kv_json(cli, str(bf16_folder(tmp_path)))
    headers = headers_of(report)
    assert (headers["files"], headers["tensors"], headers["total_bytes"]) == (1, 1 + LAYERS * 9 + 2, BF16_BYTES)
    assert headers["by_dtype"] == {"BF16": BF16_BYTES}
    assert headers["by_kind"] == {
        "embedding": 2 * EMBEDDING, "head": 2 * EMBEDDING, "attention": 2 * LAYERS * ATTENTION,
        "mlp": 2 * LAYERS * MLP, "norms": 2 * NORMS,
    }  # fmt: skip
    assert headers["config_by_kind"] == headers["by_kind"]  # the inventory counts this model exactly
    assert report["weight_bytes"] == BF16_BYTES and report["weights_from"] == "checkpoint headers"
    assert any(a.startswith("weights from 1 checkpoint header: ") for a in report["assumptions"])


def test_a_lora_adapter_beside_the_weights_is_not_counted(cli, tmp_path):
    """PEFT's adapter_model.safetensors (lora_A/lora_B, a saved embedding copy) beside the model's weights was counted
    as weights: 36% more for a rank-256 adapter on Llama-3.2-1B (trial 266 #3)."""
    folder = bf16_folder(tmp_path)
    write_by_hand(folder / "adapter_model.safetensors", {
        "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight": ("BF16", (16, 64)),
        "base_model.model.model.embed_tokens.weight": ("BF16", (VOCAB, HIDDEN)),
    })  # fmt: skip
    (folder / "adapter_config.json").write_text('{"peft_type": "LORA", "r": 16}')
    report = kv_json(cli, str(folder))
    assert headers_of(report)["files"] == 1 and report["weight_bytes"] == BF16_BYTES


def test_a_fp32_file_is_priced_as_the_bf16_an_engine_casts_it_to(cli, tmp_path):
    folder = model_folder(tmp_path)
    write_by_hand(folder / "model.safetensors", {name: ("F32", shape) for name, shape in llama_shapes().items()})
    headers = headers_of(kv_json(cli, str(folder)))
    assert headers["by_dtype"] == {"F32": 2 * BF16_BYTES} and headers["total_bytes"] == BF16_BYTES


FP8_BLOCK = {"quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                                     "weight_block_size": [128, 128]}}  # fmt: skip


def test_an_fp8_block_checkpoint_is_its_hand_count(cli, tmp_path):
    """Linear layers in F8_E4M3 with an F32 ``weight_scale_inv`` per 128 x 128 block (DeepSeek-V3's layout), the
    embedding, head and norms in bf16, at sizes the blocks do not divide."""
    dims = {"hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 4, "num_key_value_heads": 2,
            "head_dim": 64, "vocab_size": 512}  # fmt: skip
    folder = model_folder(tmp_path, **dims, **FP8_BLOCK)
    linear = {"self_attn.q_proj": (256, 256), "self_attn.k_proj": (128, 256), "self_attn.v_proj": (128, 256),
              "self_attn.o_proj": (256, 256), "mlp.gate_proj": (512, 256), "mlp.up_proj": (512, 256),
              "mlp.down_proj": (256, 512)}  # fmt: skip
    tensors: dict[str, torch.Tensor] = {
        "model.embed_tokens.weight": torch.zeros(512, 256, dtype=torch.bfloat16),
        "lm_head.weight": torch.zeros(512, 256, dtype=torch.bfloat16),
        "model.norm.weight": torch.zeros(256, dtype=torch.float32),  # held in bf16, as vLLM's parameter is
    }
    for i in range(LAYERS):
        for norm in ("input_layernorm", "post_attention_layernorm"):
            tensors[f"model.layers.{i}.{norm}.weight"] = torch.zeros(256, dtype=torch.bfloat16)
        for module, (out, inp) in linear.items():
            tensors[f"model.layers.{i}.{module}.weight"] = torch.zeros(out, inp, dtype=torch.float8_e4m3fn)
            blocks = (-(-out // 128), -(-inp // 128))
            tensors[f"model.layers.{i}.{module}.weight_scale_inv"] = torch.zeros(blocks, dtype=torch.float32)
    save_file(tensors, str(folder / "model.safetensors"))
    # Per layer: values 256x256 x2 + 128x256 x2 + 512x256 x3 = 589,824 B; scales (2x2 x2 + 1x2 x2 + 4x2 x2 + 2x4)
    # fp32 blocks = 36 x 4 = 144 B; norms 2 x 256 x 2 = 1,024 B. Embedding and head 512 x 256 x 2 each, final norm 512.
    values, scales, norms = 589_824 * LAYERS, 144 * LAYERS, 1_024 * LAYERS + 512
    report = kv_json(cli, str(folder))
    headers = headers_of(report)
    assert headers["format"] == "fp8-block" and headers["by_dtype"] == {
        "BF16": 2 * 262_144 + norms - 512,
        "F8_E4M3": values,
        "F32": scales + 1_024,
    }
    assert headers["by_kind"]["scales"] == scales
    assert headers["total_bytes"] == 2 * 262_144 + values + scales + norms == 1_706_784
    assert headers["config_bytes"] == headers["total_bytes"]  # what must hold: the format prices each block alike
    assert headers["config_by_kind"] == headers["by_kind"]
    assert report["weight_bytes"] == 1_706_784


NVFP4_SIDECAR = {"producer": {"name": "modelopt"},
                 "quantization": {"quant_algo": "NVFP4", "group_size": 16, "exclude_modules": ["lm_head"]}}  # fmt: skip


def test_an_nvfp4_checkpoint_is_its_hand_count(cli, tmp_path):
    """ModelOpt NVFP4: ``weight`` U8 (out, in/2), an F8_E4M3 ``weight_scale`` per 16 inputs, F32 ``weight_scale_2``
    and ``input_scale`` per matrix; ``lm_head`` excluded (bf16), written by hand."""
    folder = model_folder(tmp_path)
    (folder / "hf_quant_config.json").write_text(json.dumps(NVFP4_SIDECAR))
    tensors: dict[str, tuple[str, tuple[int, ...]]] = {}
    for name, shape in llama_shapes().items():
        if len(shape) == 2 and ".layers." in name:
            module, (out, inp) = name.removesuffix(".weight"), shape
            tensors |= {name: ("U8", (out, inp // 2)), f"{module}.weight_scale": ("F8_E4M3", (out, inp // 16)),
                        f"{module}.weight_scale_2": ("F32", ()), f"{module}.input_scale": ("F32", ())}  # fmt: skip
        else:
            tensors[name] = ("BF16", shape)
    write_by_hand(folder / "model.safetensors", tensors)
    # Per layer: values (12,288 + 24,576) / 2 = 18,432 B, fp8 scales (12,288 + 24,576) / 16 = 2,304 B, 7 matrices x
    # 8 B of fp32 scalars = 56 B, norms 256 B. Embedding and head 32,768 B each, the final norm 128 B.
    values, scales = 18_432 * LAYERS, (2_304 + 56) * LAYERS
    report = kv_json(cli, str(folder))
    headers = headers_of(report)
    assert headers["format"] == "nvfp4"
    assert headers["by_dtype"] == {"BF16": 4 * EMBEDDING + 2 * NORMS, "U8": values, "F8_E4M3": 2_304 * LAYERS,
                                   "F32": 56 * LAYERS}  # fmt: skip
    assert headers["by_kind"]["scales"] == scales
    assert headers["total_bytes"] == 4 * EMBEDDING + values + scales + 2 * NORMS == 107_760
    assert headers["config_bytes"] == headers["total_bytes"] and headers["config_by_kind"] == headers["by_kind"]
    assert report["weight_bytes"] == 107_760


AWQ = {"quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True,
                               "version": "gemm"}}  # fmt: skip


def test_an_awq_checkpoint_is_its_hand_count(cli, tmp_path):
    """AutoAWQ's GEMM layout, written by hand: ``qweight`` I32 (in, out/8), ``qzeros`` I32 (in/128, out/8), ``scales``
    F16 (in/128, out); the embedding, head and norms in F16."""
    dims = {"hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 4, "num_key_value_heads": 2,
            "head_dim": 64, "vocab_size": 512}  # fmt: skip
    folder = model_folder(tmp_path, **dims, **AWQ)
    linear = {"self_attn.q_proj": (256, 256), "self_attn.k_proj": (128, 256), "self_attn.v_proj": (128, 256),
              "self_attn.o_proj": (256, 256), "mlp.gate_proj": (512, 256), "mlp.up_proj": (512, 256),
              "mlp.down_proj": (256, 512)}  # fmt: skip
    tensors: dict[str, tuple[str, tuple[int, ...]]] = {
        "model.embed_tokens.weight": ("F16", (512, 256)), "lm_head.weight": ("F16", (512, 256)),
        "model.norm.weight": ("F16", (256,)),
    }  # fmt: skip
    for i in range(LAYERS):
        for norm in ("input_layernorm", "post_attention_layernorm"):
            tensors[f"model.layers.{i}.{norm}.weight"] = ("F16", (256,))
        for module, (out, inp) in linear.items():
            prefix = f"model.layers.{i}.{module}"
            tensors |= {f"{prefix}.qweight": ("I32", (inp, out // 8)), f"{prefix}.qzeros": ("I32", (inp // 128, out // 8)),
                        f"{prefix}.scales": ("F16", (inp // 128, out))}  # fmt: skip
    write_by_hand(folder / "model.safetensors", tensors)
    # Per layer, the 7 matrices hold 589,824 weights (256x256 x2, 128x256 x2, 512x256 x3): 294,912 B of int4 values;
    # per group of 128 inputs and output, a 2 B scale and a 4-bit zero: 4,608 groups x 2.5 B = 11,520 B.
    values, scales = 294_912 * LAYERS, 11_520 * LAYERS
    norms = 1_024 * LAYERS + 512
    report = kv_json(cli, str(folder))
    headers = headers_of(report)
    assert headers["format"] == "awq"
    assert headers["by_dtype"] == {"F16": 2 * 262_144 + norms + 9_216 * LAYERS, "I32": values + 2_304 * LAYERS}
    assert headers["by_kind"]["scales"] == scales and headers["by_kind"]["attention"] == 98_304 * LAYERS
    assert headers["total_bytes"] == 2 * 262_144 + values + scales + norms == 1_139_712
    assert headers["config_bytes"] == headers["total_bytes"] and headers["config_by_kind"] == headers["by_kind"]


def test_a_sharded_checkpoint_reads_the_files_its_index_names(cli, tmp_path):
    """Two shards and their index; a consolidated copy beside them (as Mistral's folders hold) is not counted."""
    folder = model_folder(tmp_path)
    shapes = llama_shapes()
    names = list(shapes)
    halves = {"model-00001-of-00002.safetensors": names[:10], "model-00002-of-00002.safetensors": names[10:]}
    for file, part in halves.items():
        save_torch(folder / file, {name: shapes[name] for name in part})
    index = {"metadata": {"total_size": BF16_BYTES}, "weight_map": {n: f for f, part in halves.items() for n in part}}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    save_torch(folder / "consolidated.safetensors", shapes)
    report = kv_json(cli, str(folder))
    assert (headers_of(report)["files"], headers_of(report)["total_bytes"]) == (2, BF16_BYTES)
    assert any(a.startswith("weights from 2 checkpoint headers: ") for a in report["assumptions"])
    (folder / "model-00002-of-00002.safetensors").unlink()
    missing = kv_json(cli, str(folder))
    assert missing["deployment"]["checkpoint_headers"] is None
    said = "weights from the config, not the checkpoint headers: 1 of its 2 safetensors files are not in tiny"
    assert any(a.startswith(said) for a in missing["assumptions"])
    (folder / "model.safetensors.index.json").unlink()  # no index: the shards' names say one is missing
    (folder / "consolidated.safetensors").unlink()
    unindexed = kv_json(cli, str(folder))
    assert unindexed["deployment"]["checkpoint_headers"] is None
    assert any(a.startswith(said) and "(model-00002-of-00002.safetensors)" in a for a in unindexed["assumptions"])


@pytest.mark.parametrize(
    ("header", "why"),
    [
        (None, "over safetensors' limit"),
        (b"{not json", "its header is not JSON"),
        (b'{"a": {"dtype": "BF16", "shape": [4, 4], "data_offsets": [0, 16]}}', "where its BF16 shape needs 32"),
        (b'{"a": {"dtype": "Q4", "shape": [4], "data_offsets": [0, 2]}}', "not a safetensors dtype"),
        (b'{"a": {"dtype": "BF16", "shape": [4], "data_offsets": [0, 8000]}}', "outside the file"),
    ],
)
def test_a_corrupt_header_is_one_line_and_exit_2(cli, tmp_path, header, why):
    folder = model_folder(tmp_path)
    path = folder / "model.safetensors"
    if header is None:
        path.write_bytes(struct.pack("<Q", 1 << 40) + b"{}")
    else:
        path.write_bytes(struct.pack("<Q", len(header)) + header + bytes(16))
    for command in ("kv", "check"):
        result = cli.run(command, str(folder))
        assert result.exit_code == EXIT_BAD_INPUT, result.output
        assert "Traceback" not in result.output and len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert "is not a readable safetensors file" in result.stderr and why in result.stderr


VISION = {f"vision_tower.vision_model.encoder.layers.0.self_attn.{p}.weight": (64, 64) for p in "qkvo"}
VISION_BYTES = 4 * 64 * 64 * 2  # 32,768: one embedding's worth, 15% of the decoder


def test_a_total_the_config_does_not_count_is_named_with_both_figures(cli, tmp_path):
    """A vision tower the config (priced as its text decoder) does not count: the note names both totals and the
    kind that differs; the plan uses the headers. The same model without it: no note (the control)."""
    plain = kv_json(cli, str(bf16_folder(tmp_path / "a")))
    assert not any("the checkpoint headers hold" in a for a in plain["assumptions"])
    report = kv_json(cli, str(bf16_folder(tmp_path / "b", VISION)))
    headers = headers_of(report)
    assert headers["total_bytes"] == BF16_BYTES + VISION_BYTES and headers["config_bytes"] == BF16_BYTES
    (note,) = [a for a in report["assumptions"] if "the checkpoint headers hold" in a]
    assert "240.6 KiB of weights, the config's count in bf16 is 208.6 KiB (+15.3%)" in note
    assert "the kind that differs most: vision/audio tower (32.0 KiB in the headers, 0 B from the config)" in note
    assert report["weight_bytes"] == BF16_BYTES + VISION_BYTES


def test_each_rank_holds_the_inventorys_share_of_the_headers(cli, tmp_path):
    folder = bf16_folder(tmp_path, VISION)
    report = kv_json(cli, str(folder), "--target", "2xh100", "--tp", "2")
    memory = report["memory"]
    assert memory["weights_from"] == "checkpoint headers"
    total = BF16_BYTES + VISION_BYTES
    assert memory["weight_bytes_per_device"] == -(-TP2_RANK_BYTES * total // BF16_BYTES) == 123_570
    asked = kv_json(cli, str(folder), "--target", "2xh100", "--tp", "2", "--weight-dtype", "bf16")
    assert asked["memory"]["weights_from"] == "config" and asked["memory"]["weight_bytes_per_device"] == TP2_RANK_BYTES
    assert asked["deployment"]["checkpoint_headers"] is None and asked["weights_from"] == "config"


def test_mtp_layers_are_read_and_left_out(cli, tmp_path):
    """A layer numbered past num_hidden_layers (DeepSeek-V3's MTP layer 61): vLLM loads it only to speculate."""
    extra = {f"model.layers.{LAYERS}.{name.split('.', 3)[3]}": shape
             for name, shape in llama_shapes().items() if name.startswith("model.layers.0.")}  # fmt: skip
    report = kv_json(cli, str(bf16_folder(tmp_path, extra)))
    headers = headers_of(report)
    assert headers["total_bytes"] == BF16_BYTES and headers["by_kind"]["mtp"] == 2 * (ATTENTION + MLP + 128)
    assert any(a.startswith("not counted: 72.2 KiB of multi-token-prediction layers") for a in report["assumptions"])


def test_plan_and_check_price_the_headers_and_say_so(cli, tmp_path):
    folder = str(bf16_folder(tmp_path, VISION))
    result = cli.run("check", folder, "--target", "h100", "--json")  # exit 1: the tiny model's head_dim fails a rule
    checked = json.loads(result.stdout)
    assert checked["memory"]["weights_from"] == checked["weights_from"] == "checkpoint headers"
    assert checked["memory"]["weight_bytes_per_device"] == BF16_BYTES + VISION_BYTES  # 256 rows: no vocab padding
    assert any(a.startswith("weights from 1 checkpoint header") for a in checked["assumptions"])
    planned = cli.json("plan", folder, "--target", "h100", "--tp", "1", "--isl", "128", "--osl", "128",
                       "--closed-form")  # fmt: skip
    assert planned["memory"]["weights_from"] == "checkpoint headers"
    assert planned["memory"]["weight_bytes_per_device"] == BF16_BYTES + VISION_BYTES
    assert any(n.startswith("weights from 1 checkpoint header") for n in planned["notes"])
    assert any("the kind that differs most: vision/audio tower" in n for n in planned["notes"])


def test_an_id_in_the_hugging_face_cache_reads_its_snapshots_headers(cli, tmp_path, monkeypatch):
    weights = tmp_path / "w.safetensors"
    save_torch(weights, llama_shapes())
    cache = tmp_path / "hub"
    add_snapshot(cache, "org/tiny", {"config.json": LLAMA, "model.safetensors": weights.read_bytes()})
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    assert headers_of(kv_json(cli, "org/tiny"))["total_bytes"] == BF16_BYTES


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("model.embed_tokens.weight", "embedding"),
        ("lm_head.weight", "head"),
        ("model.layers.3.self_attn.kv_a_proj_with_mqa.weight", "attention"),
        ("model.layers.3.self_attn.kv_a_layernorm.weight", "norms"),
        ("model.layers.3.mlp.experts.17.down_proj.weight", "experts"),
        ("model.layers.3.mlp.experts.17.down_proj.weight_scale_inv", "scales"),
        ("model.layers.3.mlp.shared_experts.up_proj.weight", "shared_experts"),
        ("model.layers.3.mlp.gate.weight", "router"),
        ("model.layers.3.mlp.gate.e_score_correction_bias", "router"),
        ("model.layers.61.mlp.experts.0.up_proj.weight", "mtp"),  # DeepSeek-V3: 61 layers, the 62nd is MTP
        ("model.layers.61.embed_tokens.weight", "mtp"),
        ("mtp.layers.0.self_attn.q_proj.weight", "mtp"),  # Qwen3-Next
        ("model.layers.0.mlp.experts.gate_up_proj_blocks", "experts"),  # gpt-oss MXFP4 values
        ("model.layers.0.mlp.experts.gate_up_proj_scales", "scales"),
        ("model.layers.0.mlp.router.weight", "router"),
        ("model.layers.0.self_attn.sinks", "attention"),
        ("model.layers.0.self_attn.q_proj.qweight", "attention"),  # AWQ packed int4 values
        ("model.layers.0.self_attn.q_proj.qzeros", "scales"),
        ("model.layers.0.self_attn.q_proj.scales", "scales"),
        ("model.layers.0.linear_attn.in_proj_qkvz.weight", "mixer"),  # Qwen3-Next
        ("backbone.layers.0.mixer.A_log", "mixer"),  # Nemotron-H's Mamba-2 layer
        ("backbone.layers.1.mixer.q_proj.weight", "attention"),  # ... and its attention layer
        ("model.layers.0.block_sparse_moe.experts.3.w1.weight", "experts"),  # Mixtral
        ("model.visual.blocks.0.attn.qkv.weight", "vision_tower"),  # Qwen2.5-VL
        ("model.vision_tower.encoder.layers.30.mlp.fc1.weight", "vision_tower"),
        ("model.multi_modal_projector.linear_1.weight", "vision_tower"),
        ("model.language_model.layers.0.mlp.down_proj.weight", "mlp"),
        ("transformer.h.0.attn.c_attn.weight", "attention"),  # GPT-2
        ("transformer.wte.weight", "embedding"),
        ("model.layers.0.self_attn.rotary_emb.inv_freq", "rotary"),
    ],
)
def test_tensor_kinds_by_hugging_face_names(name, kind):
    assert tensor_kind(name, n_layers=61) == kind


def test_mtp_layers_are_counted_by_the_checkpoints_own_numbering():
    """Nemotron-3-Nano numbers 52 blocks, which mha models as 29 layers: its blocks 29 to 51 are not MTP layers."""
    from mha_cli.core.header_weights import checkpoint_layers
    from mha_cli.core.sources import load_source
    from tests.conftest import reference_hf_config

    path = reference_hf_config("nvidia-nemotron-3-nano-30b-a3b")
    model = load_source(str(path)).model
    layers = checkpoint_layers(json.loads(path.read_text()), model)
    assert (model.n_layers, layers) == (29, 52)
    assert tensor_kind("backbone.layers.51.mixer.experts.0.up_proj.weight", layers) == "experts"
    assert tensor_kind("backbone.layers.52.mixer.experts.0.up_proj.weight", layers) == "mtp"
    assert checkpoint_layers({"text_config": {"num_hidden_layers": 34}}, model) == 34  # Gemma 3's text model


def test_a_vision_model_s_headers_count_its_tower_as_the_config_does(cli, tmp_path):
    """A Qwen2.5-VL folder (tiny widths): transformers' state dict on the meta device written as a header-only
    checkpoint; the tower's tensors are the headers' vision kind and equal the config's tower count (a folder with a
    tower once ended in an internal error)."""
    transformers = pytest.importorskip("transformers")
    text = {
        "model_type": "qwen2_5_vl_text",
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "vocab_size": 256,
        "rope_theta": 1e6,
        "rope_scaling": {"type": "mrope", "mrope_section": [2, 3, 3]},
        "max_position_embeddings": 2048,
    }
    vision = {"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "out_hidden_size": 64,
              "fullatt_block_indexes": [1], "window_size": 112, "patch_size": 14, "spatial_merge_size": 2,
              "temporal_patch_size": 2, "in_channels": 3}  # fmt: skip
    config = {"architectures": ["Qwen2_5_VLForConditionalGeneration"], "model_type": "qwen2_5_vl",
              "text_config": text, "vision_config": vision, "tie_word_embeddings": False}  # fmt: skip
    with torch.device("meta"):
        built = transformers.Qwen2_5_VLForConditionalGeneration(
            transformers.Qwen2_5_VLConfig(**json.loads(json.dumps(config)))
        )
    shapes = {name: tuple(p.shape) for name, p in built.named_parameters()}
    folder = tmp_path / "qwen2.5-vl-tiny"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    write_by_hand(folder / "model.safetensors", {name: ("BF16", shape) for name, shape in shapes.items()})
    headers = headers_of(kv_json(cli, str(folder)))
    tower = sum(p.numel() for name, p in built.named_parameters() if name.startswith("model.visual."))
    assert headers["total_bytes"] == 2 * sum(p.numel() for p in built.parameters())
    assert headers["by_kind"]["vision_tower"] == headers["config_by_kind"]["vision_tower"] == 2 * tower


def test_a_tied_config_does_not_count_the_head_its_file_still_holds(tmp_path, cli):
    """tie_word_embeddings true with lm_head.weight still in the file (a re-saved checkpoint): vLLM's loaders skip
    lm_head.* when tied (skip_prefixes), so the plan prices the embedding once: 213,632 - 256 x 64 x 2 B = 180,864
    (found by newuser trial 255: 18.7% over on a tiny model, about 0.5 GB on a real 1-3B one)."""
    (tmp_path / "config.json").write_text(json.dumps(LLAMA | {"tie_word_embeddings": True}))
    save_torch(tmp_path / "model.safetensors", llama_shapes())
    found = cli.json("kv", str(tmp_path))
    assert found["weight_bytes"] == BF16_BYTES - EMBEDDING * 2 == 180_864
    assert any(note.startswith("not counted: 32.0 KiB of an LM head the config ties") for note in found["assumptions"])


def test_a_safetensors_file_of_no_tensors_prices_from_the_config(tmp_path, cli):
    """A model.safetensors whose header is only its metadata priced the weights at 0 B and the plan "fits" (found by
    newuser trial 255): the config's count, said."""
    (tmp_path / "config.json").write_text(json.dumps(LLAMA))
    write_by_hand(tmp_path / "model.safetensors", {})
    found = cli.json("kv", str(tmp_path))
    assert found["weight_bytes"] == BF16_BYTES
    assert any(
        "its safetensors files hold no tensor an engine loads (0 in all)" in note for note in found["assumptions"]
    )


def test_the_size_line_equates_parameters_and_bytes_only_where_they_agree(tmp_path, cli):
    """ "1,627,392 parameters = 5,254,784 B in bf16" where the headers held more than the config's parameters (found by
    newuser trial 255): the count and the headers' bytes are said apart then; equal, they keep the "=" form."""
    (tmp_path / "config.json").write_text(json.dumps(LLAMA))
    extra = llama_shapes() | {"model.extra.weight": (VOCAB, HIDDEN)}  # 32,768 B the config does not count
    save_torch(tmp_path / "model.safetensors", extra)
    shown = " ".join(cli.run("kv", str(tmp_path)).output.split())
    assert "parameters (the config's count); 246,400 B" in shown
    checked = " ".join(cli.run("check", str(tmp_path)).output.split())
    assert "parameters (the config's count); from the checkpoint headers 246,400 B" in checked
    save_torch(tmp_path / "model.safetensors", llama_shapes())
    assert f"parameters = {BF16_BYTES:,} B" in " ".join(cli.run("kv", str(tmp_path)).output.split())


def test_a_tensor_two_shards_both_store_is_one_parameter(tmp_path, cli):
    """A tensor written in two shards was counted twice (found by newuser trial 255): the engine holds one parameter,
    the later load overwriting it."""
    (tmp_path / "config.json").write_text(json.dumps(LLAMA))
    shapes = llama_shapes()
    names = sorted(shapes)
    first, second = dict.fromkeys(names[: len(names) // 2]), dict.fromkeys(names[len(names) // 2 :])
    save_torch(
        tmp_path / "model-00001-of-00002.safetensors", {n: shapes[n] for n in first} | {names[-1]: shapes[names[-1]]}
    )
    save_torch(tmp_path / "model-00002-of-00002.safetensors", {n: shapes[n] for n in second})
    assert cli.json("kv", str(tmp_path))["weight_bytes"] == BF16_BYTES


def test_only_a_top_level_head_beside_an_embedding_is_the_tied_head_skipped(tmp_path, cli):
    """The review of this change: a layer's ``...layers.0.output.dense.weight`` (BERT's down-projection, which the head
    kind's pattern matches) was dropped as a tied head, and a tied checkpoint storing lm_head.weight without the
    embedding lost its one copy. Now: 64 x 64 x 2 B of that layer tensor counted; the lone head counted as the
    embedding it stands for (180,864 B, as with the embedding alone)."""
    (tmp_path / "config.json").write_text(json.dumps(LLAMA | {"tie_word_embeddings": True}))
    shapes = llama_shapes() | {"model.layers.0.output.dense.weight": (64, 64)}
    save_torch(tmp_path / "model.safetensors", shapes)
    assert cli.json("kv", str(tmp_path))["weight_bytes"] == BF16_BYTES - EMBEDDING * 2 + 64 * 64 * 2
    head_only = {name: shape for name, shape in llama_shapes().items() if name != "model.embed_tokens.weight"}
    save_torch(tmp_path / "model.safetensors", head_only)
    assert cli.json("kv", str(tmp_path))["weight_bytes"] == BF16_BYTES - EMBEDDING * 2 == 180_864
