"""The markdown report of experiment ``heads``: setup, results per seed, what the data shows and what it does not."""

from __future__ import annotations

from pathlib import Path

from mha_cli.core.markdown import markdown_table
from mha_cli.core.rules.catalog import HEAD_DIM_FLOOR
from mha_cli.experiments.common import report_header
from mha_cli.experiments.heads_models import HeadsPoint, HeadsResult
from mha_cli.experiments.seeds import SeedSpread, clearly_below


def heads_report(result: HeadsResult) -> str:
    s = result.settings
    floor = result.no_attention
    rows = [
        [
            str(p.n_heads),
            str(p.head_dim),
            f"{p.eval_loss.mean:.4f}",
            f"{p.eval_loss.low:.4f} - {p.eval_loss.high:.4f}",
            ", ".join(f"{v:.4f}" for v in p.eval_loss.values),
            f"{p.half_way_eval_loss.mean:.4f}",
            f"{p.eval_accuracy.mean:.3f} ({p.eval_accuracy.low:.3f} - {p.eval_accuracy.high:.3f})",
            standing(p, result),
        ]
        for p in result.points
    ]
    rows.append(
        [
            "no attention",
            "-",
            f"{floor.eval_loss.mean:.4f}",
            f"{floor.eval_loss.low:.4f} - {floor.eval_loss.high:.4f}",
            ", ".join(f"{v:.4f}" for v in floor.eval_loss.values),
            "-",
            f"{floor.eval_accuracy.mean:.3f} ({floor.eval_accuracy.low:.3f} - {floor.eval_accuracy.high:.3f})",
            "control",
        ]
    )
    rows.append(["chance", "-", f"{result.chance_loss:.4f}", "-", "-", "-", f"{result.chance_accuracy:.4f}", "floor"])
    n_tuples = s.n_symbols**s.streams
    narrowest = s.d_model // max(s.head_counts)
    length = (s.streams + 1) * s.stream_length
    return (
        report_header(
            "Experiment: number of heads at fixed width (gather task)",
            result.command,
            result.environment,
            quick=result.quick,
        )
        + "## Setup\n\n"
        f"Gather task: {s.streams} streams of {s.stream_length} random symbols ({s.n_symbols} kinds), then"
        f" {s.stream_length} query positions ({length} tokens). Query i must output the tuple (stream 1's symbol i,"
        f" ..., stream {s.streams}'s symbol i) as one token of {n_tuples} classes: it needs {s.streams} symbols from"
        f" {s.streams} different positions at once. Only the queries are scored. Chance: {s.streams} ln"
        f" {s.n_symbols} = {result.chance_loss:.4f} nats, accuracy 1/{n_tuples}.\n\n"
        "Why the head count can matter: a softmax head returns a weighted average of the values it attends to,"
        " and with RoPE a value carries its token but not its position. One head attending to all"
        f" {s.streams} positions sums their symbols and loses which stream held which (unless it codes the"
        f" stream in unequal attention weights, a lossy code); {s.streams} heads can each fetch one stream's"
        f" symbol unmixed. More heads at the same width are narrower (head_dim {s.d_model} / n_heads).\n\n"
        f"Model: the tool's decoder (`build_lm`), one layer, MHA, RoPE (theta 10,000), pre-norm RMSNorm, gated MLP"
        f" (d_ff {s.d_ff}), d_model = {s.d_model}, head_dim = d_model / n_heads. {s.steps} steps of AdamW"
        f" (lr {s.learning_rate}, {s.warmup_steps} warm-up steps, cosine decay to {s.final_lr_fraction:g} of it, batch {s.batch}),"
        f" seeds {result.seeds}; for a seed, every head count starts from the same initialisation stream and sees"
        f" the same batches. Held-out: {s.eval_sequences} unseen sequences per seed. Control: the same decoder with"
        " its attention branch zeroed (each query then sees only its own query token), trained alike.\n\n"
        "## Results\n\n"
        "Held-out loss in nats per query; accuracy: the whole tuple right (argmax); mean and range over the seeds.\n\n"
        + markdown_table(
            [
                "n_heads",
                "head_dim",
                "loss",
                "range",
                "per seed",
                f"loss at step {s.half_steps}",
                "accuracy (range)",
                "vs best",
            ],
            rows,
        )
        + "\n## What the data shows\n\n"
        f"- Floor: {floor_sentence(result)}\n"
        f"- Held-out loss, **{result.judgement.verdict}**: {result.judgement.sentence}\n"
        f"- Still learning? {learning_sentence(result)}\n"
        f'- The head_dim floor (MHA090: never head_dim below {HEAD_DIM_FLOOR}, "heads collapse"):'
        f" {head_dim_sentence(result)}\n\n"
        "## What it does not show\n\n"
        f"This is one layer at d_model {s.d_model} on a synthetic lookup over {length} tokens, trained {s.steps}"
        f" steps, {len(result.seeds)} seeds. The task is built so that it needs {s.streams} lookups at once;"
        " language data needs a mix of patterns, and how many heads it wants is not measured here. The floor"
        f" rule is argued for large models, whose heads must separate one key among thousands by a"
        " head_dim-long dot product under 1/sqrt(head_dim) scaling; here a head picks one of"
        f" {length}, an easier job for a short dot product. If a narrow count loses, this run does not separate why: a"
        f" {narrowest}-wide head has a short dot product and only {narrowest // 2} RoPE frequencies to single out a"
        " position, and it may only learn"
        ' slower (see "Still learning?" above). The rule compares every count with the best, picked after'
        f" looking: with {len(result.seeds)} seeds and no real difference between head counts it calls some count"
        f' worse in {result.chance_some_worse:.0%} of runs, so a single "worse" is weak evidence; a pattern over'
        " several counts, or a gap far beyond the ranges, is stronger.\n\n"
        f"![training curves, held-out loss and accuracy per head count]({Path(result.files.plot).name})\n"
    )


