"""SGLang's cap on running requests (``max_running_requests``), per DP-attention rank, as each release sets it.

Read in SGLang's wheels (0.4.0, 0.4.3-0.4.9, 0.5.1-0.5.23). ``tokens``: the rank's KV pool in tokens
(``max_total_num_tokens``); ``context``: the model's ``context_len``, the launch line's ``--context-length``.

- Requested: ``--max-running-requests N`` given, else, with speculative decoding on, N = 32 (0.4.4: EAGLE and NEXTN,
  ``server_args.py`` ``ServerArgs.__post_init__``) or 48 (0.4.5 on: EAGLE, EAGLE3 and NEXTN, STANDALONE from 0.5.2;
  ``ServerArgs._handle_speculative_decoding`` to 0.5.12, ``arg_groups/speculative_hook.py`` from 0.5.13, "Max running
  requests is reset to 48 for speculative decoding"); 0.4.0 and 0.4.3 set none. Each rank takes N // dp.
- The request pool's estimate: clamp(int(tokens / context x 512), 2048, 4096) (``model_runner.init_memory_pool``'s
  ``max_num_reqs`` to 0.5.9; ``_resolve_max_num_reqs`` in ``model_runner_kv_cache_mixin.py`` 0.5.10-0.5.15 and
  ``mem_cache/kv_cache_configurator.py`` ``resolve_max_num_reqs`` 0.5.16-0.5.23). Its ``ReqToTokenPool`` has
  ``max_num_reqs + 1`` rows in 0.4.0-0.4.6, ``max_num_reqs`` from 0.4.7.
- The cap, none requested: min(tokens // 2, the estimate) in every release (``tp_worker.TpModelWorker.__init__`` to
  0.5.6 against ``req_to_token_pool.size``, ``ModelRunner.initialize`` 0.5.7-0.5.9, then the resolvers above).
- The cap, N requested: 0.4.0-0.5.9: N // dp (the request pool is sized at N rows, never below N // dp);
  0.5.10-0.5.13: min(N // dp, the estimate); 0.5.14-0.5.23: min(N // dp, tokens // 2) (0.5.23: at least 1).

A hybrid Gated DeltaNet model's state pool caps the requests further (``max_num_reqs``'s last min: the pool's
``StatePool.running_cap``, ``core.engine.sglang_state_pool``, taken in ``core.engine.plan.plan_engine``).

Not priced: 0.4.0-0.4.2 do not divide N by dp (read in 0.4.0; DP attention is not modelled there).
"""

from typing import NamedTuple

from mha_cli.core.engine.prefill_graphs import LATEST_READ, LINE_NEWEST, release_triple

Triple = tuple[int, int, int]

ESTIMATE_FLOOR, ESTIMATE_CEILING = 2048, 4096
"""The request pool's estimate's clamp, requests (``max(min(estimated, 4096), 2048)``)."""
REQUESTS_PER_CONTEXT = 512
"""Requests the estimate counts per pool of one ``context_len`` (``tokens / context_len * 512``)."""
EXTRA_ROW_UNTIL: Triple = (0, 4, 7)
"""0.4.0-0.4.6 give ``ReqToTokenPool`` ``max_num_reqs + 1`` rows; 0.4.7 drops the + 1."""
SPECULATIVE_CAPS: tuple[tuple[Triple, int], ...] = (((0, 4, 5), 48), ((0, 4, 4), 32))
"""(first release, requests) of the cap speculative decoding sets when none is given, newest first."""
ESTIMATE_CAPS_GIVEN: tuple[Triple, Triple] = ((0, 5, 10), (0, 5, 14))
"""0.5.10-0.5.13 cap a given ``--max-running-requests`` at the estimate; from 0.5.14 at tokens // 2."""
GENERATION_NEWEST: dict[str, Triple] = {"sglang-0.4": (0, 4, 10)}
"""A generation priced with no exact release: its newest (0.4.10.post2; sglang-0.5: ``LATEST_READ``)."""


