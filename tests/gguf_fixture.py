"""GGUF headers written by ``gguf-py`` (llama.cpp's own writer, a dev dependency): the metadata and tensor table of
a real model's shapes, without the tensors' data (the reader never reads it), so a 70B file is a few MB."""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np

Q4_K, Q6_K, F32, BF16 = (gguf.GGMLQuantizationType.Q4_K, gguf.GGMLQuantizationType.Q6_K,
                         gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.BF16)  # fmt: skip


def stored_bytes(shape: tuple[int, ...], kind: gguf.GGMLQuantizationType) -> int:
    """Bytes of a tensor of ``shape`` in ``kind``, from gguf-py's table (values per block, bytes per block)."""
    block, block_bytes = gguf.GGML_QUANT_SIZES[kind]
    return int(np.prod(shape)) // block * block_bytes


class HeaderWriter:
    """A GGUF file of ``arch`` being written: metadata through gguf-py's own setters, then tensor entries."""

    def __init__(self, path: Path, arch: str) -> None:
        self.writer = gguf.GGUFWriter(str(path), arch)
        self.total = 0

    def tensor(self, name: str, shape: tuple[int, ...], kind: gguf.GGMLQuantizationType) -> None:
        """One tensor entry of ``shape`` (outermost first) stored as ``kind``."""
        block, block_bytes = gguf.GGML_QUANT_SIZES[kind]
        nbytes = stored_bytes(shape, kind)
        self.total += nbytes
        if block == 1:
            dtype = {F32: np.float32, BF16: np.uint16}.get(kind, np.float16)
            self.writer.add_tensor_info(name, shape, np.dtype(dtype), nbytes, raw_dtype=kind)
        else:  # gguf-py takes a quantised tensor's shape in bytes along its rows
            byte_shape = (*shape[:-1], shape[-1] // block * block_bytes)
            self.writer.add_tensor_info(name, byte_shape, np.dtype(np.uint8), nbytes, raw_dtype=kind)

    def close(self) -> None:
        self.writer.write_header_to_file()
        self.writer.write_kv_data_to_file()
        self.writer.write_ti_data_to_file()
        self.writer.close()


def write_decoder(path: Path, arch: str, config: dict, *, experts: int = 0, tied: bool = False) -> HeaderWriter:
    """A Llama-style decoder's header from a config.json's fields: q/k/v/o and SwiGLU (or ``experts`` routed
    experts of ``moe_intermediate_size``) in Q4_K, v and down in Q6_K as llama.cpp's Q4_K_M mix does, norms in F32."""
    out = HeaderWriter(path, arch)
    w = out.writer
    d, layers, heads = config["hidden_size"], config["num_hidden_layers"], config["num_attention_heads"]
    kv_heads, vocab = config["num_key_value_heads"], config["vocab_size"]
    head_dim = config.get("head_dim") or d // heads
    w.add_name(config.get("_name", "test model"))
    w.add_context_length(config["max_position_embeddings"])
    w.add_embedding_length(d)
    w.add_block_count(layers)
    w.add_feed_forward_length(config["intermediate_size"])
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_rope_freq_base(float(config["rope_theta"]))
    w.add_layer_norm_rms_eps(config["rms_norm_eps"])
    w.add_rope_dimension_count(head_dim)
    if "head_dim" in config:
        w.add_key_length(head_dim)
        w.add_value_length(head_dim)
    if experts:
        w.add_expert_count(experts)
        w.add_expert_used_count(config["num_experts_per_tok"])
        if "moe_intermediate_size" in config:
            w.add_expert_feed_forward_length(config["moe_intermediate_size"])
    w.add_token_list([f"t{i}" for i in range(vocab)])
    out.tensor("token_embd.weight", (vocab, d), Q4_K)
    for i in range(layers):
        out.tensor(f"blk.{i}.attn_q.weight", (heads * head_dim, d), Q4_K)
        out.tensor(f"blk.{i}.attn_k.weight", (kv_heads * head_dim, d), Q4_K)
        out.tensor(f"blk.{i}.attn_v.weight", (kv_heads * head_dim, d), Q6_K)
        out.tensor(f"blk.{i}.attn_output.weight", (d, heads * head_dim), Q4_K)
        if arch == "qwen3" or arch == "qwen3moe":
            out.tensor(f"blk.{i}.attn_q_norm.weight", (head_dim,), F32)
            out.tensor(f"blk.{i}.attn_k_norm.weight", (head_dim,), F32)
        if experts:
            width = config.get("moe_intermediate_size", config["intermediate_size"])
            out.tensor(f"blk.{i}.ffn_gate_inp.weight", (experts, d), F32)
            out.tensor(f"blk.{i}.ffn_gate_exps.weight", (experts, width, d), Q4_K)
            out.tensor(f"blk.{i}.ffn_up_exps.weight", (experts, width, d), Q4_K)
            out.tensor(f"blk.{i}.ffn_down_exps.weight", (experts, d, width), Q6_K)
        else:
            width = config["intermediate_size"]
            out.tensor(f"blk.{i}.ffn_gate.weight", (width, d), Q4_K)
            out.tensor(f"blk.{i}.ffn_up.weight", (width, d), Q4_K)
            out.tensor(f"blk.{i}.ffn_down.weight", (d, width), Q6_K)
        out.tensor(f"blk.{i}.attn_norm.weight", (d,), F32)
        out.tensor(f"blk.{i}.ffn_norm.weight", (d,), F32)
    out.tensor("output_norm.weight", (d,), F32)
    if not tied:
        out.tensor("output.weight", (vocab, d), Q6_K)
    return out
