"""SGLang's hybrid sliding-window pool (``SWAKVPool``): full layers and sliding (or chunked) layers in pools of their
own, the sliding one ``swa_full_tokens_ratio`` (0.8) the full one's size, so the memory the sliding layers would hold
at full length buys more full-layer tokens.

Which architectures get it by default (``configs/model_config.py``: ``is_hybrid_model`` 0.4.9-0.5.7,
``is_hybrid_swa_model`` from 0.5.8, each with ``get_hybrid_layer_ids``; ``disable_hybrid_swa_memory`` set by
``server_args.py`` ``ServerArgs._handle_model_specific_adjustments`` to 0.5.15, ``arg_groups`` overrides from 0.5.16;
read in every wheel 0.4.9-0.5.23), of those mha expresses:
- Llama 4 (``Llama4ForConditionalGeneration``, its published checkpoints; mha keeps no architecture name, so a
  text-only ``Llama4ForCausalLM`` conversion, never hybrid, is not told apart): 0.4.9-0.5.7 only with
  ``--hybrid-kvcache-ratio`` (default None: off); on from 0.5.8 on every GPU and under speculative decoding (no
  override disables it, 0.5.8-0.5.23); its chunked layers ((i + 1) % 4 != 0) are the sliding ones, their window
  ``attention_chunk_size`` (``ModelRunner``: "Setting sliding_window_size to be attention_chunk_size");
- Gemma 2, Gemma 3 and Gemma-3n: off in every release (not listed; the override sets ``disable_hybrid_swa_memory``);
  Mistral, Phi-3, Cohere2 (Command R7B) and other sliding-window models SGLang does not list: off;
- not expressed here: MiMo-V2 (0.5.7 on), Step3p5 (0.5.9), Gemma 4 (0.5.11), DeepSeek V4, Laguna (0.5.12), Granite
  SWA (0.5.19) and the others of 0.5.13-0.5.23's list.

When it is on for gpt-oss, by release (``GptOssForCausalLM``):
- 0.5.5-0.5.7: off. ``server_args.py`` ``ServerArgs._handle_model_specific_adjustments`` sets
  ``disable_hybrid_swa_memory = True`` for it, and ``configs/model_config.py`` ``is_hybrid_model`` names Llama 4 (and
  MiMo-V2 from 0.5.7) alone (read in the 0.5.5, 0.5.6 and 0.5.7 wheels);
- 0.5.8: on (``is_hybrid_swa_model`` lists it, ``get_hybrid_layer_ids`` splits ``layer_types``), unless the attention
  backend is ``trtllm_mha`` (its default on SM100, ``is_sm100_supported``: B200, GB200, B300, GB300) or speculative
  decoding is on ("TODO: fix spec with SWA memory cache");
- 0.5.9: on, unless the backend is ``trtllm_mha`` (the speculative check is gone);
- 0.5.10 and later: on (read in 0.5.10, 0.5.11, 0.5.15 and 0.5.23: ``arg_groups/model_overrides/gpt_oss.py``
  disables nothing; ``SWA_SINK_ARCHS`` in ``is_hybrid_swa_model``).

The split (``model_executor/model_runner_kv_cache_mixin.py``: ``set_num_tokens_hybrid_swa`` 0.5.8-0.5.9,
``_resolve_hybrid_swa_tokens`` 0.5.10): the profiled tokens T (every layer priced alike, ``profile_max_num_token``)
hold T x (F x n_full + S x n_swa) bytes; full = page-aligned int(that / (F x n_full + r x S x n_swa)), swa =
page-aligned int(full x r); ``max_total_num_tokens`` = full. gpt-oss's sliding and full layers have the same heads,
so F = S and 0.5.8's token form (T x layers / (r x n_swa + n_full)) is the same number (Llama 4's chunked and full
layers alike). From 0.5.21
(``model_executor/pool_configurator.py``) the division is taken once on the bytes (available // (F x n_full + r x
S x n_swa)): at most a token apart, not priced. The request pool's estimate reads T before the split in 0.5.8-0.5.9
(``init_memory_pool``), the full tokens from 0.5.10 (``_resolve_memory_pool_config``). Pure Python.
"""

from typing import NamedTuple

Triple = tuple[int, int, int]

SWA_FULL_TOKENS_RATIO = 0.8
"""``ServerArgs.swa_full_tokens_ratio``'s default (``server_args.py`` 0.5.5-0.5.18; the ``fallback=0.8`` of
``arg_groups/fields/schedule.py`` in 0.5.23)."""
HYBRID_FROM: Triple = (0, 5, 8)
"""The first release whose gpt-oss and Llama 4 get the hybrid pool (0.5.7: ``disable_hybrid_swa_memory = True`` for
gpt-oss; Llama 4 only with ``--hybrid-kvcache-ratio``)."""
TRTLLM_MHA_KEPT_FROM: Triple = (0, 5, 10)
"""The first release that keeps it under the ``trtllm_mha`` backend, SM100's default (0.5.8-0.5.9 disable it)."""
SPECULATIVE_KEPT_FROM: Triple = (0, 5, 9)
"""The first release that keeps it under speculative decoding (0.5.8 disables it)."""
ESTIMATE_AFTER_SPLIT_FROM: Triple = (0, 5, 10)
"""The first release whose request-pool estimate reads the full tokens (0.5.8-0.5.9: the profiled tokens)."""
LLAMA4_FAMILIES = ("llama4", "llama4_text")
"""mha's families of Llama 4 (the preset's ``llama4``, a config's text ``llama4_text``): SGLang's
``Llama4ForConditionalGeneration``, on the hybrid pool from ``HYBRID_FROM`` (0.5.7: ``--hybrid-kvcache-ratio``)."""


def swa_pool_on(family: str | None, release: Triple, compute_capability: float | None, speculative: bool) -> bool:
    """Whether SGLang ``release`` serves a model of ``family`` on the hybrid pool at its default attention backend on
    a GPU of ``compute_capability`` (the module docstring): gpt-oss and Llama 4 alone of mha's families."""
    if release < HYBRID_FROM or family not in ("gpt_oss", *LLAMA4_FAMILIES):
        return False
    if family in LLAMA4_FAMILIES:
        return True
    sm100 = compute_capability is not None and int(compute_capability) == 10
    if sm100 and release < TRTLLM_MHA_KEPT_FROM:
        return False
    return not (speculative and release < SPECULATIVE_KEPT_FROM)


class SwaSplit(NamedTuple):
    """The two pools' sizes, tokens per layer."""

    full: int
    swa: int


def split_tokens(profiled: int, full_bytes: int, swa_bytes: int, page: int) -> SwaSplit:
    """The full and sliding pools from ``profiled`` tokens of every layer; ``full_bytes`` / ``swa_bytes``: one token
    of all full / all sliding layers on this rank (F x n_full, S x n_swa)."""
    total = profiled * (full_bytes + swa_bytes)
    full = int(total / (full_bytes + SWA_FULL_TOKENS_RATIO * swa_bytes)) // page * page
    return SwaSplit(full, int(full * SWA_FULL_TOKENS_RATIO) // page * page)