def standing(point: HeadsPoint, result: HeadsResult) -> str:
    """The point against the best head count: best, worse (seed ranges apart) or tied."""
    if point.n_heads == result.judgement.best_heads:
        return "best"
    return "worse" if point.n_heads in result.judgement.worse_than_best else "tied"


def learning_sentence(result: HeadsResult) -> str:
    """How the counts worse than the best, and the best, moved over the second half of training, seed by seed."""
    half, steps = result.settings.half_steps, result.settings.steps
    worse = [p for p in result.points if p.n_heads in result.judgement.worse_than_best]
    if not worse:
        return "No head count is worse than the best, so there is no gap to close."
    best = next(p for p in result.points if p.n_heads == result.judgement.best_heads)
    moves = ", ".join(
        f"{p.half_way_eval_loss.mean:.4f} -> {p.eval_loss.mean:.4f} at {p.n_heads} head(s)" for p in worse
    )
    improving = [p for p in worse if improved_every_seed(p)]
    stalled = [p for p in worse if p not in improving]
    text = (
        f"From step {half} to step {steps} the mean held-out loss went {moves}, and"
        f" {best.half_way_eval_loss.mean:.4f} -> {best.eval_loss.mean:.4f} at the best ({best.n_heads})."
    )
    if improving:
        text += (
            f" Every seed still improved at {counts_text(improving)}: their gaps are measured at this budget,"
            " and whether longer training closes them is not shown."
        )
    if stalled:
        text += f" Not every seed improved at {counts_text(stalled)}."
    return text


def improved_every_seed(point: HeadsPoint) -> bool:
    """Each seed's held-out loss at the end is below its own at half the steps."""
    pairs = zip(point.eval_loss.values, point.half_way_eval_loss.values, strict=True)
    return all(end < half_way for end, half_way in pairs)


def counts_text(points: list[HeadsPoint]) -> str:
    return ", ".join(str(p.n_heads) for p in points) + " head(s)"


