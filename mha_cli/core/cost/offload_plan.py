"""Which tier serves a request's shared prefix, and what the host tier changes in TTFT (the closed form).

Requests cycle through ``shared_prefixes`` different prefixes of ``shared_prefix`` tokens each (conversations coming
back, documents asked about again): the working set is their whole blocks, K x prefix tokens.

On vLLM and SGLang (a prefix held once, ``core.cost.prefix_pool``) a prefix that K running requests' cycle keeps
linked is never evicted (K <= running). Otherwise its blocks go to the free queue's tail when its last request ends,
behind that request's own blocks, and the queue hands out blocks first in, first out over every block
(``core.serve.free_queue``; SGLang's radix cache evicts its least recently used leaves, finished requests' own
tokens among them, in the same order): between two uses of a prefix the K - 1 requests of the other prefixes take
their own blocks and their prefix's, less the output the U - 1 other running requests have still to take (half of
one on average each), so it survives when K x (own + prefix) - own - (U - 1) x output / 2 <= the pool (review 321
#1, trial 323 #1: the spare-room rule below kept 9 to 14 prefixes that vLLM evicts; review 324 #2: the users' output
still to come). The host tier stores every whole block of every request (vLLM's write-through, SGLang's backup of
radix nodes), least recently used out first: a prefix is still there at its next use when K x (own + prefix) -
(U - 1) x output / 2 <= the host pool. Near either bound a cycle a little too long still finds the front of its
prefix (the queue takes a prefix's last blocks first): the regime says none.

On TensorRT-LLM (each running request its own copy of everything, the floor) the prefix cache lives in the GPU
pool's spare blocks (the pool less what the running requests hold), and a request cycling through K prefixes under
LRU finds its own only if all K fit (a cyclic sweep larger than an LRU cache evicts each entry just before it is
asked for again); its secondary (host) pool takes every block evicted, the requests' own ones too, so it holds the
K prefixes when a cycle's K x (own + prefix) - (U - 1) x output / 2 fits it, as above (trial 394 #3). So:

- **GPU pool not the limit**: every prefix hit in the GPU; the host tier buys nothing.
- **pool-limited, the host holds them**: each prefix comes back from the host: its
  prefill computes the rest of the prompt, and the load, tokens x bytes per token / (host link x
  ``host_load_share``), is added to TTFT (vLLM loads before it schedules the request, SGLang before the batch).
  It *helps* when the load is shorter than computing the prefix, and *hurts* when longer (short prefixes, a fast
  GPU, a slow link): the engines load a hit whatever it costs.
- **pool-limited, the host too small** (or no host tier): every prefix recomputed.

The simulator (``core.serve.offload``) replays the same tiers request by request. Pure Python.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from mha_cli.core.cost.prefix_pool import own_blocks, shared_admitted, shares_prefix_blocks
from mha_cli.core.engine.mamba_cache_mode import unserved_reason
from mha_cli.core.engine.offload import HostPool, host_pool
from mha_cli.core.errors import BadInputError
from mha_cli.core.record import Record

if TYPE_CHECKING:
    from mha_cli.core.cost.profile import DeviceProfile
    from mha_cli.core.cost.serving import ServingPrediction
    from mha_cli.core.cost.stepper import ServingCase, Stepper
    from mha_cli.core.engine.plan import EnginePlan
    from mha_cli.core.schemas import DeploymentSpec, ModelSpec

Regime = Literal["gpu", "host", "recomputed"]


class OffloadPlan(Record):
    """The host tier of a plan and the regime its workload is in (``mha plan --kv-offload-gib``)."""

    host: HostPool | None
    """The host pool of one rank (None: no offload asked; the regime is still said for --shared-prefixes)."""
    shared_prefixes: int
    prefix_tokens: int
    """One prefix's tokens the caches hold (whole blocks)."""
    working_set_tokens: int
    """Every prefix's cached tokens together (shared_prefixes x prefix_tokens)."""
    gpu_spare_tokens: int
    """The GPU pool's tokens not held by the running requests (where TensorRT-LLM's prefix cache lives)."""
    cycle_tokens: int | None = None
    """vLLM and SGLang: the tokens a cycle through the K prefixes takes, K x (one request's own + prefix) less the
    output the other running requests have still to take: the free queue's first in, first out keeps a prefix when
    this less one request's own fits the pool, the host's LRU when this fits the host pool (module docstring); None on
    TensorRT-LLM."""
    host_cycle_tokens: int | None = None
    """Where each running request holds its own copy (TensorRT-LLM; vLLM with several KV cache groups): the tokens a
    cycle through the K prefixes takes on the host, whose tier stores every evicted block (each request's own and its
    prefix's, less the others' output to come): what the host regime is judged on (review 396 #1); None elsewhere."""
    pool_tokens: int = 0
    """The GPU pool's tokens (vLLM and SGLang: what the cycle is measured against)."""
    linked_throughout: bool = False
    """vLLM and SGLang: K <= the running requests, so each prefix is linked by one of them all the time."""
    regime: Regime
    """Where a request's prefix comes from: the GPU's prefix cache, the host tier, or nowhere (recomputed)."""
    load_ms: float = 0.0
    """Host regime: one prefix's load back to the GPU, in TTFT."""
    ttft_ms_with_host: float | None = None
    """Host regime: the plan's TTFT, the prefix loaded from the host."""
    ttft_ms_without_host: float | None = None
    """Host regime: the TTFT if the prefix were recomputed instead (what the plan gives without the host tier)."""
    note: str = ""

    @property
    def served_tokens(self) -> int:
        """Prompt tokens a cache tier serves each request (0 when recomputed)."""
        return 0 if self.regime == "recomputed" else self.prefix_tokens

    @property
    def helps(self) -> bool | None:
        """Host regime: whether loading beats recomputing the prefix (None in the other regimes)."""
        if self.ttft_ms_with_host is None or self.ttft_ms_without_host is None:
            return None
        return self.ttft_ms_with_host < self.ttft_ms_without_host


