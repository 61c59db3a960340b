"""``mha calibrate --from RESULTS``: a profile fitted to a real server's benchmark results (``core.serve.fit``).

No torch: the runs are replayed in the simulated serving loop. The profile is written only once the fit is done,
whole, and replaces one of the same name only with ``--force``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from mha_cli.cli.output import Output
from mha_cli.core.byte_units import GIB
from mha_cli.core.cost.profile import band_words, measured_within
from mha_cli.core.errors import BadInputError, shown

if TYPE_CHECKING:
    from rich.console import Console

    from mha_cli.core.serve.bench_results import MeasuredRun
    from mha_cli.core.serve.fit import CalibrationFit
    from mha_cli.core.sources import ModelSource


def _names(loaded: ModelSource) -> set[str]:
    """What a result file may call the model: its name, its folder, its Hugging Face id (last part), lowercased."""
    from mha_cli.core.served_model import PLACEHOLDER

    origin = Path(loaded.origin)
    names = {loaded.model.name, origin.stem} | ({loaded.served.model} - {PLACEHOLDER})
    if origin.name == "config.json":
        names.add(origin.parent.name)
    return {_short(name) for name in names if name}


def _short(name: str) -> str:
    return name.rstrip("/").rsplit("/", 1)[-1].lower()


def check_model(runs: list[MeasuredRun], loaded: ModelSource, served_model_name: str | None) -> None:
    """Refuse runs that name another model than ``--model`` (one line)."""
    expected = {_short(served_model_name)} if served_model_name else _names(loaded)
    for run in runs:
        if _short(run.model) not in expected:
            asked = f"--served-model-name {shown(served_model_name)}" if served_model_name else loaded.model.name
            raise BadInputError(
                f"{run.path} measured {shown(run.model)}, not {asked}: give --model for it, or"
                f" --served-model-name {shown(run.model)} if it is the same model"
            )


def calibrate_from_results(
    sources: list[Path], *, model: str | None, target: str | None, hold_out: list[str],
    served_model_name: str | None, profile: str | None, name: str | None, force: bool, json: bool,
    deployment: dict[str, Any],
) -> None:  # fmt: skip
    from mha_cli.core.config_io import write_text_atomic
    from mha_cli.core.cost.store import check_profile_name, load_profile, profile_path
    from mha_cli.core.deployment import merge_deployment
    from mha_cli.core.serve.bench_results import collect
    from mha_cli.core.serve.fit import calibrate_from, nominal_cpu_profile, replay_for
    from mha_cli.core.sources import load_source
    from mha_cli.core.targets import resolve_target

    if model is None or target is None:
        raise BadInputError("--from needs --model (what the server ran) and --target (what it ran on)")
    resolved = resolve_target(target)
    loaded = load_source(model)
    runs = collect(sources)
    check_model(runs, loaded, served_model_name)
    engine, server_note = server_engine(runs, deployment["engine"])
    deployment = {**deployment, "engine": engine}
    longest = max(i + o for run in runs for i, o in run.lengths)
    spec = merge_deployment(loaded.deployment, model=loaded.model, seq_len=longest, target=resolved.spec,
                            **deployment)  # fmt: skip
    weights = spec.weight_dtype
    from mha_cli.core.cost.latency import engine_prior, priced_generation

    if profile is not None:  # review 408 #5: as plan reads the name beside this engine (h100-sxm-prior@vllm-0.21)
        base = load_profile(profile, weights, release=spec.engine_version, generation=priced_generation(spec))
    elif resolved.target.id == "cpu":
        from mha_cli.core.cost.store import newest_cpu_profile

        # a fit starts from rates measured on this CPU, never from an earlier fit (its factors would compound,
        # and a rerun with --force would start from the very profile it replaces)
        base = newest_cpu_profile(measured_only=True) or nominal_cpu_profile(weights)
    else:  # the runs' engine generation's prior, as plan prices it (it was the default constants, 2023-24 engines)
        base = engine_prior(resolved.target, spec)
    chosen = check_profile_name(name or f"{resolved.target.id}-{spec.engine or 'vllm'}-fit")
    path = profile_path(chosen)
    if path.exists() and not force:
        raise BadInputError(f"profile {chosen} exists ({path}): pass --force to replace it, or --name another")
    replay = replay_for(loaded.model, resolved, spec, base, runs, spec.tp)
    fit = calibrate_from(runs, replay, base, name=chosen, hold_out=hold_out)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, fit.profile.model_dump_json(indent=1) + "\n", force=force)
    import shlex

    engine_words = ["--engine", engine] if engine else []
    layout = ["--tp", str(replay.case.tp), "--pp", str(replay.case.pp)]  # the one server the runs measured
    words = [*layout, *engine_words, *setting_words(deployment), "--profile", chosen]
    use = shlex.join(["mha", "plan", model, "--target", resolved.spec, *words])
    notes = [*fit.notes, *([server_note] if server_note else [])]
    Output(json).emit(fit.model_copy(update={"path": str(path), "use": use, "notes": notes}), render_fit)


def server_engine(runs: list[MeasuredRun], given: str | None) -> tuple[str | None, str | None]:
    """(the engine that prices the fit, the note saying why) for runs whose client names the server it measured
    (``bench_results.server_of``: SGLang's ``bench_serving --backend sglang-oai`` measured an SGLang server): that
    engine where ``--engine`` (``given``) is left out; one line for files that name two engines."""
    from mha_cli.core.engine.generations import generation_of

    named = {(run.server, run.backend) for run in runs if run.server is not None}
    servers = sorted({server for server, _ in named})
    if len(servers) > 1:
        raise BadInputError(
            f"the result files measured servers of {' and '.join(servers)} (their clients' backends"
            f" {', '.join(sorted(shown(backend) for _, backend in named))}): fit one engine's runs at a time"
        )
    if not servers:
        return given, None
    server, backends = servers[0], ", ".join(sorted(shown(backend) for _, backend in named))
    if given is None:
        return (
            server,
            f"priced with {server}'s rules: the files' client backend {backends} names it (--engine to set another)",
        )
    if generation_of(given).engine != server:
        return given, (
            f"priced with {given}'s rules as --engine asks, though the files' client backend {backends} names {server}"
        )
    return given, None


def render_fit(console: Console, fit: CalibrationFit) -> None:
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    profile = fit.profile
    console.print(f"[bold]Profile {escape(profile.name)}[/bold]: {escape(profile.source)}")
    table = Table(box=box.SIMPLE_HEAD, padding=(0, 1), title="measured / simulated / closed form", title_justify="left")
    for column in ("run", "", "TTFT mean ms", "TTFT p99 ms", "TPOT mean ms", "output tok/s"):
        table.add_column(column, justify="left" if column in ("run", "") else "right")
    for row in fit.runs:
        m, s, c = row.measured, row.simulated, row.closed_form
        table.add_row(
            escape(row.load), "held out" if row.held_out else "fitted",
            f"{m['ttft_mean']:,.1f} / {s['ttft_mean']:,.1f} / {c['ttft_mean']:,.1f}",
            f"{m['ttft_p99']:,.1f} / {s['ttft_p99']:,.1f}",
            f"{m['tpot_mean']:,.2f} / {s['tpot_mean']:,.2f} / {c['tpot_mean']:,.2f}",
            f"{m['output_tokens_per_s']:,.0f} / {s['output_tokens_per_s']:,.0f} / {c['output_tokens_per_s']:,.0f}",
        )  # fmt: skip
    console.print(table)
    for label, summary in (("fitted", fit.fitted), ("held out", fit.held_out)):
        if summary is None:
            continue
        sim, closed = summary.simulated, summary.closed_form
        console.print(
            f"{label} ({summary.runs} runs), median error: TTFT mean {sim['ttft_mean']:.0%} (closed form"
            f" {closed['ttft_mean']:.0%}), median {sim['ttft_median']:.0%}, p99 {sim['ttft_p99']:.0%}; TPOT mean"
            f" {sim['tpot_mean']:.0%} (closed form {closed['tpot_mean']:.0%}), p99 {sim['tpot_p99']:.0%}; output"
            f" tokens/s {sim['output_tokens_per_s']:.0%} (closed form {closed['output_tokens_per_s']:.0%})"
        )
    for constant, value in profile.constants.items():
        console.print(f"[dim]{escape(constant)}: {escape(value)}[/dim]")
    for note in fit.notes:
        console.print(f"[dim]note: {escape(note)}[/dim]")
    console.print(
        f"predictions from it carry {band_words(*measured_within(profile.relative_error, profile.kind, profile.source))}; written to {escape(str(fit.path))}"
    )
    if fit.use:
        console.print(f"use it: {escape(fit.use)}")


SETTING_FLAGS = (
    ("weight_dtype", "--weight-dtype"), ("kv_dtype", "--kv-dtype"), ("block_size", "--block-size"),
    ("gpu_memory_utilization", "--gpu-memory-utilization"), ("max_num_batched_tokens", "--max-num-batched-tokens"),
    ("max_num_seqs", "--max-num-seqs"),
)  # fmt: skip
"""The server settings a fit was given (``calibrate --from``), as ``mha plan`` spells them."""


def setting_words(deployment: dict[str, Any]) -> list[str]:
    """The server's settings given to the fit, as ``mha plan`` options, so its "use it" line plans the server the
    profile was fitted on (trial 287 #2: the line left them out, and a pasted plan ran the engine's defaults)."""
    words: list[str] = []
    for key, flag in SETTING_FLAGS:
        value = deployment.get(key)
        if value is not None:
            words += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
    pool = deployment.get("kv_cache_memory_bytes")
    if pool is not None:
        words += ["--kv-cache-gib", f"{pool / GIB:.10g}"]
    if deployment.get("async_scheduling") is not None:
        words.append("--async-scheduling" if deployment["async_scheduling"] else "--no-async-scheduling")
    return words
