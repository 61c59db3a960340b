"""SGLang's pools for a hybrid Gated DeltaNet model (Qwen3-Next, Qwen3.5/3.6), Mamba-2 model (Nemotron-H, Falcon-H1,
Granite-4.0-H) or KDA model (Kimi-Linear), by release: the recurrent-state ("Mamba cache") slots, the full-attention KV pool beside them, and the
running requests the slots allow.

Read in the wheels' ``model_executor/model_runner.py`` (0.5.2-0.5.6.post2), ``model_executor/model_runner_kv_cache_mixin.py``
(0.5.7-0.5.15) and ``mem_cache/kv_cache_configurator.py`` (0.5.16-0.5.23), ``handle_max_mamba_cache`` and the
``max_num_reqs`` step of ``init_memory_pool`` (``_resolve_max_num_reqs``/``resolve_max_num_reqs`` from 0.5.10), with
``rest`` = what ``mem_fraction_static`` leaves after the weights (``plan._sglang``'s available bytes). Every rule
below is the one function's, whatever the mixer; what differs by mixer is the release that keeps the radix cache
(``SPLIT_FROM``):

- The radix cache off (Gated DeltaNet to 0.5.3.post1: ``is_hybrid_gdn``, which lists Falcon-H1 too in 0.5.3, then
  every ``mambaish_config``; Mamba-2 to 0.5.6: ``mamba2_config`` "model detected, disable radix cache"; KDA to
  0.5.13, ``KDA_ARCHITECTURES``; any release under ``--disable-radix-cache``): ``max_mamba_cache_size`` slots = ``--max-running-requests`` where given, else 512
  (from 0.5.9: the ratio split below), taken from ``rest``; one slot a request, so at most that many run. Under DP
  attention the server's figure is divided over its ranks (a Mamba-2 or KDA model's only from 0.5.7: refused
  before).
- The radix cache kept (Gated DeltaNet from 0.5.3.post2; Mamba-2 from 0.5.6.post1: ``MambaRadixCache`` for
  Nemotron-H and Falcon-H1 in ``server_args.py``, for Granite-4.0-H with Mamba layers from 0.5.9, when SGLang first
  serves it): the state gets ``rest x r / (1 + r)``, r = ``--mamba-full-memory-ratio`` (0.9 in every release read),
  ``slots = that // per_request``; the KV pool is ``rest - slots x per_request``; the running requests are capped at
  ``slots // s``, s the state slots one request may hold: ``MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO`` 3, plus 2
  ping-pong slots where ``extra_buffer`` runs with the overlap scheduler (``_calculate_mamba_ratio``), and in 0.5.7
  for every strategy (its condition gives them unless ``extra_buffer`` runs with speculative decoding; 0.5.8 fixed it).
- 0.5.14 on: ``--mamba-radix-cache-strategy auto`` resolves to ``extra_buffer`` for these architectures with the
  default overlap scheduler and Triton linear attention (``server_args.py`` ``_handle_mamba_radix_cache`` and
  ``_support_mamba_cache_extra_buffer``, 0.5.14; ``arg_groups/overrides.py`` ``_mamba_radix_cache_resolution`` and
  ``_MAMBA_EXTRA_BUFFER_ARCHS`` from 0.5.15, Nemotron-H, Falcon-H1 and Granite-4.0-H listed to 0.5.23; Kimi-Linear
  from 0.5.16): s = 5;
  0.5.8-0.5.13 resolve it to ``no_buffer`` (``_handle_missing_default_values``; Mamba-2's branches assert
  ``extra_buffer`` off): s = 3, as before 0.5.7.
- 0.5.17 on: the pool's padding slot is paid from the budget: ``slots = (share - per_request) // per_request``,
  ``slots + 1`` taken from ``rest``, and one more than a given cap (0.5.3.post2-0.5.16 allocate it beyond the budget).

One request's state on one rank (``configs/mamba_utils.py`` ``mamba_cache_per_req``, ``Mamba2StateShape.create``,
called with each config's fields: Qwen3-Next's, ``NemotronHConfig``'s, ``FalconH1Config``'s,
``GraniteMoeHybridConfig``'s ``mamba2_cache_params``; ``KimiLinearStateShape``, its three convolutions over q, k and
v): per state layer, the conv state (conv channels / tp) x (kernel
- 1) in bf16 (``SGLANG_MAMBA_CONV_DTYPE``) plus the recurrent state (heads / tp) x head dim x state size in fp32
(``mamba2_state_dtype``; 0.5.2-0.5.8: ``--mamba-ssm-dtype``, default float32), or, for a Gated DeltaNet model from
0.5.9, its config's ``mamba_ssm_dtype`` (Qwen3.5's); the Mamba-2 configs pass none. The conv channels are the inner
width plus two groups' worth (``core.engine.state_slot``); groups that tp does not divide are padded to tp
(``extra_groups_for_head_shards``).

Not priced: speculative decoding's intermediate states (``handle_max_mamba_cache``'s joint solve: such a plan is
refused, ``core.engine.plan._sglang_state_pool``), a ``--max-mamba-cache-size`` given, other hybrids (short conv,
lightning attention: their strategy is set per architecture and release). Pure Python.
"""

