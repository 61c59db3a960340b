"""Calibrate this machine, then predict and measure three decoders with ``mha verify``: the cost model's check.

    python benchmarks/verify_predictions.py [--device cpu] [--dtype bf16] [--models qwen3-0.6b llama-3.2-1b llama-3-8b]

Runs ``mha calibrate`` into a temporary data directory (the user's profiles are not touched), then
``mha verify MODEL --profile bench`` for each model, and prints measured against predicted decode and prefill of
the built stack (on CPU: the embedding, 2 layers, the norm and the LM head, as verify builds by default), with
measured / predicted. The floor that must lose: the roofline alone (bytes / the measured copy bandwidth, no fixed
costs), printed beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

MHA = [sys.executable, "-m", "mha_cli"]


def run_json(args: list[str], env: dict[str, str]) -> dict:
    done = subprocess.run([*MHA, *args, "--json"], capture_output=True, text=True, env=env, check=False)
    if done.returncode not in (0, 1) or not done.stdout.strip():  # calibrate's refusal (exit 1) prints no JSON
        raise SystemExit(f"mha {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="bf16")
    parser.add_argument("--seq", default="1024")
    parser.add_argument("--models", nargs="+", default=["qwen3-0.6b", "llama-3.2-1b", "llama-3-8b"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mha-bench-data-") as data:
        env = {**os.environ, "MHA_DATA_DIR": data}
        cal = run_json(["calibrate", "--device", args.device, "--dtype", args.dtype, "--name", "bench"], env)
        profile = cal["profile"]
        print(f"calibrated {profile['device_name']} ({args.dtype}) in {cal['seconds']:.0f} s:"
              f" dispatch {profile['dispatch_overhead_s'] * 1e6:.2f} us, band +/- {profile['relative_error']:.0%}")  # fmt: skip
        for row in cal["check"]:
            print(f"  held-out check {row['phase']:8} measured {row['measured_ms']:8.2f} ms"
                  f" predicted {row['predicted_ms']:8.2f} ms  x{row['ratio']:.2f}")  # fmt: skip
        print(
            f"\n{'model':14} {'layers':>6} {'phase':8} {'measured':>10} {'predicted':>10} {'ratio':>6} {'roofline':>10}"
        )
        for model in args.models:
            report = run_json(
                ["verify", model, "--device", args.device, "--seq", args.seq, "--kv-dtype", args.dtype, "--profile",
                 "bench"], env,
            )  # fmt: skip
            layers = f"{report['n_layers_built']}/{report['n_layers_model']}"
            roof = report["roofline_decode_ms"]
            print(f"{model:14} {layers:>6} {'decode':8} {report['decode_ms']:10.2f} {report['predicted_decode_ms']:10.2f}"
                  f" {report['prediction_ratio']:6.2f} {roof:10.2f}")  # fmt: skip
            print(f"{'':14} {'':>6} {'prefill':8} {report['prefill_ms']:10.2f} {report['predicted_prefill_ms']:10.2f}"
                  f" {report['prefill_prediction_ratio']:6.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