def running_release(release: str | None, generation: str) -> Triple:
    """The release whose rules apply: the one typed, else the generation's newest (a commit or a dev build too); one
    past the newest read (a line's newest patch among them) is priced, and named, as the newest read."""
    newest = release_triple(LATEST_READ)
    fallback = GENERATION_NEWEST.get(generation) or newest
    assert fallback is not None and newest is not None
    typed = release_triple(release)
    if typed is None or typed[2] == LINE_NEWEST:  # none, a commit, or a line (0.5): the generation's newest
        return fallback
    return min(typed, newest)


def speculative_cap(triple: Triple) -> int | None:
    """The requests speculative decoding caps SGLang ``triple`` at when none is given; None: it sets none."""
    return next((cap for since, cap in SPECULATIVE_CAPS if triple >= since), None)


class Requested(NamedTuple):
    """``server_args.max_running_requests`` as one rank takes it, and what set it."""

    requests: int
    by: str


def requested_per_rank(given: int | None, speculative: bool, dp: int, triple: Triple) -> Requested | None:
    """``server_args.max_running_requests`` per rank: ``given`` (per rank already: the line writes it x ``dp``), else
    the speculative cap // ``dp``; None: none requested (the pool's default applies)."""
    if given is not None:
        return Requested(given, "--max-running-requests")
    cap = speculative_cap(triple) if speculative else None
    if cap is None:
        return None
    return Requested(max(1, cap // dp), f"speculative decoding's {cap}" + (f" // {dp} ranks" if dp > 1 else ""))


def ceiling(triple: Triple) -> int:
    """The most requests SGLang ``triple``'s default lets a rank run, whatever its pool."""
    return ESTIMATE_CEILING + 1 if triple < EXTRA_ROW_UNTIL else ESTIMATE_CEILING


def pool_estimate(tokens: int, context: int, triple: Triple) -> int:
    """The request pool's rows SGLang ``triple`` sizes with no cap requested (the module docstring)."""
    estimate = min(max(int(tokens / context * REQUESTS_PER_CONTEXT), ESTIMATE_FLOOR), ESTIMATE_CEILING)
    return estimate + 1 if triple < EXTRA_ROW_UNTIL else estimate


class RunningLimit(NamedTuple):
    """The requests one rank runs at once, and why."""

    requests: int
    how: str


def running_limit(
    requested: Requested | None, tokens: int, context: int, triple: Triple, estimate_tokens: int | None = None
) -> RunningLimit:
    """SGLang ``triple``'s ``max_running_requests`` on a rank of ``tokens`` KV tokens at ``context`` tokens a request,
    ``requested`` per rank (None: its default); ``estimate_tokens``: the tokens the request pool's estimate reads
    where they are not ``tokens`` (0.5.8-0.5.9's hybrid SWA pool: those profiled before the split)."""
    release = ".".join(map(str, triple))
    read = tokens if estimate_tokens is None else estimate_tokens
    if requested is None:
        estimate = pool_estimate(read, context, triple)
        requests = min(tokens // 2, estimate)
        return RunningLimit(
            requests,
            f"SGLang {release}'s max_running_requests {requests:,}: min(KV tokens // 2 = {tokens // 2:,}, its request"
            f" pool clamp(int({read:,} / context {context:,} x 512), 2048, 4096)"
            f"{' + 1' if triple < EXTRA_ROW_UNTIL else ''} = {estimate:,})",
        )
    if triple < ESTIMATE_CAPS_GIVEN[0]:
        return RunningLimit(
            requested.requests, f"SGLang {release}'s max_running_requests {requested.requests:,} ({requested.by})"
        )
    if triple < ESTIMATE_CAPS_GIVEN[1]:
        bound, name = pool_estimate(read, context, triple), "its request pool's estimate"
    else:
        bound, name = tokens // 2, "KV tokens // 2"
    requests = max(1, min(requested.requests, bound))
    return RunningLimit(
        requests,
        f"SGLang {release}'s max_running_requests {requests:,}: min({requested.by} = {requested.requests:,},"
        f" {name} {bound:,})",
    )
