"""Build and measure one rank's stack: ``measure_rank(plan, device, tp_rank, tp_size) -> RankResult``.

The seam for every way of running verify: the single-process run calls it once (rank 0); a
tensor-parallel runner calls it in each of its processes (with ``all_reduce`` set to its collective)
and hands the results to ``scopes.assemble``.

Steps, in order (``on_stage`` names them): build the stack (``build.build_stack``: embedding, the
plan's first layers, final norm, LM head) and read its parameter bytes; allocate the caches with
the model's own ``new_cache`` (sized from its layers' attributes, never from ``core.kv``) and read
their bytes; prefill ``plan.prefill_tokens`` random token ids through the stack, writing the cache
(timed; on CUDA the allocator's peak recorded); decode one token at a time at position seq_len - 1
(each step feeds the previous step's argmax: a real generation step, timed); compare cached decode
with the full forward on a fresh small cache. A hybrid's linear layer's cache is its fixed ``MixerState``
(conv and recurrent state), allocated by the same ``new_cache``; its bytes are also summed apart
(``measured_state_bytes``).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from mha_cli.core.schemas import ModelSpec
from mha_cli.nn.dispatch import count_dispatches
from mha_cli.nn.kv_cache import CACHE_DTYPES
from mha_cli.nn.mixers import MixerState
from mha_cli.nn.sdpa import record_sdpa_backends
from mha_cli.verify import measure
from mha_cli.verify.build import build_stack
from mha_cli.verify.numerics import check_cached_decode
from mha_cli.verify.plan import VerifyPlan, has_state_layers
from mha_cli.verify.report import CacheFill, RankResult, TimingStats

DECODE_WARMUP = 3
PREFILL_WARMUP = 1
CPU_PREFILL_REPS = 3
"""Timed prefills on CPU at most (each is a whole forward through the stack)."""


def measure_rank(
    plan: VerifyPlan,
    device: torch.device,
    *,
    tp_rank: int = 0,
    tp_size: int | None = None,
    reps: int = 10,
    tolerance: float | None = None,
    all_reduce: Callable[[torch.Tensor], torch.Tensor] | None = None,
    probe: measure.AllocatorProbe | None = None,
    on_stage: Callable[[str], None] = lambda stage: None,
) -> RankResult:
    """Build rank ``tp_rank`` of ``tp_size`` (default ``plan.tp``) of ``plan`` on ``device`` and measure it.

    ``all_reduce`` replaces the model's identity reduce (a TP runner's collective). ``probe`` reads the CUDA
    allocator (default: torch.cuda's on a CUDA device, none elsewhere; tests pass a stand-in).
    """
    tp_size = plan.tp if tp_size is None else tp_size
    dtype = CACHE_DTYPES[plan.dtype]
    batch, seq = plan.deployment.batch, plan.deployment.seq_len
    if probe is None and device.type == "cuda":
        probe = measure.AllocatorProbe(device)

    on_stage("build")
    baseline = probe.allocated() if probe else 0
    model = build_stack(plan, device, tp_rank=tp_rank, tp_size=tp_size)
    if all_reduce is not None:
        model.all_reduce = all_reduce
    after_weights = probe.allocated() if probe else 0
    parameters, buffers = list(model.parameters()), list(model.buffers())
    measured_weights = sum(p.nbytes for p in parameters)
    layer_weights = [sum(p.nbytes for p in layer.parameters()) for layer in model.model.layers]

    caches = model.new_cache(batch, seq, dtype=dtype)
    after_cache = probe.allocated() if probe else 0
    layer_cache = [cache.nbytes for cache in caches]
    measured_state = sum(_state_of(cache).nbytes for cache in caches if _state_of(cache) is not None)

    on_stage("prefill")
    before_prefill = probe.allocated() if probe else 0
    if probe:
        probe.reset_peak()
    prefill_reps = reps if device.type == "cuda" else min(reps, CPU_PREFILL_REPS)
    prefill, prefill_backends, next_token, prefill_dispatches = _time_prefill(model, caches, plan, device, prefill_reps)
    prefill_peak = probe.peak() if probe else 0

    on_stage("decode")
    decode, decode_backends, decode_dispatches = _time_decode(model, caches, next_token, seq - 1, device, reps)

    on_stage("numerics")
    with record_sdpa_backends() as numerics_backends:
        numerics = check_cached_decode(
            model,
            vocab_size=plan.model.embeddings.vocab_size,
            dtype=dtype,
            device=device,
            tolerance=tolerance,
            tokens=numerics_tokens(plan.model, seq),
        )

    allocator = None
    if probe:  # a hybrid's weight prediction is approximate: the allocator is held to the measured tensors
        weights_expected = measured_weights if has_state_layers(plan.model) else plan.predicted_weight_bytes
        allocator = measure.allocator_check(
            baseline=baseline, after_weights=after_weights, after_cache=after_cache, before_prefill=before_prefill,
            prefill_peak=prefill_peak, weights_expected=weights_expected + sum(b.nbytes for b in buffers),
            weights_tensors=len(parameters) + len(buffers), cache_expected=plan.predicted_cache_bytes,
            cache_tensors=sum(max(1, len(measure.tensors_of(cache))) for cache in caches),
            predicted_workspace=plan.workspace_bytes,
        )  # fmt: skip
    return RankResult(
        tp_rank=tp_rank, tp_size=tp_size, n_layers_built=plan.n_layers_built, measured_weight_bytes=measured_weights,
        layer_weight_bytes=layer_weights, non_layer_weight_bytes=measured_weights - sum(layer_weights),
        buffer_bytes=sum(b.nbytes for b in buffers), measured_cache_bytes=sum(layer_cache),
        layer_cache_bytes=layer_cache, measured_state_bytes=measured_state, cache_fill=cache_fill(plan), prefill=prefill, decode=decode,
        numerics=numerics.model_copy(update={"window_unchecked": window_unchecked(plan.model, seq)}),
        sdpa_backends={"prefill": prefill_backends, "decode": decode_backends,
                       "numerics": sorted(set(numerics_backends))},
        allocator=allocator, decode_dispatches=decode_dispatches, prefill_dispatches=prefill_dispatches,
    )  # fmt: skip


def _time_prefill(
    model: nn.Module, caches: list, plan: VerifyPlan, device: torch.device, reps: int
) -> tuple[TimingStats, list[str], torch.Tensor, int]:
    """Prefill ``plan.prefill_tokens`` seeded random token ids: the first call writes the cache (and warms up, its
    operators counted), ``reps`` more are timed. Returns (timings, SDPA backends, the next token of each sequence
    (b, 1), operators one prefill dispatches)."""
    generator = torch.Generator(device="cpu").manual_seed(0)
    shape = (plan.deployment.batch, plan.prefill_tokens)
    prompt = torch.randint(plan.model.embeddings.vocab_size, shape, generator=generator).to(device)  # (b, p)

    def prefill_step() -> torch.Tensor:
        return model(prompt, caches, 0)  # (b, p, vocab)

    with torch.inference_mode():
        with record_sdpa_backends() as backends:
            with count_dispatches() as dispatched:
                logits = prefill_step()  # (b, p, vocab)
            next_token = logits[:, -1:].argmax(-1)  # (b, 1)
        times, timer = measure.time_calls(prefill_step, device, PREFILL_WARMUP - 1, reps)
    stats = measure.summarise(times, warmup=PREFILL_WARMUP, timer=timer)
    return stats, sorted(set(backends)), next_token, dispatched.total


def _time_decode(
    model: nn.Module, caches: list, first_token: torch.Tensor, position: int, device: torch.device, reps: int
) -> tuple[TimingStats, list[str], int]:
    """Generation steps at ``position``, each feeding the previous step's argmax: warm-up (its operators counted),
    then ``reps`` timed. Returns (timings, SDPA backends, operators one step dispatches, its argmax included)."""
    state = {"token": first_token}  # (b, 1)

    def decode_step() -> None:
        logits = model(state["token"], caches, position)  # (b, 1, vocab)
        state["token"] = logits[:, -1:].argmax(-1)  # (b, 1)

    with torch.inference_mode():
        with record_sdpa_backends() as backends, count_dispatches() as dispatched:
            decode_step()
        times, timer = measure.time_calls(decode_step, device, DECODE_WARMUP - 1, reps)
    return measure.summarise(times, warmup=DECODE_WARMUP, timer=timer), sorted(set(backends)), dispatched.total


def cache_fill(plan: VerifyPlan) -> CacheFill:
    """What wrote the cache before the decode timing: the prefill, the decode steps, and what stayed zeros."""
    seq, prefilled = plan.deployment.seq_len, plan.prefill_tokens
    unwritten = max(0, seq - 1 - prefilled)
    how = f"positions 0..{prefilled - 1} by the model's prefill"
    if unwritten:
        how += (
            f"; {prefilled}..{seq - 2} left as allocated (zeros: {unwritten:,} tokens not prefilled, a decode step's"
            f" time does not depend on the values it reads; --prefill-tokens {seq} fills them all)"
        )
    how += f"; position {seq - 1} by each timed decode step, {_attended(plan.model, seq)}"
    if has_state_layers(plan.model):
        how += "; the linear layers' fixed state (no positions) updated in place by the prefill and every step"
    return CacheFill(prefilled_tokens=prefilled, decode_position=seq - 1, unwritten_tokens=unwritten, how=how)


NUMERICS_TOKENS = 16
"""The cached-decode comparison's length when no sliding window is within reach (``numerics_tokens``)."""
WINDOW_REACH = 1024
"""The widest window the comparison runs past (a full forward of window + 8 tokens on the built layers)."""
LOGITS_REACH = 1 << 25
"""The most logits (tokens x vocabulary) the comparison holds when it runs past a window: it keeps both paths'
logits and their fp32 copies, about 0.5 GiB at this many (Gemma 3's 1,024 window over its 262,144-token vocabulary
would be 4 times that: the review of this change measured 6.9 GB RSS against 2.2); past it, 16 tokens."""


def numerics_tokens(model: ModelSpec, seq: int) -> int:
    """The cached-decode comparison's length: 16 tokens, or past the sliding window (window + 8, its last 4 decoded
    one at a time) where the run's own ``seq`` passes it, it is at most ``WINDOW_REACH`` and its logits at most
    ``LOGITS_REACH``, so the window's mask and its ring cache's wrap-around are compared too (a window of 16 or more
    never was: trial 258)."""
    window = model.layers.sliding_window
    if window is None or window + 8 <= NUMERICS_TOKENS or window + 8 > seq or window > WINDOW_REACH:
        return NUMERICS_TOKENS
    if (window + 8) * model.embeddings.vocab_size > LOGITS_REACH:
        return NUMERICS_TOKENS
    return window + 8


def window_unchecked(model: ModelSpec, seq: int) -> str | None:
    """Why the cached-decode comparison stops short of ``model``'s sliding window (``numerics_tokens``), so that its
    pass is not read as the window's mask and ring cache compared (trial 327 #2); None where it runs past it, or the
    model has none."""
    window = model.layers.sliding_window
    if window is None or numerics_tokens(model, seq) > NUMERICS_TOKENS or window + 8 <= NUMERICS_TOKENS:
        return None
    vocab = model.embeddings.vocab_size
    if window > WINDOW_REACH:  # the limits no --seq lifts first, so that a --seq named would do (review 329 #5)
        why = f"it is wider than the {WINDOW_REACH:,} the comparison runs past"
    elif (window + 8) * vocab > LOGITS_REACH:
        why = f"{window + 8:,} tokens x {vocab:,} logits are more than the {LOGITS_REACH:,} it holds"
    else:
        why = f"the run's {seq:,} tokens do not pass it (--seq {window + 8} would)"
    return f"the sliding window ({window:,}) is not compared: {why}"


def _attended(model: ModelSpec, seq: int) -> str:
    """What a decode step at the last of ``seq`` positions attends to: all of them, or on a sliding-window layer its
    window and on a chunked one its chunk (every layer is one of those where no pattern names the kinds)."""
    if model.attention_free:  # Mamba, Mamba-2 (trial 374 #2: "which attends to all 64")
        return "which reads each layer's fixed state (no layer attends)"
    layers = model.layers
    window = layers.sliding_window if layers.sliding_window is not None and layers.sliding_window < seq else None
    chunk = layers.attention_chunk if layers.attention_chunk is not None and layers.attention_chunk < seq else None
    if layers.pattern is None:  # one kind on every layer: a window first, as the schema reads it
        if window is not None:
            return f"which attends to its last {window:,} on every layer (a sliding window)"
        if chunk is not None:
            return f"which attends to its chunk of at most {chunk:,} on every layer"
        return f"which attends to all {seq:,}"
    limits = []
    if window is not None and "local" in layers.pattern:
        limits.append(f"a sliding-window layer to its last {window:,}")
    if chunk is not None and "chunked" in layers.pattern:
        limits.append(f"a chunked layer to its chunk of at most {chunk:,}")
    return f"which attends to all {seq:,}" + (f" ({'; '.join(limits)})" if limits else "")


def _state_of(cache: object) -> MixerState | None:
    """A layer's fixed state: its cache when a mixer replaces attention, the mixer's part beside attention
    (Falcon-H1's ``ParallelCache``), or None for attention alone."""
    if isinstance(cache, MixerState):
        return cache
    return getattr(cache, "mixer", None) if isinstance(getattr(cache, "mixer", None), MixerState) else None
