"""Experiment ``heads``: at a fixed width, do more heads help, plateau or hurt on a task that needs several?

The task (``data.gather_task_batch``): k = 4 streams of L = 8 random symbols (n = 4 kinds), then L query
positions; query i must output the tuple (stream_1[i], ..., stream_4[i]) as ONE token of n**k = 256
classes, so it needs k symbols from k different earlier positions at once. Chance: k ln n = 5.545 nats
(a uniform guess over the tuples), accuracy 1/256.

Why the head count can matter here: one layer, RoPE positions (no learned positions, so a value vector
carries its token and nothing about where it sits). A softmax head returns a weighted average of the
values it attends to; one head spreading its weight over the four positions sums four symbol vectors
and loses which stream held which symbol, unless it codes the stream in unequal weights (a lossy code
the MLP must undo). With at least k heads each head can put all its weight on one stream's position
and pass its symbol unmixed; a linear readout of the concatenated heads then names the tuple. So
fewer than k heads should lose, k should be enough, and more heads at the same d_model = 64 are each
narrower (head_dim 64 / n_heads, down to 4 at 16 heads: RoPE then has two rotation frequencies to
pick one position out of (k + 1) L), which may hurt: the skill's floor rule (MHA090, never head_dim
below 32) predicts collapse there.

Every model is ``lm.build_lm`` (the tool's decoder: pre-norm, gated MLP) with d_model 64, one layer,
trained by ``train.train`` with the same settings; every head count sees the same batches and
initialisation stream for a given seed. The floor that must lose: the no-attention control
(``build_lm(spec, attention=False)``, trained alike), which sees only its own query token. Every model
is trained once per seed (3 by default); a difference is stated only where the seed ranges do not
overlap (``seeds.clearly_below``). Jobs run in ``--workers`` processes (``jobs.run_jobs``) with
identical results for any worker count.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch

from mha_cli.core.record import Record
from mha_cli.core.schemas import ModelSpec
from mha_cli.experiments.common import command_line, deterministic_run, seeded_generator, train_all
from mha_cli.experiments.data import gather_task_batch, gather_vocab_size
from mha_cli.experiments.heads_models import (
    HEAD_COUNTS,
    HeadsJudgement,
    HeadsPoint,
    HeadsResult,
    HeadsRun,
    HeadsSettings,
    NoAttentionFloor,
    Verdict,
    control_is_floor,
)
from mha_cli.experiments.heads_plot import heads_figure
from mha_cli.experiments.heads_report import heads_report
from mha_cli.experiments.lm import build_lm, n_parameters
from mha_cli.experiments.outputs import ExperimentOutputs
from mha_cli.experiments.seeds import SeedSpread, clearly_below, null_rate, seed_spread
from mha_cli.experiments.train import TrainSettings, block_means, evaluate, scored_accuracy, train
from mha_cli.nn.device import resolve_device

__all__ = ["HEAD_COUNTS", "HeadsResult", "HeadsSettings", "judge_head_counts", "run_heads"]
EVAL_SEED_OFFSET = 10_000
"""The held-out sequences come from seed + this offset: never a training batch."""


def worse_than_best(spreads: list[SeedSpread]) -> list[bool]:
    """For each count: every one of its seeds is above every seed of the count with the lowest mean."""
    means = [spread.mean for spread in spreads]
    best = spreads[means.index(min(means))]
    return [clearly_below(best, spread) for spread in spreads]


def chance_of_a_worse_call(n_counts: int, n_seeds: int) -> float:
    """How often ``worse_than_best`` calls at least one of ``n_counts`` counts worse when nothing differs (Monte
    Carlo): the best is picked after looking, and every count is compared with it, so far more than 1 in 20."""
    if n_seeds < 2:
        return 1.0  # one seed: any two values are apart
    return null_rate(n_counts, n_seeds, lambda spreads: any(worse_than_best(spreads)))


def judge_head_counts(
    head_counts: list[int],
    spreads: list[SeedSpread],
    *,
    measure: str = "held-out loss",
    unit: str = "nats",
    chance: float | None = None,
) -> HeadsJudgement:
    """Classify how a lower-is-better ``measure`` responds to more heads (head_counts ascending), by seed spread.

    best: the lowest mean; a count is *worse* than the best when every seed of it is above every seed
    of the best (``worse_than_best``), else tied with it; enough: the fewest heads tied with the best. More heads
    - help when every count below the largest is worse (enough is the largest);
    - plateau when enough lies between and the largest count is tied with the best;
    - help-then-hurt when enough lies between and the largest count is worse;
    - hurt when one head is tied with the best and the largest count is worse;
    - have no effect when every count is tied with the best;
    - are mixed when the worse counts are not all at the ends (worse, tied, worse again in between).
    ``chance``: how often this rule calls some count worse with no real difference (``chance_of_a_worse_call``),
    quoted in the sentence.
    """
    best_index = [spread.mean for spread in spreads].index(min(spread.mean for spread in spreads))
    worse = worse_than_best(spreads)
    enough_index = worse.index(False)  # the best is never worse than itself
    enough, first, last = head_counts[enough_index], head_counts[0], head_counts[-1]
    worse_counts = [count for count, is_worse in zip(head_counts, worse, strict=True) if is_worse]
    tied = [i for i, is_worse in enumerate(worse) if not is_worse]
    if any(worse[tied[0] : tied[-1] + 1]):
        verdict: Verdict = "mixed"
        text = (
            f"No single trend: {describe_counts(worse_counts)} are worse than the best, with tied counts on both sides"
        )
    elif not worse_counts:
        verdict = "no-effect"
        text = f"Every head count from {first} to {last} is tied with the best: no effect of the head count"
    elif enough_index == 0:
        verdict = "hurt"
        text = f"More heads hurt: {first} head(s) are tied with the best, {describe_counts(worse_counts)} are worse"
    elif enough == last:
        verdict = "help"
        text = f"More heads help all the way to {last}"
    elif worse[-1]:
        verdict = "help-then-hurt"
        text = (
            f"More heads help up to {enough}{best_note(enough, head_counts[best_index])}, then hurt ({last} are worse"
            f" than {head_counts[best_index]})"
        )
    else:
        verdict = "plateau"
        at_last = "are the best" if best_index == len(spreads) - 1 else "are tied with the best"
        text = (
            f"More heads help up to {enough}{best_note(enough, head_counts[best_index])}, then plateau ({last}"
            f" {at_last} within the seed spread)"
        )
    figures = ", ".join(
        f"{format_spread(spread, unit)} at {count}" for count, spread in zip(head_counts, spreads, strict=True)
    )
    n_seeds = len(spreads[best_index].values)
    odds = (
        ""
        if chance is None
        else f" With no real difference between head counts (uniform seed noise), this rule calls some count worse in"
        f" {chance:.0%} of runs."
    )
    sentence = (
        f"{text}. Mean {measure} (seed range) by head count: {figures}; best {head_counts[best_index]}."
        f" Worse means every one of its {n_seeds} seeds is above every seed of the best.{odds}"
    )
    return HeadsJudgement(
        verdict=verdict,
        best_heads=head_counts[best_index],
        enough_heads=enough,
        worse_than_best=worse_counts,
        sentence=sentence,
    )


def best_note(enough: int, best: int) -> str:
    """' (tied with the best, 8)' when the fewest heads that are enough are not themselves the lowest mean."""
    return "" if enough == best else f" (tied with the best, {best})"


def format_spread(spread: SeedSpread, unit: str) -> str:
    return f"{spread.text('.3g', sd=False)} {unit}"


def describe_counts(counts: list[int]) -> str:
    return " and ".join(", ".join(str(c) for c in counts).rsplit(", ", 1)) + " head(s)"


def gather_model_spec(settings: HeadsSettings, n_heads: int) -> ModelSpec:
    """One MHA layer of width d_model split into ``n_heads``, RoPE positions; vocabulary: symbols, query, tuples."""
    return ModelSpec(
        name=f"gather-{n_heads}h",
        d_model=settings.d_model,
        n_layers=1,
        n_heads=n_heads,
        variant="MHA",
        vocab_size=gather_vocab_size(settings.streams, settings.n_symbols),
        d_ff=settings.d_ff,
    )


class HeadsJob(Record):
    """One model to train: ``n_heads`` (None: the no-attention control) with ``seed``."""

    settings: HeadsSettings
    n_heads: int | None
    seed: int
    device: str


def train_job(job: HeadsJob) -> HeadsRun:
    """Train and evaluate one model (module level: ``run_jobs`` may run it in a spawned process)."""
    settings, device = job.settings, torch.device(job.device)
    attention = job.n_heads is not None
    spec = gather_model_spec(settings, job.n_heads or settings.head_counts[0])

    def batch(size: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        return gather_task_batch(size, settings.streams, settings.stream_length, settings.n_symbols, generator)

    inputs, targets = batch(settings.eval_sequences, seeded_generator(job.seed + EVAL_SEED_OFFSET))
    half_way: list[float] = []

    def evaluate_half_way(steps_done: int) -> bool:
        """Held-out loss at half the steps (no effect on training: no dropout, no random numbers drawn)."""
        if steps_done == settings.half_steps:
            half_way.append(evaluate(model, inputs, targets, device, batch_size=128))
        return False

    with deterministic_run(job.seed, device):  # same initialisation stream for every head count
        model = build_lm(spec, attention=attention, device=device)
        batches = seeded_generator(job.seed)  # same batches for every head count
        losses = train(
            model,
            lambda: batch(settings.batch, batches),
            TrainSettings(
                steps=settings.steps,
                learning_rate=settings.learning_rate,
                warmup_steps=settings.warmup_steps,
                final_lr_fraction=settings.final_lr_fraction,
            ),
            device,
            should_stop=evaluate_half_way,
        )
        return HeadsRun(
            n_heads=job.n_heads,
            head_dim=spec.attention.head_dim if attention else None,
            seed=job.seed,
            n_parameters=n_parameters(model),
            train_curve=block_means(losses),
            half_way_eval_loss=half_way[0],
            eval_loss=evaluate(model, inputs, targets, device, batch_size=128),
            eval_accuracy=scored_accuracy(model, inputs, targets, device, batch_size=128),
        )


def run_heads(
    *,
    quick: bool = False,
    seed: int = 0,
    device: str = "auto",
    out_dir: Path | None = None,
    force: bool = False,
    workers: int | None = None,
) -> HeadsResult:
    """Train every (head count, seed) model and the no-attention control, judge, plot and write the outputs."""
    outputs = ExperimentOutputs("heads", out_dir, force=force)
    torch_device = resolve_device(device)  # a bad --device is refused before the folder is created
    outputs.check_writable()
    settings = HeadsSettings.for_run(quick=quick, seed=seed, device=torch_device.type)
    jobs = [
        HeadsJob(settings=settings, n_heads=n_heads, seed=run_seed, device=str(torch_device))
        for run_seed in settings.seeds
        for n_heads in [*settings.head_counts, None]
    ]
    runs, environment = train_all("heads", train_job, jobs, seed=seed, device=torch_device, workers=workers)
    points = summarise(settings, runs)
    floor = summarise_floor(settings, runs)
    n_tuples = settings.n_symbols**settings.streams
    chance = chance_of_a_worse_call(len(settings.head_counts), len(settings.seeds))
    chance_loss = settings.streams * math.log(settings.n_symbols)
    is_floor = control_is_floor(floor, chance_loss)  # HeadsResult.floor_valid: beating no floor shows nothing
    result = HeadsResult(
        command=command_line("heads", quick=quick, seed=seed, device=device, out_dir=out_dir, force=force),
        quick=quick,
        environment=environment,
        settings=settings,
        seeds=settings.seeds,
        chance_loss=chance_loss,
        chance_accuracy=1 / n_tuples,
        chance_some_worse=chance,
        runs=runs,
        points=points,
        no_attention=floor,
        judgement=judge_head_counts([p.n_heads for p in points], [p.eval_loss for p in points], chance=chance),
        attention_beats_floor=[p.n_heads for p in points if is_floor and clearly_below(p.eval_loss, floor.eval_loss)],
        files=outputs.files,
    )
    outputs.write(heads_report(result), heads_figure(result), result)
    return result


def seed_ordered(settings: HeadsSettings, runs: list[HeadsRun], n_heads: int | None) -> list[HeadsRun]:
    """The runs of ``n_heads`` (None: the control), in the order of the settings' seeds."""
    by_seed = {run.seed: run for run in runs if run.n_heads == n_heads}
    return [by_seed[seed] for seed in settings.seeds]


def summarise(settings: HeadsSettings, runs: list[HeadsRun]) -> list[HeadsPoint]:
    points = []
    for n_heads in settings.head_counts:
        mine = seed_ordered(settings, runs, n_heads)
        points.append(
            HeadsPoint(
                n_heads=n_heads,
                head_dim=settings.d_model // n_heads,
                eval_loss=seed_spread([run.eval_loss for run in mine]),
                eval_accuracy=seed_spread([run.eval_accuracy for run in mine]),
                half_way_eval_loss=seed_spread([run.half_way_eval_loss for run in mine]),
            )
        )
    return points


def summarise_floor(settings: HeadsSettings, runs: list[HeadsRun]) -> NoAttentionFloor:
    mine = seed_ordered(settings, runs, None)
    return NoAttentionFloor(
        n_parameters=mine[0].n_parameters,
        eval_loss=seed_spread([run.eval_loss for run in mine]),
        eval_accuracy=seed_spread([run.eval_accuracy for run in mine]),
    )