from __future__ import annotations

from typing import NamedTuple

from mha_cli.core.byte_units import GIB
from mha_cli.core.engine.prefill_graphs import LATEST_READ
from mha_cli.core.engine.release_numbers import release_key
from mha_cli.core.engine.sglang_running import running_release
from mha_cli.core.engine.state_slot import slot_parts_per_layer
from mha_cli.core.errors import BadInputError
from mha_cli.core.schemas import ModelSpec

GDN_ARCHITECTURES = frozenset({"Qwen3NextForCausalLM", "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration"})  # fmt: skip
"""The hybrid GDN architectures whose state pool is priced here: ``is_hybrid_gdn`` (0.5.2-0.5.3, Qwen3-Next), and
from 0.5.14 both ``_MAMBA_RADIX_CACHE_ARCHS`` and ``_MAMBA_EXTRA_BUFFER_ARCHS`` (``arg_groups/overrides.py``)."""
KDA_ARCHITECTURES = frozenset({"KimiLinearForCausalLM"})
"""The KDA hybrid whose state pool is priced here: ``kimi_linear_config`` (0.5.4.post2, when SGLang first serves it,
on), with the radix cache off to 0.5.13 ("Disabling Radix Cache for KimiLinearForCausalLM as it is not yet
supported"; ``_handle_mamba_radix_cache(support_mamba_cache=False)`` from 0.5.9), kept from 0.5.14, in
``_MAMBA_EXTRA_BUFFER_ARCHS`` from 0.5.16."""
MAMBA2_ARCHITECTURES = frozenset({"NemotronHForCausalLM", "FalconH1ForCausalLM", "GraniteMoeHybridForCausalLM"})
"""The hybrid Mamba-2 architectures whose state pool is priced here: ``mamba2_config`` in every release that serves
them (Falcon-H1 from 0.5.3, Nemotron-H from 0.5.3.post1, Granite-4.0-H from 0.5.9), and from 0.5.14 in the
extra-buffer lists."""

