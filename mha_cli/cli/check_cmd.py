"""``mha check FILE``: lint an existing design with the configurator's rules.

Exit codes: 0 when no hard rule is broken (warnings allowed unless ``--strict``); 1 when a hard
rule is broken (or, with ``--strict``, on any warning); 2 for bad input.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from mha_cli.cli.options import (
    AsyncSchedulingOpt,
    BatchOpt,
    BlockSizeOpt,
    CheckTpOpt,
    EngineOpt,
    JsonOpt,
    KvCacheGibOpt,
    KvDtypeOpt,
    LimitMmOpt,
    MaxBatchedTokensOpt,
    MaxNumSeqsOpt,
    MlaCacheOpt,
    PrefixCachingOpt,
    SeqOpt,
    SourceArg,
    StateConventionOpt,
    TargetOpt,
    TextOnlyOpt,
    UtilisationOpt,
    WeightDtypeOpt,
    kv_cache_bytes,
)  # fmt: skip
from mha_cli.cli.output import Output
from mha_cli.cli.release_notice import notice_past_newest_read, refuse_release_without_model
from mha_cli.cli.typed_spellings import spellings_typed
from mha_cli.core.check import CheckResult, check_design
from mha_cli.core.errors import EXIT_CHECK_FAILED

if TYPE_CHECKING:
    from rich.console import Console

    from mha_cli.cli.app import CommandRegistry

StrictOpt = Annotated[bool, typer.Option("--strict", help=f"Exit {EXIT_CHECK_FAILED} on warnings too.")]


def check(
    source: SourceArg,
    seq: SeqOpt = None,
    target: TargetOpt = None,
    batch: BatchOpt = None,
    kv_dtype: KvDtypeOpt = None,
    weight_dtype: WeightDtypeOpt = None,
    tp: CheckTpOpt = None,
    engine: EngineOpt = None,
    gpu_memory_utilization: UtilisationOpt = None,
    max_num_batched_tokens: MaxBatchedTokensOpt = None,
    max_num_seqs: MaxNumSeqsOpt = None,
    block_size: BlockSizeOpt = None,
    kv_cache_gib: KvCacheGibOpt = None,
    async_scheduling: AsyncSchedulingOpt = None,
    prefix_caching: PrefixCachingOpt = None,
    mla_cache: MlaCacheOpt = None,
    state_convention: StateConventionOpt = None,
    limit_mm_per_prompt: LimitMmOpt = None,
    text_only: TextOnlyOpt = False,
    strict: StrictOpt = False,
    json: JsonOpt = False,
) -> None:
    """Lint a design: hard-rule violations (exit 1) and warnings, by rule id."""
    result = check_design(
        source, seq_len=seq, target=target, batch=batch, kv_dtype=kv_dtype, weight_dtype=weight_dtype, tp=tp,
        engine=engine, gpu_memory_utilization=gpu_memory_utilization, max_num_batched_tokens=max_num_batched_tokens,
        max_num_seqs=max_num_seqs, block_size=block_size, kv_cache_memory_bytes=kv_cache_bytes(kv_cache_gib),
        async_scheduling=async_scheduling, prefix_caching=prefix_caching, mla_cache=mla_cache,
        state_convention=state_convention, mm_limits_typed=limit_mm_per_prompt, text_only=text_only, strict=strict,
        spellings=spellings_typed(),
    )  # fmt: skip
    output = Output(json)
    deployment = result.deployment
    refuse_release_without_model(
        deployment.engine, deployment.engine_version, result.model, output, generation_id=deployment.engine_generation
    )
    if result.memory is not None and result.memory.alias_note:  # as kv, plan and recommend say it (trial 343 #7)
        output.notice(f"target {result.memory.alias_note}")
    notice_past_newest_read(result.deployment.engine, result.deployment.engine_version, output)
    output.emit(result, render_check)
    if not result.passed:
        raise typer.Exit(code=EXIT_CHECK_FAILED)


def render_check(console: Console, result: CheckResult) -> None:
    from mha_cli.cli.render_check import render_check as render

    render(console, result)


def register(registry: CommandRegistry) -> None:
    registry.add("check", check)
