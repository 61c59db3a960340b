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
  the widest intermediate: a gated MLP's gate/up output and its activation (3 x d_ff / tp), an MoE layer's for the
  top-k experts of every token, or q/k/v. It is the smaller of the two except with small vocabularies, and an
  estimate (vLLM's attention workspaces are not counted); logs put it 0.3 GiB above this for Llama-3.1-8B.
Every value is in the model's activation dtype (2 B), logits in fp32.
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


def forward_peak_bytes(model: ModelSpec, *, tokens: int, tp: int) -> int:
    """Bytes of the widest layer's live tensors in a forward pass over ``tokens`` tokens on one rank."""
    widths = [3 * model.block.d_ff // tp]
    if model.block.moe is not None:
        widths.append(model.block.moe.n_active_experts * (3 * model.block.moe.d_ff_expert // tp + model.d_model))
    heads = model.attention.n_heads // tp
    kv_heads = max(1, model.attention.n_kv_heads // tp)
    widths.append((heads + 2 * kv_heads) * model.attention.head_dim)
    return tokens * ACTIVATION_BYTES * (2 * model.d_model + max(widths))


def profile_peak_bytes(
    model: ModelSpec, *, max_num_batched_tokens: int, max_num_seqs: int, tp: int, sampler: SamplerPath = "triton"
) -> int:
    """The activation peak vLLM's profiling run reports: the larger of the forward pass and the sampler."""
    return max(
        forward_peak_bytes(model, tokens=max_num_batched_tokens, tp=tp),
        sampler_peak_bytes(
            model, max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs, sampler=sampler
        ),
    )
