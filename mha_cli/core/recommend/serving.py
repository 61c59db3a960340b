"""``mha recommend --ttft-ms / --itl-ms``: ``mha plan``'s search for the recommended design on its target.

Its ways out are in ``recommend``'s own flags (``--seq``, not ``plan``'s ``--isl``), and each is checked as a user
pasting it would: the recommender run again with it (the design may change with the context, the weights or the
target), then the search on that design. Pure Python; imported only with a latency target.
"""

from collections.abc import Callable

from mha_cli.core.cost.latency import engine_prior
from mha_cli.core.cost.priors import datasheet_profile
from mha_cli.core.cost.search import SearchResult, found_pick, no_ways, search_changes, search_deployments
from mha_cli.core.errors import BadInputError, MhaError
from mha_cli.core.recommend import REQUEST_FLAGS, RecommendResult, pasted, recommend
from mha_cli.core.serve.replica import ClientSpec
from mha_cli.core.served_model import ServedModel
from mha_cli.core.targets import resolve_target
from mha_cli.core.ways import Verdict, WayOut, settle

SERVED_OUTPUT_TOKENS = 256
"""Output tokens per request of the deployment search (the prompt is the rest of the context)."""


def search_design(
    result: RecommendResult, served: ServedModel, ttft_ms: float | None, itl_ms: float | None
) -> SearchResult:
    """The search for ``result``'s design (``_search``), its ways out run through the recommender and the search
    again before they are kept (``core.ways.settle``)."""

    def judge(words: list[str]) -> Verdict:
        try:
            again = recommend(pasted(result.request, words), price_ways=False)
            found = _search(again, served, ttft_ms, itl_ms, ways=no_ways)
        except MhaError as exc:
            return Verdict(False, f"refused: {exc.message}", None, [])
        if found.chosen is None:
            return Verdict(False, "no pick", None, _changes(again))
        label = next((a.label for a in again.alternatives if a.is_recommended), again.model.variant)
        return Verdict(True, f"{label}, {found_pick(found)}", None, [])

    return _search(result, served, ttft_ms, itl_ms, ways=lambda: settle(
        _changes(result), judge, REQUEST_FLAGS, goal="meets the targets"
    ))  # fmt: skip


def _changes(result: RecommendResult) -> list[str]:
    """The search's changes (``search_changes``) in ``recommend``'s flags: a shorter prompt is half the context."""
    deployment = result.config.deployment
    assert deployment.target is not None
    seq = deployment.seq_len
    shorter = f"--seq {seq // 2} (a shorter context)" if seq > 1 else None
    return search_changes(resolve_target(deployment.target), deployment, shorter)


def _search(
    result: RecommendResult,
    served: ServedModel,
    ttft_ms: float | None,
    itl_ms: float | None,
    *,
    ways: Callable[[], list[WayOut]],
) -> SearchResult:
    """``mha plan``'s search for the recommended design on its target, its pick confirmed in the simulated serving
    loop as ``mha plan`` confirms it by default (``ClientSpec()``: plan's default client): prompts of the context less
    ``SERVED_OUTPUT_TOKENS`` output tokens (at most half the context). The launch lines serve ``served`` (the
    folder of the config.json ``--format hf`` wrote, else a placeholder for it) with random weights (``--load-format dummy``): the design has
    no checkpoint yet."""
    deployment = result.config.deployment
    assert deployment.target is not None
    target = resolve_target(deployment.target)
    osl = max(1, min(SERVED_OUTPUT_TOKENS, deployment.seq_len // 2))
    if itl_ms is not None and osl == 1:  # as plan refuses it: one output token has no gap after it
        raise BadInputError(
            f"--itl-ms at --seq {deployment.seq_len}: the search serves 1 output token a request, which has no gap"
            " after it: leave --itl-ms out, or give a longer --seq"
        )
    from mha_cli.core.dtypes import kv_named
    from mha_cli.core.engine.plan import refuse_kv_format_the_engine_lacks

    refuse_kv_format_the_engine_lacks(  # as plan refuses it: its search would pick on that pool
        deployment, f"--kv-dtype {kv_named(deployment.kv_dtype, deployment.kv_fp8_variant)} with --ttft-ms or --itl-ms",
        "the serving search prices deployments the engine runs: give a format it has, or leave the targets out",
        result.config.model,
    )  # fmt: skip
    profiles = (engine_prior(target.target, deployment),
                datasheet_profile(target.target, deployment.weight_dtype))  # fmt: skip
    found = search_deployments(
        result.config.model, served, target, deployment, profiles, isl=deployment.seq_len - osl, osl=osl,
        ttft_ms=ttft_ms, itl_ms=itl_ms, ways=ways, client=ClientSpec(),
    )  # fmt: skip
    launch = {
        engine: f"{line} --load-format dummy --skip-tokenizer-init"  # a config.json alone: no weights, no tokenizer
        for engine, line in found.launch.items()
        if engine != "trtllm"
    }
    return found.model_copy(update={"launch": launch})
