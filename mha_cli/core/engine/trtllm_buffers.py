"""What TensorRT-LLM's C++ runtime (``trtllm-cpp``, 0.5-0.21) allocates before it sizes the KV pool. Pure Python.

``TrtGptModelInflightBatching``'s constructor (``cpp/tensorrt_llm/batch_manager/trtGptModelInflightBatching.cpp``,
as stored in the search index for the 0.17-0.21 open batch manager; 0.14's log prints the same two lines) runs, in
order: ``createRuntimeContexts`` (TensorRT's execution context: the engine's activations), ``createBuffers`` (logged
"Allocated X GB GPU memory for runtime buffers"), ``createDecoder`` ("... for decoder"), then
``createKvCacheManager``, whose ``calculateMaxNumBlocks`` takes ``free_gpu_memory_fraction`` of the memory still
free. Both logged figures are sized by trtllm-build's ``max_batch_size`` (2048 by default), the vocabulary and the
engine's ``max_seq_len``, not by the load. What is priced, per rank, with ``beam`` = trtllm-build's
``max_beam_width`` (1 by default) and ``vocab_padded`` = ``ModelConfig::getVocabSizePadded`` (the vocabulary rounded
up to a multiple of the tensor-parallel size; every rank decodes the whole vocabulary):

Runtime buffers (``createBuffers``): one ``RuntimeBuffers`` a micro-batch (the constructor: ``mNumBuffers =
(mCtxGenFusion ? 1 : 2) * mNumMicroBatches``; ``ctxGenFusion`` is true for the executor's in-flight batching of a
transformer, ``TrtGptModelType::InflightFusedBatching``, ``trtGptModelFactory.h``; micro-batches: the
pipeline-parallel size at pp > 1, else 1 without ``enable_trt_overlap``), each holding
- the logits of one step, on the last pipeline stage only (``RuntimeBuffers::create``:
  ``isLastPipelineParallelRank``), ``setMaxBufferSizes`` (numLogits = max_batch_size x max(1 + draft tokens, beam):
  a step verifies the draft tokens) then ``reshape`` (``logits`` [numLogits, vocab_padded] in the engine's logits
  dtype: fp32, the ``--logits_dtype`` default of the examples' ``convert_checkpoint.py`` / ``build.py``);
- at pp > 1 the hidden states passed between stages (``hiddenStates`` [numTokens, hidden_size] in the model's
  dtype; numTokens at most the engine's max_num_tokens, ``setMaxBufferSizes``' ``numGenTokens``);
- the beam-search cache indirection, ``DecoderBuffers::DecoderBuffers`` (``batch_manager/decoderBuffers.cpp``):
  ``cacheIndirectionInput`` and ``cacheIndirectionOutput``, each [max_batch_size, beam, max_attention_window] int32,
  allocated whatever the beam width; the window is the engine's max_seq_len.

Decoder (``createDecoder``: on the last pipeline stage only, ``GptDecoderBatched`` -> ``DynamicDecodeLayer``, in
top-k/top-p mode for beam 1), per logit of [max_batch_size x beam, vocab_padded]:
- ``PenaltyLayer::allocateBuffer`` (``cpp/tensorrt_llm/layers/penaltyLayer.cpp``): ``mRuntimeLogitsDevice``, one
  logit in the decoder's dtype (the logits dtype, fp32);
- ``PenaltyLayer::allocateWorkspace``: the occurrence-penalty workspace, one int32 (a decoding mode other than
  Auto allocates it at construction; the batch manager resolves Auto to TopKTopP before it builds the decoder);
- the top-p sampling workspace, ``getTopPWorkspaceSizes`` (``cpp/tensorrt_llm/kernels/samplingTopPKernels.cu``):
  the sorted probabilities (logits dtype), the sorted token ids and the unsorted ids (int32 each).

Not priced, and why: a speculative decoding mode's own decoder layers and buffers (Medusa, EAGLE, external draft
tokens: ``DecoderState::setupSpeculativeDecoding``, not read here; the decoder is priced as top-p's); the CUB radix sort's own temporary storage in the top-p workspace (sized by CUB at run time,
not by TensorRT-LLM's code), the decoder's per-slot output tensors ([max_batch_size, beam, max_seq_len] ids, log
probabilities; not read here), the execution context (TensorRT's planner: ``core.engine.activation``'s forward
estimate stands in for it). 0.14's log of Qwen2.5-0.5B at 2,048 sequences (``tests/fixtures/engine_logs.yaml`` 206)
prints 2.66 GiB of runtime buffers and 5.76 GiB for the decoder against 1.66 and 5.80 here.
"""

from typing import NamedTuple

from mha_cli.core.quantities import format_bytes

LOGITS_BYTES = 4
"""The engine's logits dtype: fp32 (``--logits_dtype`` default float32 in the examples' checkpoint converters)."""
INT32_BYTES = 4
TRTLLM_BEAM = 1
"""trtllm-build's ``--max_beam_width`` default."""
DECODER_BYTES_PER_LOGIT = LOGITS_BYTES + INT32_BYTES + LOGITS_BYTES + 2 * INT32_BYTES
"""PenaltyLayer's runtime logits and occurrence workspace, top-p's sorted probabilities, sorted ids and ids: 20 B."""