MAMBA_FULL_MEMORY_RATIO = 0.9
"""``--mamba-full-memory-ratio``'s default, state bytes to full-attention KV bytes (0.5.3.post2-0.5.23)."""
FIXED_SLOTS = 512
"""The state slots where the radix cache is off and no ``--max-running-requests`` is given."""
Release = tuple[int, int, int, int]
"""A release as (major, minor, patch, post): 0.5.6.post1 is (0, 5, 6, 1)."""
SPLIT_FROM: dict[str, Release] = {"gated_deltanet": (0, 5, 3, 2), "mamba2": (0, 5, 6, 1), "kda": (0, 5, 14, 0)}
"""By mixer, the first release keeping the radix cache, so splitting ``rest`` by ``mamba_full_memory_ratio``
(``handle_max_mamba_cache``); before it, the fixed slots. 0.5.3.post2 turns the radix cache off for ``mamba2_config``
alone; 0.5.6.post1 drops that and sends Nemotron-H and Falcon-H1 to ``MambaRadixCache`` (``server_args.py``)."""
MIXER_NAMES = {"gated_deltanet": "Gated DeltaNet", "mamba2": "Mamba-2", "kda": "KDA"}
"""The mixers priced here, as messages name them."""
ARCHITECTURES = {"gated_deltanet": GDN_ARCHITECTURES, "mamba2": MAMBA2_ARCHITECTURES, "kda": KDA_ARCHITECTURES}
"""By mixer, the architectures whose state pool is priced here."""
DP_SPLITS_ALL_FROM: Release = (0, 5, 7, 0)
"""The first release dividing a radix-off pool's slots by the DP-attention ranks for every hybrid; before it only
``hybrid_gdn_config``'s (a Mamba-2 model's ranks each take the server's whole ``--max-running-requests``)."""
RADIX_OFF_SPLIT_FROM: Release = (0, 5, 9, 0)
"""The first release splitting ``rest`` by the ratio with the radix cache off and no ``--max-running-requests``
(``handle_max_mamba_cache``'s last branch; before it, ``FIXED_SLOTS``)."""
PING_PONG_FOR_ALL: Release = (0, 5, 7, 0)
"""The one release giving every hybrid that keeps its radix cache the 2 ping-pong slots, whatever its strategy
(``model_runner_kv_cache_mixin.py``: ``OVERLAP`` unless ``extra_buffer`` runs with speculative decoding); 0.5.8
gives them to ``extra_buffer`` alone."""
EXTRA_BUFFER_FROM: dict[str, Release] = {"gated_deltanet": (0, 5, 14, 0), "mamba2": (0, 5, 14, 0), "kda": (0, 5, 16, 0)}
"""By mixer, the first release whose ``auto`` radix-cache strategy is ``extra_buffer`` for these architectures."""
PADDING_SLOT_FROM: Release = (0, 5, 17, 0)
"""The first release paying the state pool's padding slot from the budget."""
SLOTS_NO_BUFFER = 3
"""``MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO``: state slots per running request under ``no_buffer``."""
SLOTS_WITH_PING_PONG = 5
"""3 + ``MAMBA_CACHE_V2_ADDITIONAL_RATIO_OVERLAP`` (2 ping-pong slots with the overlap scheduler)."""


class StatePool(NamedTuple):
    """SGLang's state pool on one rank and what it leaves the KV pool."""

    release: str
    """The release whose rules priced it."""
    kind: str
    """The mixer (``RecurrentSpec.kind``): ``gated_deltanet``, ``mamba2`` or ``kda``."""
    conv_bytes: int
    """One state slot's conv states (every linear-attention layer of one request) on one rank, bytes."""
    ssm_bytes: int
    """One state slot's recurrent (SSM) states on one rank, bytes."""
    slots: int
    """``max_mamba_cache_size``: state slots, the padding slot not counted."""
    state_bytes: int
    """Bytes the state pool takes from ``rest``."""
    slots_per_request: int
    """State slots one running request may hold (``_calculate_mamba_ratio``; 1 where the radix cache is off)."""
    sized_by_request: bool
    """The slots are the ``--max-running-requests`` given (the radix cache off)."""
    kv_bytes: int
    """What is left for the full-attention KV pool (bytes; negative: nothing)."""

    @property
    def per_request(self) -> int:
        """Bytes of one state slot on one rank (SGLang's ``mamba_cache_per_req``)."""
        return self.conv_bytes + self.ssm_bytes

    @property
    def running_cap(self) -> int:
        """Requests the state pool lets run at once: ``slots // slots_per_request``."""
        return max(0, self.slots) // self.slots_per_request

    def how(self) -> str:
        """The budget line's explanation."""
        release = _release(self.release)
        split = (
            f"mamba_full_memory_ratio {MAMBA_FULL_MEMORY_RATIO}: {MAMBA_FULL_MEMORY_RATIO}/"
            f"{1 + MAMBA_FULL_MEMORY_RATIO:g} of what the fraction leaves"
        )
        if self.slots_per_request > 1:
            rule = split
        else:
            off = (
                f"for {MIXER_NAMES[self.kind]} before {_named(SPLIT_FROM[self.kind])}"
                if release < SPLIT_FROM[self.kind]
                else "by --disable-radix-cache"
            )
            sized = "--max-running-requests" if self.sized_by_request else (
                f"{FIXED_SLOTS} (no --max-running-requests)" if release < RADIX_OFF_SPLIT_FROM else split
            )  # fmt: skip
            rule = f"radix cache off {off}, one slot a request: {sized}"
        padding = " + 1 padding slot" if release >= PADDING_SLOT_FROM else ""
        return (
            f"SGLang {self.release}'s Mamba cache: {self.slots:,} slots{padding} x {self.per_request / 2**20:.1f} MiB"
            f" ({rule})"
        )

    def log_line(self) -> str:
        """``Mamba Cache is allocated...`` as SGLang logs it (``memory_pool.py``; its tensors hold slots + 1)."""
        held = self.slots + 1
        return (
            f"Mamba Cache is allocated. max_mamba_cache_size: {self.slots}, conv_state size:"
            f" {held * self.conv_bytes / GIB:.2f}GB, ssm_state size: {held * self.ssm_bytes / GIB:.2f}GB"
        )

    def refusal(self) -> str | None:
        """SGLang's start-up error where the state pool holds no slot, or too few for one request (the messages of
        0.5.13 on; earlier releases start and serve nothing); None where a request can run."""
        if self.slots <= 0:
            return (
                "RuntimeError: Not enough GPU memory for hybrid (mamba/linear-attention) state cache. Computed"
                f" max_mamba_cache_size={self.slots}"
            )
        if self.running_cap <= 0:
            return (
                "RuntimeError: Hybrid (mamba/linear-attention) state cache is too small to serve any requests."
                f" max_mamba_cache_size={self.slots}, mamba_ratio={self.slots_per_request}"
            )
        return None