def prefix_regime(
    *, prefix_tokens: int, prefixes: int, gpu_spare_tokens: int, host: HostPool | None, host_active: bool,
    own_tokens: int | None = None, pool_tokens: int = 0, linked_throughout: bool = False, to_come: int = 0,
    host_own_tokens: int | None = None,
) -> Regime:  # fmt: skip
    """Where a prefix is served from (see the module docstring): ``gpu``, ``host`` or ``recomputed``. ``own_tokens``:
    one request's own tokens beside its prefix where the engine holds a prefix once (None: each its own copy);
    ``to_come``: the output the other running requests have still to take, (U - 1) x output / 2;
    ``host_own_tokens``: where each request holds its own copy, its own whole blocks beside the prefix, which its host
    tier stores too (None: the prefixes alone are counted there)."""
    if own_tokens is None:
        working = prefixes * prefix_tokens
        gpu = working <= gpu_spare_tokens
        cached_on_host = working if host_own_tokens is None else cycle_tokens(
            prefixes, host_own_tokens, prefix_tokens, to_come
        )  # fmt: skip
    else:
        cycle = cycle_tokens(prefixes, own_tokens, prefix_tokens, to_come)
        gpu = pool_tokens > 0 and (linked_throughout or cycle - own_tokens <= pool_tokens)  # 0: the GPU cache is off
        cached_on_host = cycle
    if gpu:
        return "gpu"
    if host is not None and host_active and cached_on_host <= host.host_tokens:
        return "host"
    return "recomputed"


def cycle_tokens(prefixes: int, own_tokens: int, prefix_tokens: int, to_come: int) -> int:
    """The blocks, in tokens, a cycle through ``prefixes`` takes (module docstring): K x (own + prefix) less the
    output the other running requests have still to take, never below the K prefixes themselves (review 325 #1)."""
    return max(prefixes * prefix_tokens, prefixes * (own_tokens + prefix_tokens) - to_come)


