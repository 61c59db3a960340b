"""GGUF headers written by ``gguf-py`` (llama.cpp's own writer, a dev dependency): the metadata and tensor table of
a real model's shapes, the tensors' data a hole of the file (sparse: ``os.truncate`` past the header, zeros nobody
writes), so a 70B file is its real size on paper and a few MB on disk; the reader checks the size, never the data."""

from __future__ import annotations

import os
from pathlib import Path

import gguf
import numpy as np

Q4_K, Q6_K, Q8_0, F32, BF16 = (gguf.GGMLQuantizationType.Q4_K, gguf.GGMLQuantizationType.Q6_K,
                               gguf.GGMLQuantizationType.Q8_0, gguf.GGMLQuantizationType.F32,
                               gguf.GGMLQuantizationType.BF16)  # fmt: skip


ALIGNMENT = 32
"""gguf-py's default ``general.alignment``: the data section and every tensor in it start on a multiple of it."""


def stored_bytes(shape: tuple[int, ...], kind: gguf.GGMLQuantizationType) -> int:
    """Bytes of a tensor of ``shape`` in ``kind``, from gguf-py's table (values per block, bytes per block)."""
    block, block_bytes = gguf.GGML_QUANT_SIZES[kind]
    return int(np.prod(shape)) // block * block_bytes


