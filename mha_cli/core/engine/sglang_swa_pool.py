"""SGLang's hybrid sliding-window pool for gpt-oss (``SWAKVPool``): full layers and sliding layers in pools of their
own, the sliding one ``swa_full_tokens_ratio`` (0.8) the full one's size, so the memory the sliding layers would hold
at full length buys more full-layer tokens.

When it is on, by release (``GptOssForCausalLM``):
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
so F = S and 0.5.8's token form (T x layers / (r x n_swa + n_full)) is the same number. From 0.5.21
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
"""The first release whose gpt-oss gets the hybrid pool (0.5.7: ``disable_hybrid_swa_memory = True``)."""
TRTLLM_MHA_KEPT_FROM: Triple = (0, 5, 10)
"""The first release that keeps it under the ``trtllm_mha`` backend, SM100's default (0.5.8-0.5.9 disable it)."""
SPECULATIVE_KEPT_FROM: Triple = (0, 5, 9)
"""The first release that keeps it under speculative decoding (0.5.8 disables it)."""
ESTIMATE_AFTER_SPLIT_FROM: Triple = (0, 5, 10)
"""The first release whose request-pool estimate reads the full tokens (0.5.8-0.5.9: the profiled tokens)."""
ARCHITECTURE = "GptOssForCausalLM"


def swa_pool_on(release: Triple, compute_capability: float | None, speculative: bool) -> bool:
    """Whether SGLang ``release`` serves gpt-oss on the hybrid pool at its default attention backend on a GPU of
    ``compute_capability`` (the module docstring)."""
    if release < HYBRID_FROM:
        return False
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
