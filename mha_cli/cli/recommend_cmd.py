"""``mha recommend``: a parameter budget, a context and a target in; an attention design out.

Exit codes: 0 with a design (a plan that does not fit the target is flagged, not an error);
1 with ``--fail-if-no-fit`` when it does not fit; 2 for bad input (nothing is written).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from mha_cli.cli.options import BatchOpt, ForceOpt, JsonOpt, KvDtypeOpt, SeqOpt, TargetOpt, TpOpt, WeightDtypeOpt
from mha_cli.cli.output import Output
from mha_cli.core.config_io import config_text, write_text_atomic
from mha_cli.core.errors import EXIT_CHECK_FAILED
from mha_cli.core.recommend import RecommendRequest, RecommendResult, recommend

if TYPE_CHECKING:
    from rich.console import Console

    from mha_cli.cli.app import CommandRegistry

ParamsOpt = Annotated[
    str, typer.Option("--params", help="Parameter budget: 7B, 350M, 1.5T (decimal).", show_default=False)
]
PriorityOpt = Annotated[
    str,
    typer.Option("--priority", help="inference (shrink the cache to fit the batch), training, or balanced."),
]
VocabOpt = Annotated[
    int | None, typer.Option("--vocab", help="Vocabulary size (default: 50,257 under 1B, 128,256 from 1B).")
]
DModelOpt = Annotated[int | None, typer.Option("--d-model", help="Fix the width; depth then fills the budget.")]
VariantOpt = Annotated[
    str | None,
    typer.Option(
        "--variant", help="Ask for MHA, GQA, MQA or MLA instead of letting the rules choose.", show_default=False
    ),
]
OutOpt = Annotated[
    Path | None,
    typer.Option(
        "--out",
        help="Write the design as a config file (.yaml/.yml: YAML, .json: JSON) that `mha kv` and `mha verify` read.",
    ),
]
FailIfNoFitOpt = Annotated[
    bool,
    typer.Option("--fail-if-no-fit", help=f"Exit {EXIT_CHECK_FAILED} when the plan does not fit the target."),
]


def recommend_command(
    params: ParamsOpt,
    seq: SeqOpt = None,
    target: TargetOpt = None,
    batch: BatchOpt = None,
    kv_dtype: KvDtypeOpt = None,
    weight_dtype: WeightDtypeOpt = None,
    priority: PriorityOpt = "balanced",
    tp: TpOpt = None,
    vocab: VocabOpt = None,
    d_model: DModelOpt = None,
    variant: VariantOpt = None,
    out: OutOpt = None,
    force: ForceOpt = False,
    fail_if_no_fit: FailIfNoFitOpt = False,
    json: JsonOpt = False,
) -> None:
    """Recommend attention for a parameter budget: variant, heads, KV cache, memory plan, rule trace."""
    request = build_request(
        params=params, seq=seq, target=target, batch=batch, kv_dtype=kv_dtype, weight_dtype=weight_dtype,
        priority=priority, tp=tp, vocab=vocab, d_model=d_model, variant=variant,
    )  # fmt: skip
    result = recommend(request)
    output = Output(json)
    if out is not None:
        header = "written by: " + command_line(
            params=params, seq=seq, target=target, batch=batch, kv_dtype=kv_dtype, weight_dtype=weight_dtype,
            priority=priority, tp=tp, vocab=vocab, d_model=d_model, variant=variant, out=out,
        )  # fmt: skip
        write_text_atomic(out, config_text(result.config, out, header=header), force=force)
        output.notice(f"wrote {out}")
    if result.memory is not None and result.memory.alias_note:  # after the write: no notice before an error
        output.notice(f"target {result.memory.alias_note}")
    output.emit(result, render_recommendation)
    if fail_if_no_fit and result.fits is False:
        raise typer.Exit(code=EXIT_CHECK_FAILED)


def build_request(
    *,
    params: str,
    seq: str | None,
    target: str | None,
    batch: int | None,
    kv_dtype: str | None,
    weight_dtype: str | None,
    priority: str,
    tp: int | None,
    vocab: int | None,
    d_model: int | None,
    variant: str | None,
) -> RecommendRequest:
    """The request from the options; ``RecommendRequest.parse`` rejects a bad value with one line."""
    return RecommendRequest.parse(
        params=params, seq_len=seq, target=target, batch=batch, kv_dtype=kv_dtype, weight_dtype=weight_dtype,
        priority=priority, tp=tp, vocab_size=vocab, d_model=d_model, variant=variant,
    )  # fmt: skip


def command_line(**options: object) -> str:
    """The ``mha recommend`` command that reproduces a result, for the header of ``--out``."""
    words = ["mha", "recommend"]
    for name, value in options.items():
        if value is None or (name == "priority" and value == "balanced"):
            continue
        words += [f"--{name.replace('_', '-')}", str(value)]
    return shlex.join(words)


def render_recommendation(console: Console, result: RecommendResult) -> None:
    from mha_cli.cli.render_recommend import render_recommendation as render

    render(console, result)


def register(registry: CommandRegistry) -> None:
    registry.add("recommend", recommend_command)