class HeaderWriter:
    """A GGUF file of ``arch`` being written: metadata through gguf-py's own setters, then tensor entries."""

    def __init__(self, path: Path, arch: str) -> None:
        self.writer = gguf.GGUFWriter(str(path), arch)
        self.path = path
        self.total = 0
        self.padded = 0
        self.header_bytes = 0
        """The header's bytes, once closed (the data section follows, aligned)."""

    def tensor(self, name: str, shape: tuple[int, ...], kind: gguf.GGMLQuantizationType) -> None:
        """One tensor entry of ``shape`` (outermost first) stored as ``kind``."""
        block, block_bytes = gguf.GGML_QUANT_SIZES[kind]
        nbytes = stored_bytes(shape, kind)
        self.total += nbytes
        self.padded += -(-nbytes // ALIGNMENT) * ALIGNMENT
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
        self.header_bytes = header = os.path.getsize(self.path)
        start = -(-header // ALIGNMENT) * ALIGNMENT
        os.truncate(self.path, start + self.padded)  # the data section, each tensor padded as gguf-py places it


def write_decoder(
    path: Path, arch: str, config: dict, *, experts: int = 0, tied: bool = False, token_list: bool = True
) -> HeaderWriter:
    """A Llama-style decoder's header from a config.json's fields: q/k/v/o and SwiGLU (or ``experts`` routed
    experts of ``moe_intermediate_size``) in Q4_K, v and down in Q6_K as llama.cpp's Q4_K_M mix does, norms in F32;
    Gemma 2/3's window, soft caps and extra norms. ``token_list``: the vocabulary's strings too (the reader skips
    them; a 262k-token list takes a second to write)."""
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
    if arch in ("gemma2", "gemma3"):  # llama.cpp's Gemma converters write the window, Gemma 2 its soft caps
        w.add_sliding_window(config["sliding_window"])
    if arch == "gemma2":
        w.add_attn_logit_softcapping(config["attn_logit_softcapping"])
        w.add_final_logit_softcapping(config["final_logit_softcapping"])
    if experts:
        w.add_expert_count(experts)
        w.add_expert_used_count(config["num_experts_per_tok"])
        if "moe_intermediate_size" in config:
            w.add_expert_feed_forward_length(config["moe_intermediate_size"])
    if token_list:
        w.add_token_list([f"t{i}" for i in range(vocab)])
    out.tensor("token_embd.weight", (vocab, d), Q4_K)
    for i in range(layers):
        out.tensor(f"blk.{i}.attn_q.weight", (heads * head_dim, d), Q4_K)
        out.tensor(f"blk.{i}.attn_k.weight", (kv_heads * head_dim, d), Q4_K)
        out.tensor(f"blk.{i}.attn_v.weight", (kv_heads * head_dim, d), Q6_K)
        out.tensor(f"blk.{i}.attn_output.weight", (d, heads * head_dim), Q4_K)
        if arch in ("qwen3", "qwen3moe", "gemma3"):
            out.tensor(f"blk.{i}.attn_q_norm.weight", (head_dim,), F32)
            out.tensor(f"blk.{i}.attn_k_norm.weight", (head_dim,), F32)
        if arch in ("gemma2", "gemma3"):  # Gemma's norms after attention and after the MLP
            out.tensor(f"blk.{i}.post_attention_norm.weight", (d,), F32)
            out.tensor(f"blk.{i}.post_ffw_norm.weight", (d,), F32)
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


def _quantised(shape: tuple[int, ...]) -> gguf.GGMLQuantizationType:
    """Q4_K where rows are whole 256-value blocks, else Q8_0 (32-value blocks), as llama.cpp falls back."""
    return Q4_K if shape[-1] % 256 == 0 else Q8_0


def write_mla_decoder(path: Path, config: dict, *, latent_cache: bool = True) -> HeaderWriter:
    """A DeepSeek-V2/V3 config.json's header as llama.cpp's converter writes architecture ``deepseek2``: MLA as one
    latent KV head (``latent_cache``; else the per-head K/V widths of files converted before 2025's change), kv_b
    split into k_b and v_b, experts stacked per layer, the router's scoring function as ``expert_gating_func``."""
    out = HeaderWriter(path, "deepseek2")
    w = out.writer
    d, layers, heads, vocab = (config["hidden_size"], config["num_hidden_layers"], config["num_attention_heads"],
                               config["vocab_size"])  # fmt: skip
    rank, rope, nope, v = (config["kv_lora_rank"], config["qk_rope_head_dim"], config["qk_nope_head_dim"],
                           config["v_head_dim"])  # fmt: skip
    q_rank, experts, width = config.get("q_lora_rank"), config["n_routed_experts"], config["moe_intermediate_size"]
    shared, dense = config["n_shared_experts"], config["first_k_dense_replace"]
    sigmoid = config.get("scoring_func") == "sigmoid"
    w.add_name(config.get("_name", "test model"))
    w.add_context_length(config["max_position_embeddings"])
    w.add_embedding_length(d)
    w.add_block_count(layers)
    w.add_feed_forward_length(config["intermediate_size"])
    w.add_head_count(heads)
    w.add_head_count_kv(1 if latent_cache else heads)
    w.add_rope_freq_base(float(config["rope_theta"]))
    w.add_layer_norm_rms_eps(config["rms_norm_eps"])
    w.add_expert_count(experts)
    w.add_expert_used_count(config["num_experts_per_tok"])
    w.add_expert_group_count(config["n_group"])
    w.add_expert_group_used_count(config["topk_group"])
    w.add_expert_gating_func(gguf.ExpertGatingFuncType.SIGMOID if sigmoid else gguf.ExpertGatingFuncType.SOFTMAX)
    w.add_leading_dense_block_count(dense)
    w.add_vocab_size(vocab)
    if q_rank is not None:
        w.add_q_lora_rank(q_rank)
    w.add_kv_lora_rank(rank)
    if latent_cache:
        w.add_key_length(rank + rope)
        w.add_value_length(rank)
        w.add_key_length_mla(nope + rope)
        w.add_value_length_mla(v)
    else:
        w.add_key_length(nope + rope)
        w.add_value_length(v)
    w.add_expert_feed_forward_length(width)
    w.add_expert_shared_count(shared)
    w.add_expert_weights_scale(config["routed_scaling_factor"])
    if config.get("norm_topk_prob"):
        w.add_expert_weights_norm(True)
    w.add_rope_dimension_count(rope)
    scaling = config.get("rope_scaling") or {}
    if scaling.get("type", scaling.get("rope_type")) == "yarn":
        w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
        w.add_rope_scaling_factor(scaling["factor"])
        w.add_rope_scaling_orig_ctx_len(scaling["original_max_position_embeddings"])
        w.add_rope_scaling_yarn_log_mul(0.1 * scaling["mscale_all_dim"])

    def linear(name: str, shape: tuple[int, ...]) -> None:
        out.tensor(name, shape, _quantised(shape))

    linear("token_embd.weight", (vocab, d))
    for i in range(layers):
        out.tensor(f"blk.{i}.attn_norm.weight", (d,), F32)
        if q_rank is None:
            linear(f"blk.{i}.attn_q.weight", (heads * (nope + rope), d))
        else:
            linear(f"blk.{i}.attn_q_a.weight", (q_rank, d))
            out.tensor(f"blk.{i}.attn_q_a_norm.weight", (q_rank,), F32)
            linear(f"blk.{i}.attn_q_b.weight", (heads * (nope + rope), q_rank))
        linear(f"blk.{i}.attn_kv_a_mqa.weight", (rank + rope, d))
        out.tensor(f"blk.{i}.attn_kv_a_norm.weight", (rank,), F32)
        if latent_cache:
            linear(f"blk.{i}.attn_k_b.weight", (heads, rank, nope))
            linear(f"blk.{i}.attn_v_b.weight", (heads, v, rank))
        else:
            linear(f"blk.{i}.attn_kv_b.weight", (heads * (nope + v), rank))
        linear(f"blk.{i}.attn_output.weight", (d, heads * v))
        out.tensor(f"blk.{i}.ffn_norm.weight", (d,), F32)
        if i < dense:
            linear(f"blk.{i}.ffn_gate.weight", (config["intermediate_size"], d))
            linear(f"blk.{i}.ffn_up.weight", (config["intermediate_size"], d))
            linear(f"blk.{i}.ffn_down.weight", (d, config["intermediate_size"]))
            continue
        out.tensor(f"blk.{i}.ffn_gate_inp.weight", (experts, d), F32)
        if sigmoid:  # DeepSeek-V3's e_score_correction_bias
            out.tensor(f"blk.{i}.exp_probs_b.bias", (experts,), F32)
        linear(f"blk.{i}.ffn_gate_exps.weight", (experts, width, d))
        linear(f"blk.{i}.ffn_up_exps.weight", (experts, width, d))
        linear(f"blk.{i}.ffn_down_exps.weight", (experts, d, width))
        linear(f"blk.{i}.ffn_gate_shexp.weight", (width * shared, d))
        linear(f"blk.{i}.ffn_up_shexp.weight", (width * shared, d))
        linear(f"blk.{i}.ffn_down_shexp.weight", (d, width * shared))
    out.tensor("output_norm.weight", (d,), F32)
    if not config.get("tie_word_embeddings", False):
        linear("output.weight", (vocab, d))
    return out