def _release(release: str) -> Release:
    """The release with its post number; a commit, dev build or line: the newest read
    (``sglang_running.running_release``)."""
    triple = running_release(release, "sglang-0.5")
    typed = release_key(release)
    post = typed[3] if typed[:3] == triple else 0  # the release priced is the one typed
    return (*triple, post)


def _named(release: Release) -> str:
    """``release`` as SGLang names it: 0.5.6.post1."""
    return ".".join(map(str, release[:3])) + (f".post{release[3]}" if release[3] else "")


def priced_here(model: ModelSpec) -> bool:
    """Whether SGLang's state pool for ``model`` is priced here: a Gated DeltaNet hybrid served as one of
    ``GDN_ARCHITECTURES``, a Mamba-2 hybrid as one of ``MAMBA2_ARCHITECTURES``, a KDA one as Kimi-Linear."""
    from mha_cli.core.engine.architectures_served import served_as

    state = model.recurrent
    if state is None or state.kind not in ARCHITECTURES:
        return False
    return bool(ARCHITECTURES[state.kind].intersection(served_as(model)))


def state_parts_per_layer(model: ModelSpec, tp: int) -> tuple[int, int]:
    """(conv, recurrent) bytes one state layer holds for one request on one rank, as SGLang allocates them (module
    docstring: conv in bf16, the recurrent state in the config's ``mamba_ssm_dtype``, else fp32; groups padded to tp);
    ``model.recurrent`` must be a Gated DeltaNet, Mamba-2 or KDA mixer."""
    state = model.recurrent
    assert state is not None
    typed = state.kind == "gated_deltanet" and state.state_dtype == "activation"  # Qwen3.5's mamba_ssm_dtype
    ssm_bytes = 2 if typed else 4  # else float32
    return slot_parts_per_layer(state, tp, conv_bytes=2, ssm_bytes=ssm_bytes, pad_groups=True)


def sglang_state_model(model: ModelSpec) -> ModelSpec:
    """``model`` with its recurrent state in the dtype SGLang keeps it, for the step's state traffic
    (``core.cost.work.sequence_ops``): the config's (``state_dtype`` set), else float32. ``configs/mamba_utils.py``
    ``mamba2_state_dtype`` (0.5.10 read: float32 unless the config's ``mamba_ssm_dtype`` or the environment's
    ``SGLANG_MAMBA_SSM_DTYPE`` says otherwise) types the state of every hybrid config that calls it (Qwen3-Next,
    Nemotron-H, Falcon-H1, LFM2) and ``KimiLinearCacheParams`` by its default; 0.5.2-0.5.8: ``--mamba-ssm-dtype``, default
    float32. A Mamba-2 config passes no dtype of its own (Nemotron's ``mamba_ssm_cache_dtype`` is vLLM's), so its
    state is float32 whatever it says. ``core.kv``'s engine convention (vLLM's) keeps an untyped Mamba-2 or Gated
    DeltaNet state in the model's dtype instead, half the bytes."""
    state = model.recurrent
    if state is None or state.state_dtype == "fp32":
        return model
    if state.state_dtype != "auto" and state.kind != "mamba2":  # typed by the config SGLang reads
        return model
    return model.model_copy(update={"recurrent": state.model_copy(update={"state_dtype": "fp32"})})


