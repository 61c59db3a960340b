"""Markdown job summary of `mha check --json` and `mha verify --json` (the action's summary step).

Standard library only: it runs with the runner's python, whatever else is installed. The verify report's
three scopes keep the names `mha verify --json` gives them: ``built`` (the stack built: embedding, the built
layers, final norm, head; its keys at the top level), ``per_rank`` (every layer, one tensor-parallel rank)
and ``whole_model`` (every layer, every rank: the deployment). Usage::

    python verify_summary.py --config config.yaml --report mha-verify.json \
        --check-report check.json --check-exit 0 --verify-exit 0 >> "$GITHUB_STEP_SUMMARY"
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

EXIT_MEANINGS = {0: "passed", 1: "a check failed", 2: "bad input", 3: "not enough memory"}


def format_bytes(n_bytes: float) -> str:
    """131072 -> '128.0 KiB' (binary prefixes, as mha prints them)."""
    value = float(n_bytes)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024:
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1024
    return f"{value:,.1f} TiB"


def load_json(path: str | None) -> dict[str, Any] | None:
    """The report, or None when the command wrote none (bad input, out of memory) or it is not JSON."""
    if not path:
        return None
    try:
        report = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return report if isinstance(report, dict) else None


def exit_text(code: str) -> str:
    """'0 (passed)'; '' (the step never ran) -> 'did not run'."""
    if not code:
        return "did not run"
    meaning = EXIT_MEANINGS.get(int(code)) if code.lstrip("-").isdigit() else None
    return f"exit {code}" + (f" ({meaning})" if meaning else "")


def pair(predicted: int, measured: int) -> str:
    """'1.0 MiB' when equal, else 'predicted 1.0 MiB, measured 1.1 MiB'."""
    if predicted == measured:
        return f"{format_bytes(measured)} (= predicted)"
    return f"{format_bytes(measured)} (predicted {format_bytes(predicted)})"


def check_section(check: dict[str, Any] | None, exit_code: str) -> list[str]:
    lines = [f"### `mha check`: {exit_text(exit_code)}", ""]
    if check is None:
        return [*lines, "No report (see the step's log for the one-line error).", ""]
    lines.append(f"{check['errors']} error(s), {check['warnings']} warning(s).")
    findings = check.get("findings", [])
    if findings:
        lines += ["", "| rule | severity | finding |", "|---|---|---|"]
        lines += [f"| {f['id']} {f['name']} | {f['severity']} | {cell(f['message'])} |" for f in findings]
    return [*lines, ""]


def cell(text: str) -> str:
    """Text safe inside a markdown table cell."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def verify_section(report: dict[str, Any] | None, exit_code: str) -> list[str]:
    lines = [f"### `mha verify`: {exit_text(exit_code)}", ""]
    if report is None:
        return [*lines, "No report (see the step's log for the one-line error).", ""]
    if "stages" in report:  # verify --pp N: one row per stage and tp rank
        return [*lines, *pipeline_lines(report), *check_lines(report)]
    lines.append(
        f"{report['model_name']} ({report['variant']}) on {report['device_name']} ({report['device']},"
        f" {report['dtype']}, torch {report['torch_version']}): seq {report['seq_len']:,} x batch {report['batch']},"
        f" tp {report['tp']}, layers {report['layers_note']}."
    )
    lines += [
        "",
        "| scope | covers | weights | KV cache | decode step | how |",
        "|---|---|---|---|---|---|",
        f"| built | {cell(report['built'])} |"
        f" {pair(report['predicted_weight_bytes'], report['measured_weight_bytes'])} |"
        f" {pair(report['predicted_cache_bytes'], report['measured_cache_bytes'])} |"
        f" {report['decode_ms']:.2f} ms | measured |",
    ]
    for key in ("per_rank", "whole_model"):
        scope = report[key]
        how = "EXTRAPOLATED" if scope["extrapolated"] else "measured"
        lines.append(
            f"| {key} | {cell(scope['covers'])} | {pair(scope['predicted_weight_bytes'], scope['weight_bytes'])} |"
            f" {pair(scope['predicted_cache_bytes'], scope['cache_bytes'])} | {scope['decode_ms']:.2f} ms | {how} |"
        )
    roofline = report.get("decode_vs_roofline")
    if roofline is not None:
        lines += ["", f"Decode step of the built stack: {roofline:.2f}x its roofline ({report['peak_source']})."]
    return [*lines, *check_lines(report)]


def pipeline_lines(report: dict[str, Any]) -> list[str]:
    """A ``verify --pp N`` report: each stage's bytes against the prediction and its share of a decode step."""
    lines = [
        f"{report['model_name']} on {report['device']} ({report['dtype']}): seq {report['seq_len']:,} x batch"
        f" {report['batch']:,}, pp {report['pp']} x tp {report['tp']}, {report['n_layers_built']} of"
        f" {report['n_layers_model']} layers built.",
        "",
        "| stage | tp rank | first layer (layers) | embedding | head | weights | KV cache | decode share |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for stage in report["stages"]:
        lines.append(
            f"| {stage['stage']} | {stage['tp_rank']} | {stage['first_layer']} ({stage['n_layers']}) |"
            f" {'yes' if stage['embedding'] else 'no'} | {'yes' if stage['head'] else 'no'} |"
            f" {pair(stage['predicted_weight_bytes'], stage['measured_weight_bytes'])} |"
            f" {pair(stage['predicted_cache_bytes'], stage['measured_cache_bytes'])} |"
            f" {stage['decode_compute_ms']:.2f} ms |"
        )
    lines += [
        "",
        f"Measured: prefill {report['prefill_ms']:.2f} ms, decode step {report['decode_ms']:.2f} ms through every"
        " stage (rank 0, no micro-batching).",
    ]
    return lines


def check_lines(report: dict[str, Any]) -> list[str]:
    """The checks table, the thresholds given and the notes."""
    thresholds = {name: value for name, value in report.get("thresholds", {}).items() if value is not None}
    lines = ["", "| check | result | detail |", "|---|---|---|"]
    details = report.get("check_details", {})
    for name, ok in report["checks"].items():
        lines.append(f"| {name} | {'pass' if ok else '**FAIL**'} | {cell(details.get(name, ''))} |")
    if thresholds:
        shown = ", ".join(f"{name} {value:g}" for name, value in thresholds.items())
        lines += ["", f"Thresholds: {shown} (max_kv_gib and max_decode_ms apply to whole_model)."]
    if report.get("notes"):
        lines += ["", "<details><summary>notes</summary>", ""]
        lines += [f"- {cell(note)}" for note in report["notes"]]
        lines += ["", "</details>"]
    return [*lines, ""]


def summary(config: str, check: dict | None, check_exit: str, report: dict | None, verify_exit: str) -> str:
    passed = check_exit == "0" and verify_exit == "0"
    lines = [f"## mha: `{config}` {'passed' if passed else 'FAILED'}", ""]
    lines += check_section(check, check_exit)
    lines += verify_section(report, verify_exit)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--report", required=True, help="mha verify --json output")
    parser.add_argument("--check-report", default="", help="mha check --json output")
    parser.add_argument("--check-exit", default="")
    parser.add_argument("--verify-exit", default="")
    args = parser.parse_args(argv)
    text = summary(args.config, load_json(args.check_report), args.check_exit, load_json(args.report), args.verify_exit)
    sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