def regime_note(plan: OffloadPlan) -> str:
    """One line saying which regime a plan is in and what the host tier does there."""
    working, spare = plan.working_set_tokens, plan.gpu_spare_tokens
    gpu_off = plan.cycle_tokens is not None and not plan.pool_tokens  # trial 323 #5: "against the GPU pool's 0"
    if gpu_off:
        sizes = (
            f"the GPU prefix cache is off (--no-enable-prefix-caching); a cycle through {plan.shared_prefixes:,}"
            f" prefix(es) of {plan.prefix_tokens:,} tokens takes {plan.cycle_tokens:,} tokens of blocks (each request's"
            " own and its prefix's)"
        )
    elif plan.linked_throughout:
        sizes = (
            f"{plan.shared_prefixes:,} prefix(es) of {plan.prefix_tokens:,} tokens, each linked by a running request"
        )
    elif plan.cycle_tokens is not None:
        sizes = (
            f"a cycle through {plan.shared_prefixes:,} prefix(es) of {plan.prefix_tokens:,} tokens takes"
            f" {plan.cycle_tokens:,} tokens of blocks (each request's own and its prefix's, less the output the other"
            f" running requests have still to take) against the GPU pool's {plan.pool_tokens:,}"
        )
    else:
        sizes = (
            f"{plan.shared_prefixes:,} prefix(es) of {plan.prefix_tokens:,} tokens = {working:,} tokens against"
            f" {spare:,} spare in the GPU pool"
        )
    if plan.regime == "gpu":
        tail = ": the host tier buys nothing (the GPU pool is not the limit)" if plan.host is not None else ""
        return f"prefix cache: {sizes}: every prefix stays on the GPU{tail}"
    if plan.regime == "recomputed":
        where = f" and the host pool's {plan.host.host_tokens:,}" if plan.host is not None else " (no host tier asked)"
        if plan.host is not None and plan.host_cycle_tokens is not None:
            where = (
                f"; on the host a cycle takes {plan.host_cycle_tokens:,} tokens (each request's own blocks beside its"
                f" prefix's) against the host pool's {plan.host.host_tokens:,}"
            )
        order = "the free queue's first in, first out" if plan.cycle_tokens is not None else "LRU"
        return (
            f"prefix cache: {sizes}{where}: requests cycling through them find none cached ({order}), every prefix"
            " is recomputed"
        )
    assert plan.host is not None
    if plan.ttft_ms_without_host is None or plan.ttft_ms_with_host is None:
        verdict = "load not priced yet"
    else:
        verdict = (
            f"it {'helps' if plan.helps else 'hurts'}: TTFT {plan.ttft_ms_with_host:,.1f} ms, against"
            f" {plan.ttft_ms_without_host:,.1f} ms with the prefix recomputed"
            + ("" if plan.helps else " (the engine loads a hit whatever it costs)")
        )
    return (
        f"{'' if gpu_off else 'pool-limited: '}{sizes}; the host pool ({plan.host.host_tokens:,} tokens) holds them: each comes back over"
        f" {plan.host.link} in {plan.load_ms:,.2f} ms ({plan.prefix_tokens:,} x {plan.host.bytes_per_token:,} B at"
        f" {plan.host.load_gbs:.0f} GB/s), in TTFT; {verdict}"
    )


HYBRID_HOST_TIER = (
    "--kv-offload-gib: vLLM's host tier for a Mamba/linear-attention hybrid is not priced here (0.21 and later serve"
    " it only with prefix caching on, the states in the Mamba align mode, and refuse it without): plan it without"
    " --kv-offload-gib"
)
"""vLLM 0.21 and later refuse the tier for such a hybrid without prefix caching ("Hybrid models (e.g. Mamba+Attention)
need --enable-prefix-caching to align block sizes": ``v1/kv_offload/base.py`` 0.21,
``kv_connector/v1/offloading/config.py`` 0.32); 0.11.1-0.20 refuse it earlier (the manager off, ``core.engine.plan``)."""