def engine_state_model(model: ModelSpec, engine: str) -> ModelSpec:
    """``model`` with its recurrent state in the dtype ``engine`` keeps it, for every case priced for that engine
    (``plan.serving_case``, ``latency.predict_latency``): SGLang's (``sglang_state_model``), else ``model`` itself
    (``core.kv``'s convention is vLLM's)."""
    return sglang_state_model(model) if engine == "sglang" else model


def state_pool(
    model: ModelSpec,
    rest: int,
    *,
    tp: int,
    state_layers: int,
    release: str | None,
    requested: int | None = None,
    radix_cache: bool = True,
    dp_ranks: int = 1,
) -> StatePool:
    """SGLang ``release``'s (None: the newest read) state pool on one rank, from ``rest`` bytes (what the fraction
    leaves after the weights), for ``state_layers`` state layers on the rank; ``requested``: the
    ``--max-running-requests`` given, per rank, which sizes the pool where the radix cache is off (before the release
    that keeps it, or ``radix_cache`` False: ``--disable-radix-cache``); ``dp_ranks``: DP attention's ranks."""
    release = release or LATEST_READ
    key = _release(release)
    assert model.recurrent is not None
    kind = model.recurrent.kind
    conv, recurrent = state_parts_per_layer(model, tp)
    per_request = (conv + recurrent) * state_layers
    radix_off = _radix_off(kind, key, radix_cache)
    padding = int(key >= PADDING_SLOT_FROM)  # the pool's padding slot, paid from the budget
    if radix_off and (requested or key < RADIX_OFF_SPLIT_FROM):
        if dp_ranks > 1 and kind != "gated_deltanet" and key < DP_SPLITS_ALL_FROM:
            raise BadInputError(
                f"SGLang {release} gives every DP-attention rank of a {MIXER_NAMES[kind]} model the server's whole"
                " --max-running-requests (or 512) state slots, which is not priced: plan it without --dp, or with"
                " --engine sglang@0.5.7 or later"
            )
        slots = requested or FIXED_SLOTS // dp_ranks  # the server's 512 split over its ranks
    else:
        share = max(0, rest) * MAMBA_FULL_MEMORY_RATIO / (1 + MAMBA_FULL_MEMORY_RATIO)
        slots = int((share - padding * per_request) // per_request)
    state = (slots + padding) * per_request
    ping_pong = key >= EXTRA_BUFFER_FROM[kind] or key[:3] == PING_PONG_FOR_ALL[:3]
    buffered = SLOTS_WITH_PING_PONG if ping_pong else SLOTS_NO_BUFFER
    ratio = 1 if radix_off else buffered  # one slot a request where no radix tree holds states
    return StatePool(
        release=release, kind=kind, conv_bytes=conv * state_layers, ssm_bytes=recurrent * state_layers, slots=slots,
        state_bytes=state, slots_per_request=ratio, sized_by_request=bool(radix_off and requested),
        kv_bytes=rest - state,
    )  # fmt: skip


def sized_by_request(model: ModelSpec, release: str | None, radix_cache: bool) -> bool:
    """Whether SGLang ``release`` (None: the newest read) sizes ``model``'s state pool by ``--max-running-requests``
    where one is given: its radix cache off, by the release or by ``--disable-radix-cache``."""
    assert model.recurrent is not None
    return _radix_off(model.recurrent.kind, _release(release or LATEST_READ), radix_cache)


def _radix_off(kind: str, release: Release, radix_cache: bool) -> bool:
    """Whether SGLang ``release`` runs a ``kind`` hybrid without its radix cache: before ``SPLIT_FROM``, or under
    ``--disable-radix-cache`` (``radix_cache`` False)."""
    return not radix_cache or release < SPLIT_FROM[kind]
