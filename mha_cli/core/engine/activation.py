"""The activation peak of vLLM's profiling run, the memory its KV budget sets aside for a step's tensors.

vLLM (``v1/worker/gpu_model_runner.py`` ``profile_run``) runs one forward pass over ``max_num_batched_tokens``
tokens split into min(tokens, ``max_num_seqs``) requests, then its sampler over the last token of each request,
and subtracts the torch peak of the two from the budget. What we count, per rank:

- the sampler: rows x vocabulary x the bytes per logit of the top-k/top-p path the dummy run exercises
  (``core.engine.sampler``): 14 B on 0.17-0.20's Triton path (bf16 logits, their fp32 copy masked in place, the
  softmax and the exponential draws; the published v0.19 logs in ``tests/fixtures/vllm_logs.yaml`` print 15.0-15.9,
  the kernel's scratch and the forward's hidden states, not counted, about 1 B of it), 14 B on FlashInfer's (0.21+
  on CUDA), 38 B where 0.8-0.16 sort the vocabulary in PyTorch, 2-6 B where Model Runner V2 samples its dummy rows
  greedily (``core.engine.model_runner``), and V0's own sorts (30-40 B, by release);
- the forward pass: the largest layer's live tensors, the residual stream and its normed copy (2 x d_model) plus
  the widest intermediate: a gated MLP's gate/up output and its activation (3 x d_ff / tp, the widest layer's:
  Gemma 4 E2B's K/V-sharing layers), an MoE layer's for the top-k experts of every token, or q/k/v; Gemma 4's
  per-layer inputs beside them (n_layers x their width a token, held through the forward). It is the smaller of the two except with small vocabularies, and an
  estimate (vLLM's attention workspaces are not counted); logs put it 0.3 GiB above this for Llama-3.1-8B.
Every value is in the model's activation dtype (2 B), logits in fp32.

vLLM's unfused AWQ kernel (``AWQLinearMethod.apply``, ``model_executor/layers/quantization/awq.py``, read in the
0.22.1 wheel; 0.27.1's ``auto_awq.py`` ``AutoAWQLinearMethod.apply`` keeps the same branch) dequantizes a layer's
whole weight to fp16 (``ops.awq_dequantize``) and multiplies with ``torch.matmul`` when a batch holds 256 tokens or
more (``FP16_MATMUL_HEURISTIC_CONDITION``), as the profiling run's does. The copy is a temporary of that one call: it
is live with the layer's input and output, one linear layer at a time. ``awq_dequant_peak_bytes`` prices the largest
such moment: over the attention and dense-MLP projections, the fp16 weight (in x out) plus the residual stream, the
input and the output over the batch's tokens. Which runs is vLLM's choice (``core.engine.settings``,
``EngineSettings.awq_dequantizes``): AWQ Marlin on CUDA unless the kernel is forced.
"""

from __future__ import annotations

from mha_cli.core.engine.sampler import SamplerPath, bytes_per_logit
from mha_cli.core.schemas import ModelSpec

ACTIVATION_BYTES = 2


def sampler_peak_bytes(
    model: ModelSpec, *, max_num_batched_tokens: int, max_num_seqs: int, sampler: SamplerPath = "triton"
) -> int:
    """Bytes the sampler's dummy run allocates on ``sampler``'s path: one row of logits per dummy request."""
    rows = min(max_num_batched_tokens, max_num_seqs)
    return rows * model.embeddings.vocab_size * bytes_per_logit(sampler, rows, ACTIVATION_BYTES)


def forward_peak_bytes(model: ModelSpec, *, tokens: int, tp: int, moe_caches: bool = True) -> int:
    """Bytes of the widest layer's live tensors in a forward pass over ``tokens`` tokens on one rank; without
    ``moe_caches`` an MoE layer's expert caches are left out (vLLM keeps them, ``core.engine.moe_workspace``). Gemma 4
    E2B's widest MLP is its K/V-sharing layers' (``ModelSpec.widest_mlp``), and its per-layer inputs (tokens x
    n_layers x width) live through the whole forward (vLLM 0.34 ``Gemma4Model``): added (review 376 #1)."""
    widths = [3 * model.widest_mlp // tp]
    if model.block.moe is not None and moe_caches:
        widths.append(model.block.moe.n_active_experts * (3 * model.block.moe.d_ff_expert // tp + model.d_model))
    heads = model.attention.n_heads // tp
    kv_heads = max(1, model.attention.n_kv_heads // tp)
    widths.append((heads + 2 * kv_heads) * model.attention.head_dim)
    per_layer = model.embeddings.per_layer_inputs
    held = 0 if per_layer is None else model.n_layers * per_layer.width
    return tokens * ACTIVATION_BYTES * (2 * model.d_model + max(widths) + held)


AWQ_DEQUANT_FROM_TOKENS = 256
"""``AWQLinearMethod.apply`` dequantizes to fp16 from this many tokens in a batch (vLLM 0.22.1)."""


def awq_dequant_peak_bytes(model: ModelSpec, *, tokens: int, tp: int) -> int:
    """Bytes live while vLLM's unfused AWQ kernel runs its widest projection over ``tokens`` tokens on one rank: the
    weight dequantized to fp16 (in x out x 2 B) plus the residual, the input and the output; 0 below 256 tokens,
    where ``awq_gemm`` multiplies the packed weight. An MoE layer's experts run AWQ's fused MoE method: not counted."""
    if tokens < AWQ_DEQUANT_FROM_TOKENS:
        return 0
    d_model, attention = model.d_model, model.attention
    heads, kv_heads = attention.n_heads // tp, max(1, attention.n_kv_heads // tp)
    projections = [  # (in, out) of each column- or row-parallel projection on this rank
        (d_model, (heads + 2 * kv_heads) * attention.head_dim),  # the merged q/k/v
        (heads * attention.head_dim, d_model),  # o_proj
    ]
    if model.block.moe is None:
        width = model.widest_mlp // tp
        up = 2 * width if model.block.mlp == "gated" else width  # the merged gate/up of a gated MLP
        projections += [(d_model, up), (width, d_model)]
    return max(
        n_in * n_out * ACTIVATION_BYTES + tokens * ACTIVATION_BYTES * (d_model + n_in + n_out)
        for n_in, n_out in projections
    )


def profile_peak_bytes(
    model: ModelSpec,
    *,
    max_num_batched_tokens: int,
    max_num_seqs: int,
    tp: int,
    sampler: SamplerPath = "triton",
    moe_workspace: int = 0,
) -> int:
    """The activation peak vLLM's profiling run reports: the larger of the forward pass and the sampler; with a kept
    fused-MoE workspace (``moe_workspace`` bytes, ``core.engine.moe_workspace``), that workspace plus the larger of
    the two without the MoE caches, since it stays allocated under every later peak."""
    kept = moe_workspace > 0
    return moe_workspace + max(
        forward_peak_bytes(model, tokens=max_num_batched_tokens, tp=tp, moe_caches=not kept),
        sampler_peak_bytes(
            model, max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs, sampler=sampler
        ),
    )