def vocab_size_padded(vocab_size: int, tp: int) -> int:
    """``ModelConfig::getVocabSizePadded(worldSize)``: the vocabulary rounded up to a multiple of ``tp``."""
    return -(-vocab_size // tp) * tp


class TrtllmBuffers(NamedTuple):
    """The C++ runtime's two allocations before the KV pool on one rank, in bytes, and the sizes that set them."""

    max_batch_size: int
    beam: int
    vocab_padded: int
    max_attention_window: int
    """Tokens: the engine's max_seq_len."""
    pp: int = 1
    """Pipeline stages: the micro-batches, one ``RuntimeBuffers`` each."""
    last_stage: bool = True
    """This rank is on the last pipeline stage (the only one with logits and a decoder)."""
    draft_tokens: int = 0
    """trtllm-build's ``--max_draft_len``: the draft tokens a step verifies."""
    hidden_states_bytes: int = 0
    """One micro-batch's ``hiddenStates`` at pp > 1: max_num_tokens x hidden_size x the model dtype's bytes."""

    @property
    def sequences(self) -> int:
        """Sequences the decoder and the cache indirection hold: one per request and beam."""
        return self.max_batch_size * self.beam

    @property
    def logits_rows(self) -> int:
        """Rows of logits a step holds (``numLogits``): max_batch_size x max(1 + draft tokens, beam)."""
        return self.max_batch_size * max(1 + self.draft_tokens, self.beam)

    @property
    def step_logits_bytes(self) -> int:
        """``RuntimeBuffers``' logits, every micro-batch's: pp x rows x vocab_padded x fp32; 0 before the last stage."""
        return self.pp * self.logits_rows * self.vocab_padded * LOGITS_BYTES if self.last_stage else 0

    @property
    def stage_hidden_bytes(self) -> int:
        """``RuntimeBuffers``' hidden states passed between stages, every micro-batch's (0 at pp 1)."""
        return self.pp * self.hidden_states_bytes if self.pp > 1 else 0

    @property
    def cache_indirection_bytes(self) -> int:
        """``DecoderBuffers``' cache indirection, input and output: 2 x sequences x window x int32."""
        return 2 * self.sequences * self.max_attention_window * INT32_BYTES

    @property
    def runtime_bytes(self) -> int:
        """What ``createBuffers`` allocates ("GPU memory for runtime buffers"), as far as priced."""
        return self.step_logits_bytes + self.stage_hidden_bytes + self.cache_indirection_bytes

    @property
    def decoder_bytes(self) -> int:
        """What ``createDecoder`` allocates ("GPU memory for decoder") on the last stage, as far as priced: 20 B per
        logit of one row a sequence; 0 on the other stages."""
        return self.sequences * self.vocab_padded * DECODER_BYTES_PER_LOGIT if self.last_stage else 0

    def runtime_how(self) -> str:
        copies = f"{self.pp} micro-batches x " if self.pp > 1 else ""
        rows = f"{self.max_batch_size} seqs x {max(1 + self.draft_tokens, self.beam)}"
        rows += f" (1 + {self.draft_tokens} draft tokens)" if self.draft_tokens else " beam"
        logits = (
            f"logits {copies}{rows} x {self.vocab_padded:,} x {LOGITS_BYTES} B ({format_bytes(self.step_logits_bytes)})"
            if self.last_stage
            else "no logits (not the last stage)"
        )
        hidden = (
            f" + hidden states {self.pp} x {format_bytes(self.hidden_states_bytes)}"
            f" ({format_bytes(self.stage_hidden_bytes)})"
            if self.pp > 1
            else ""
        )
        return (
            f"{logits}{hidden} + cache indirection 2 x {self.sequences} x {self.max_attention_window:,} tokens x"
            f" {INT32_BYTES} B ({format_bytes(self.cache_indirection_bytes)}); RuntimeBuffers, DecoderBuffers"
        )

    def decoder_how(self) -> str:
        if not self.last_stage:
            return "none before the last pipeline stage (createDecoder: isLastPipelineParallelRank)"
        return (
            f"{self.max_batch_size} seqs x {self.beam} beam x {self.vocab_padded:,} logits x"
            f" {DECODER_BYTES_PER_LOGIT} B (penalty logits and workspace, top-p sort buffers); DynamicDecodeLayer"
        )

    def log_lines(self) -> list[str]:
        """The two lines the runtime prints (``MemoryCounters::bytesToString``: "GB" is 1024^3 bytes)."""
        return [
            f"[MemUsageChange] Allocated {self.runtime_bytes / 2**30:.2f} GB GPU memory for runtime buffers.",
            f"[MemUsageChange] Allocated {self.decoder_bytes / 2**30:.2f} GB GPU memory for decoder.",
        ]


def trtllm_buffers(
    *,
    max_batch_size: int,
    vocab_size: int,
    max_seq_len: int,
    tp: int,
    pp: int = 1,
    last_stage: bool = True,
    draft_tokens: int = 0,
    max_num_tokens: int = 0,
    hidden_size: int = 0,
    dtype_bytes: int = 2,
) -> TrtllmBuffers:
    """The C++ runtime's buffers on one rank of an engine built for ``max_batch_size`` sequences of ``max_seq_len``
    tokens, ``pp`` pipeline stages (``last_stage``: this rank's is the last), ``draft_tokens`` a step; the hidden
    states between stages are ``max_num_tokens`` x ``hidden_size`` x ``dtype_bytes``."""
    return TrtllmBuffers(
        max_batch_size, TRTLLM_BEAM, vocab_size_padded(vocab_size, tp), max_seq_len, pp=pp, last_stage=last_stage,
        draft_tokens=draft_tokens, hidden_states_bytes=max_num_tokens * hidden_size * dtype_bytes,
    )  # fmt: skip