def offload_tiers(
    model: ModelSpec, deployment: DeploymentSpec, engine: EnginePlan, *, users: int, isl: int, osl: int,
    workers: int, target_id: str, caching: bool, prefix_tokens: int, replicated: bool = False,
) -> OffloadPlan:  # fmt: skip
    """The host pool (if asked) and the regime of ``users`` requests per replica cycling through the deployment's
    shared prefixes, ``prefix_tokens`` each as the caches hold them (whole blocks), on ``engine``'s pool (see the
    module docstring), before the load is priced; ``caching``: the engine's GPU prefix cache is on."""
    host = None
    if deployment.kv_offload_bytes and engine.generation == "vllm-0.21" and model.n_state_layers:
        raise BadInputError(HYBRID_HOST_TIER)
    if deployment.kv_offload_bytes:
        host = host_pool(
            engine, asked_bytes_per_rank=deployment.kv_offload_bytes, workers=workers, target_id=target_id,
            prefix_caching=caching or model.recurrent is not None, replicated=replicated,
        )  # fmt: skip  # a hybrid's cache is not modelled (_nothing_cached says so), not off
    host_active = host is not None and model.recurrent is None and (caching or not host.needs_prefix_cache)
    prefix = prefix_tokens if caching or host_active else 0
    prefixes = deployment.shared_prefixes or 1
    held = isl + osl  # what one running request holds: its own copy of everything, or its own blocks beside the prefix
    running = min(users, engine.admitted_per_replica)
    if caching and prefix and shares_prefix_blocks(engine):
        held = own_blocks(held, prefix, engine.block_size) * engine.block_size
        running = min(users, shared_admitted(engine, context=isl + osl, cached_tokens=prefix, prefixes=prefixes))
    spare = max(0, engine.kv_tokens - running * held) if caching else 0
    shared = prefix > 0 and shares_prefix_blocks(engine) and (caching or host_active)
    own = (held if caching else own_blocks(held, prefix, engine.block_size) * engine.block_size) if shared else None
    pool = engine.kv_tokens if caching else 0
    linked = shared and caching and prefixes <= running
    # each its own copy (TensorRT-LLM; vLLM with several KV cache groups, no prefix held once): the host tier takes
    # every evicted block, a request's own ones too, as the simulator's does (trial 394 #3: the prefixes alone were
    # counted, "host" where the run found no hit; review 396 #2: Gemma 3 on vLLM moved so too, as its run agrees)
    host_own = own_blocks(isl + osl, prefix, engine.block_size) * engine.block_size if prefix and not shared else None
    to_come = (running - 1) * osl // 2 if shared or host_own is not None else 0
    regime = prefix_regime(
        prefix_tokens=prefix, prefixes=prefixes, gpu_spare_tokens=spare, host=host, host_active=host_active,
        own_tokens=own, pool_tokens=pool, linked_throughout=linked, to_come=to_come, host_own_tokens=host_own,
    )  # fmt: skip
    plan = OffloadPlan(
        host=host, shared_prefixes=prefixes, prefix_tokens=prefix, working_set_tokens=prefixes * prefix,
        gpu_spare_tokens=spare, regime=regime if prefix else "recomputed",
        cycle_tokens=None if own is None else cycle_tokens(prefixes, own, prefix, to_come), pool_tokens=pool,
        host_cycle_tokens=None if host_own is None or host is None else cycle_tokens(prefixes, host_own, prefix, to_come),
        linked_throughout=linked,
    )  # fmt: skip
    note = regime_note(plan) if prefix else _nothing_cached(model, deployment, engine, prefix_tokens, host is not None)
    return plan.model_copy(update={"note": note})


def _nothing_cached(
    model: ModelSpec, deployment: DeploymentSpec, engine: EnginePlan, prefix_tokens: int, has_host: bool
) -> str:
    """Why no tier serves a prefix (the regime is ``recomputed`` with no prefix to cache), in one line."""
    if not deployment.shared_prefix:
        why = "no --shared-prefix: the prompts share no prefix"
    elif model.recurrent is not None:
        why = (
            "a model with fixed-state layers: its prefixes are not cached here"
            f" ({unserved_reason(engine.name, engine.mamba_cache_mode)})"
        )
    elif not prefix_tokens:
        why = f"the shared prefix ({deployment.shared_prefix:,} tokens) fills no whole block of {engine.block_size}"
    else:
        why = "the prefix cache is off" + (", and this engine's host tier keeps only what it would" if has_host else "")
    tail = ": the host tier serves no hit" if has_host else ""
    return f"prefix cache: {why}, so every prompt is computed in full{tail}"


def priced_offload(
    plan: OffloadPlan, prediction: ServingPrediction, case: ServingCase, profile: DeviceProfile,
    ceiling: DeviceProfile, stepper: Stepper,
) -> OffloadPlan:  # fmt: skip
    """``plan`` with its load priced: in the host regime each request's TTFT (and end to end) gains the prefix's load,
    and the TTFT it would have with the prefix recomputed is kept beside it. ``prediction`` gets the note."""
    from mha_cli.core.cost.serving import predict_serving

    if plan.regime == "host" and plan.host is not None:
        load_ms = plan.host.load_seconds(plan.prefix_tokens) * 1e3
        prediction.ttft_ms += load_ms
        prediction.e2e_ms += load_ms
        from mha_cli.core.cost.serving import ttft_band

        band = ttft_band(prediction.ttft_ms, profile)  # the band around the TTFT with its load (trial 289 #6)
        prediction.uncertainty = prediction.uncertainty.model_copy(update={"ttft_ms": band})
        recomputed = predict_serving(case._replace(cached_prefix=0), profile, ceiling, stepper=stepper)
        plan = plan.model_copy(
            update={"load_ms": load_ms, "ttft_ms_with_host": prediction.ttft_ms,
                    "ttft_ms_without_host": recomputed.ttft_ms}
        )  # fmt: skip
        plan = plan.model_copy(update={"note": regime_note(plan)})
    prediction.notes.append(plan.note)
    if plan.host is not None:
        prediction.notes += plan.host.notes
    return plan