def floor_sentence(result: HeadsResult) -> str:
    """What the no-attention control says: attention used where every head count's seeds beat it, provided it is a
    floor at all (a seed of it at or below chance's loss: the committed run's range holds chance)."""
    floor = result.no_attention.eval_loss
    beats = result.attention_beats_floor
    counts = [p.n_heads for p in result.points]
    control = (
        f"the no-attention control scores {floor.mean:.4f} nats ({floor.low:.4f} - {floor.high:.4f}), chance is"
        f" {result.chance_loss:.4f}"
    )
    if not result.floor_valid:  # every seed worse than guessing: no floor (trial 327 #3, a smoke run's)
        return (
            f"{control}; the control has not reached chance, so it is no floor here: beating it shows nothing about"
            " attention (train longer)."
        )
    if beats == counts:
        return (
            f"{control}; every head count's seed range lies below the control's, so attention is what the models use."
        )
    missing = ", ".join(str(c) for c in counts if c not in beats)
    return f"{control}; head count(s) {missing} do not beat it on every seed: what they learned is not shown to be attention."


def head_dim_sentence(result: HeadsResult) -> str:
    """What the data says about heads narrower than the rule's floor, from the seed spreads only."""
    narrow = [p for p in result.points if p.head_dim < HEAD_DIM_FLOOR]
    wide = [p for p in result.points if p.head_dim >= HEAD_DIM_FLOOR]
    if not narrow:
        return f"no head count here is below head_dim {HEAD_DIM_FLOOR}; the data says nothing about the rule."
    described = ", ".join(f"{p.n_heads} heads (head_dim {p.head_dim})" for p in narrow)
    parts = [f"at d_model {result.settings.d_model} it refuses {described}."]
    if wide:
        allowed = min(wide, key=lambda p: p.eval_loss.mean)
        better = [p for p in narrow if clearly_below(p.eval_loss, allowed.eval_loss)]
        worse = [p for p in narrow if clearly_below(allowed.eval_loss, p.eval_loss)]
        allowed_text = f"the best count the rule allows, {allowed.n_heads} head(s) (head_dim {allowed.head_dim}, {spread_text(allowed.eval_loss)})"
        if better:
            parts.append(
                f"Of those, {listed(better)} are better than {allowed_text} on every seed: on this task the rule"
                " refuses the better models. That comparison mixes head count with head width: at this d_model the"
                f" rule allows at most {result.settings.d_model // HEAD_DIM_FLOOR} head(s), fewer than the"
                f" {result.settings.streams} lookups the task needs, so it does not test the floor itself; the"
                " narrowing past the best, below, does."
            )
        if worse:
            parts.append(f"{listed(worse).capitalize()} are worse than {allowed_text} on every seed.")
        if not better and not worse:
            parts.append(f"None differs from {allowed_text} beyond the seed spread.")
    best = next(p for p in result.points if p.n_heads == result.judgement.best_heads)
    narrow_worse = [p for p in narrow if p.n_heads in result.judgement.worse_than_best and p.n_heads > best.n_heads]
    if narrow_worse:
        where = (
            f"only below head_dim {best.head_dim}, not at the rule's {HEAD_DIM_FLOOR}"
            if best.head_dim < HEAD_DIM_FLOOR
            else f"from head_dim {max(p.head_dim for p in narrow_worse)}"
        )
        parts.append(
            f"Narrowing past the best ({best.n_heads} heads, head_dim {best.head_dim}) costs at"
            f" {result.settings.steps} steps: {listed(narrow_worse)} trail it on every seed. Heads get too narrow"
            f" here {where}, at this budget (whether longer training closes the gap is not shown)."
        )
    elif best.head_dim < HEAD_DIM_FLOOR:
        parts.append(
            f"No narrower count is worse than the best ({best.n_heads} heads, head_dim {best.head_dim}) beyond the"
            " seed spread: no collapse is seen down to the narrowest head tried."
        )
    return " ".join(parts)


def listed(points: list[HeadsPoint]) -> str:
    return ", ".join(f"{p.n_heads} heads (head_dim {p.head_dim}, {spread_text(p.eval_loss)})" for p in points)


def spread_text(spread: SeedSpread) -> str:
    return f"{spread.text('.4f', sd=False)} nats"
