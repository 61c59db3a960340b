"""The activation peak of vLLM's profiling run, the memory its KV budget sets aside for a step's tensors.

vLLM (``v1/worker/gpu_model_runner.py`` ``profile_run``) runs one forward pass over ``max_num_batched_tokens``
tokens split into min(tokens, ``max_num_seqs``) requests, then its sampler over the last token of each request,
and subtracts the torch peak of the two from the budget. What we count, per rank:

- the sampler: rows x vocabulary x 16 B, the logits in fp32 (4 B), their sorted copy (4 B) and the int64 sort
  indices (8 B) of the top-k/top-p path the dummy run exercises. Against the published v0.19 logs (Llama, Qwen,
  Gemma, Phi, gpt-oss; ``tests/fixtures/vllm_logs.yaml``) this is 0-7% above the reported peak;
- the forward pass: the largest layer's live tensors, the residual stream and its normed copy (2 x d_model) plus
  the widest intermediate: a gated MLP's gate/up output and its activation (3 x d_ff / tp), an MoE layer's for the
  top-k experts of every token, or q/k/v. It is the smaller of the two except with small vocabularies, and an
  estimate (vLLM's attention workspaces are not counted); logs put it 0.3 GiB above this for Llama-3.1-8B.
Every value is in the model's activation dtype (2 B), logits in fp32.
"""

from __future__ import annotations

from mha_cli.core.schemas import ModelSpec

SAMPLER_BYTES_PER_LOGIT = 16
"""fp32 logits + fp32 sorted logits + int64 sort indices (vLLM's sampler dummy run with top-k and top-p)."""
ACTIVATION_BYTES = 2


def sampler_peak_bytes(model: ModelSpec, *, max_num_batched_tokens: int, max_num_seqs: int) -> int:
    """Bytes the sampler's dummy run allocates: one row of logits per dummy request."""
    rows = min(max_num_batched_tokens, max_num_seqs)
    return rows * model.embeddings.vocab_size * SAMPLER_BYTES_PER_LOGIT


def forward_peak_bytes(model: ModelSpec, *, tokens: int, tp: int) -> int:
    """Bytes of the widest layer's live tensors in a forward pass over ``tokens`` tokens on one rank."""
    widths = [3 * model.block.d_ff // tp]
    if model.block.moe is not None:
        widths.append(model.block.moe.n_active_experts * (3 * model.block.moe.d_ff_expert // tp + model.d_model))
    heads = model.attention.n_heads // tp
    kv_heads = max(1, model.attention.n_kv_heads // tp)
    widths.append((heads + 2 * kv_heads) * model.attention.head_dim)
    return tokens * ACTIVATION_BYTES * (2 * model.d_model + max(widths))


def profile_peak_bytes(model: ModelSpec, *, max_num_batched_tokens: int, max_num_seqs: int, tp: int) -> int:
    """The activation peak vLLM's profiling run reports: the larger of the forward pass and the sampler."""
    return max(
        forward_peak_bytes(model, tokens=max_num_batched_tokens, tp=tp),
        sampler_peak_bytes(model, max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs),
    )
