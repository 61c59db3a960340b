"""What TensorRT-LLM's PyTorch backend (``trtllm-pytorch``, 1.x) runs to measure its peak before it sizes the KV pool.

Read in ``tensorrt_llm/_torch/pyexecutor/`` as stored in the search index (``_util.py`` of the 1.1-1.2 line, with
``SparseAttentionConfig`` and Qwen3-Next; ``py_executor_creator.py`` of the same line; ``_cal_max_memory``'s formula is the same in the later, larger
``_util.py`` versions stored, which add the multimodal encoder cache to the peak). ``create_py_executor`` loads the model, builds the sampler, a
small KV cache sized for the dummy requests (``KvCacheCreator._get_token_num_for_estimation``) and a first
``PyExecutor``, whose constructor warms the model up (``model_engine.warmup``: CUDA graphs captured). Then
``KvCacheCreator.configure_kv_cache_capacity`` empties torch's cache, resets its peak, runs the dummy requests and
takes ``peak = torch's allocated peak + what is used outside torch`` (total - free - torch's allocated bytes);
``_cal_max_memory`` gives the pool ``(total - peak + the estimation KV cache) x free_gpu_memory_fraction`` (0.9,
``KvCacheConfig``). The estimation cache is in the peak and added back: no line of its own.

The dummy requests (``KvCacheCreator._create_dummy_context_requests(max(1, max_seq_len - 1))``): prompts of
min(max_num_tokens, max_seq_len - 1) random tokens, as many as make up max_num_tokens in all (the last one shorter),
each asking for one output token (``max_tokens=1``), greedy (a default ``SamplingConfig``). So the run is one
context step of max_num_tokens tokens (the scheduler takes at most max_batch_size of the requests) and one logit
row per request: ``LogitsProcessor.forward`` (``_torch/modules/logits_processor.py``) keeps each request's last
token, runs the LM head (activation dtype) and casts the result to fp32 (``logits.float()``), so 2 + 4 B a logit.
What is priced: the larger of the forward (``core.engine.activation``'s widest-layer estimate over the step's
tokens) and those logits. Not vLLM's sampler over max_num_seqs rows: a greedy pick over a handful of rows allocates
next to nothing, and ``TorchSampler``'s store (``sampler_type`` auto: TorchSampler unless beam search,
``llmapi/llm_args.py``) is int32 tokens a sequence, KiB.

Not priced, and why: the CUDA-graph pool the warm-up captured before the measurement (inside the peak, of no size
the source gives; the graphs are captured again after the pool, from the (1 - fraction) headroom), and what is used
outside torch (the CUDA context, NCCL, TRT-LLM's all-reduce workspaces: the non-torch line stands in). Pure Python.
"""

from typing import NamedTuple

from mha_cli.core.engine.activation import ACTIVATION_BYTES, forward_peak_bytes
from mha_cli.core.schemas import ModelSpec

LOGITS_FP32_BYTES = 4
"""``LogitsProcessor.forward``: ``logits.float()``."""
BYTES_PER_LOGIT = ACTIVATION_BYTES + LOGITS_FP32_BYTES
"""The LM head's output in the activation dtype and its fp32 copy, both live at the cast: 6 B."""


def dummy_prompt_lengths(*, max_num_tokens: int, max_seq_len: int) -> list[int]:
    """Prompt tokens of each dummy request (``_create_dummy_context_requests``): max_num_tokens in all, each at most
    min(max_num_tokens, max_seq_len - 1)."""
    longest = min(max_num_tokens, max(1, max_seq_len - 1))
    full, rest = divmod(max_num_tokens, longest)
    return [longest] * full + ([rest] if rest else [])


class TrtllmProfile(NamedTuple):
    """The PyTorch backend's profiling run on one rank: its dummy requests' first step and its peak, in bytes."""

    step_prompts: list[int]
    """Prompt tokens of each request the first step schedules (at most max_batch_size of them)."""
    vocab_size: int
    forward_bytes: int
    """The forward over the step's tokens (``core.engine.activation.forward_peak_bytes``)."""

    @property
    def step_tokens(self) -> int:
        return sum(self.step_prompts)

    @property
    def logits_bytes(self) -> int:
        """One row of logits per request (its last token): rows x vocabulary x 6 B."""
        return len(self.step_prompts) * self.vocab_size * BYTES_PER_LOGIT

    @property
    def peak_bytes(self) -> int:
        """The larger of the forward's and the logits' live tensors (the layers' are freed before the LM head)."""
        return max(self.forward_bytes, self.logits_bytes)

    def how(self) -> str:
        rows = len(self.step_prompts)
        return (
            f"dummy run of {self.step_tokens:,} tokens in {rows} request(s): the forward (widest layer), or their last"
            f" tokens' logits {rows} x {self.vocab_size:,} x {BYTES_PER_LOGIT} B if larger (KvCacheCreator)"
        )


def trtllm_profile(
    model: ModelSpec, *, max_num_tokens: int, max_seq_len: int, max_batch_size: int, tp: int
) -> TrtllmProfile:
    """The profiling run of an executor of ``max_num_tokens`` tokens and ``max_batch_size`` sequences a step serving
    ``max_seq_len`` tokens a request, on each of ``tp`` ranks (the LM head gathers the whole vocabulary)."""
    prompts = dummy_prompt_lengths(max_num_tokens=max_num_tokens, max_seq_len=max_seq_len)[:max_batch_size]
    forward = forward_peak_bytes(model, tokens=sum(prompts), tp=tp)
    return TrtllmProfile(prompts, model.embeddings.vocab_size, forward)
