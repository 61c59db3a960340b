#!/usr/bin/env bash
# GPU checks for `mha calibrate`, `mha verify` (bytes, and times against the cost model) and `mha bench`, in one
# short run (about 5-9 minutes on an H200).
#
#   OUT=/some/dir bash benchmarks/gpu_checks.sh        # from the repository root
#
# Needs python3 with torch (CUDA) and typer, rich, pydantic, pyyaml; installs nothing and uses no
# network: the package runs from the source tree (PYTHONPATH=.). Every output is saved under $OUT.
# Each step has its own time limit and a failing step does not stop the others; the exit codes
# are collected in $OUT/exit_codes.txt (verify: 0 pass, 1 check failed, 2 bad input, 3 no memory).
set -u
OUT="${OUT:-gpu_checks_out}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
MHA=(python3 -m mha_cli)
: >"$OUT/exit_codes.txt"

step() {  # step NAME SECONDS COMMAND...: run with a time limit, tee its output to $OUT/NAME.txt
    local name=$1 limit=$2
    shift 2
    echo "=== $name: $*" | tee "$OUT/$name.txt"
    timeout "$limit" "$@" 2>&1 | tee -a "$OUT/$name.txt"
    local code=${PIPESTATUS[0]}
    echo "$name $code" >>"$OUT/exit_codes.txt"
    echo "=== $name exit $code"
}

step env 60 python3 -c "
import sys, torch
print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda)
print('device', torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'NO CUDA DEVICE')
free, total = torch.cuda.mem_get_info() if torch.cuda.is_available() else (0, 0)
print(f'free {free / 2**30:.1f} GiB of {total / 2**30:.1f} GiB')
import typer, rich, pydantic, yaml  # the CLI's own dependencies
print('typer', typer.__version__, 'rich ok', 'pydantic', pydantic.VERSION)
"

# Device memory as torch reports it against the figure the memory plans use (mha targets: torch_memory_gib).
step device_memory 60 python3 -c "
import json, subprocess, sys, torch
total = torch.cuda.mem_get_info()[1]
name = torch.cuda.get_device_name(0)
table = json.loads(subprocess.run([sys.executable, '-m', 'mha_cli', 'targets', 'h200', '--json'], capture_output=True,
                                  text=True, check=True).stdout)
gib = table.get('resolved', table).get('target', table).get('torch_memory_gib')
print(f'{name}: torch total {total:,} B = {total / 2**30:.2f} GiB; mha targets h200: {gib} GiB')
"

# The cost model on this GPU: calibrate it (profile in $OUT/data, not the user's), compare its constants with the
# shipped H200 prior, then verify predicts with it (found automatically: same device and dtype) and with the prior.
export MHA_DATA_DIR="$OUT/data"
step calibrate 240 "${MHA[@]}" calibrate --device cuda --dtype bf16 --name gpu-check --force --json
sed -n '/^{/,$p' "$OUT/calibrate.txt" >"$OUT/calibrate.json"
step calibrate_vs_prior 60 python3 - "$OUT/calibrate.json" <<'PY'
import json, sys
from mha_cli.core.cost.priors import prior_profile
from mha_cli.core.targets import load_targets
measured = json.load(open(sys.argv[1]))["profile"]
prior = prior_profile(load_targets()["h200"]).model_dump()
def at(curve, size):
    from mha_cli.core.cost.profile import Curve
    return Curve.model_validate(curve).at(size)
for name, sizes, unit in (("weight_bandwidth", [2**20, 2**24, 2**26, 2**28], 1e9), ("cache_bandwidth", [2**20, 2**26], 1e9),
                          ("matmul", [1, 16, 256, 4096], 1e12), ("attention_flops", [256, 4096], 1e12)):
    for size in sizes:
        m, p = at(measured[name], size), at(prior[name], size)
        print(f"{name:18} at {size:>10,}: calibrated {m / unit:9.2f}  prior {p / unit:9.2f}  ratio {m / p:5.2f}")
for key in ("kernel_overhead_s", "dispatch_overhead_s", "step_overhead_s"):
    print(f"{key:20} calibrated {measured[key] * 1e6:8.2f} us  prior {prior[key] * 1e6:8.2f} us")
print("check rows", json.load(open(sys.argv[1]))["check"])
PY

# A 7B-class design for 8K context on an H200, as `mha recommend --out` writes it (preset fallback).
CONFIG="$OUT/config-7b-8k-h200.yaml"
step recommend 60 "${MHA[@]}" recommend --params 7B --seq 8k --target h200 --out "$CONFIG" --force
[ -s "$CONFIG" ] || CONFIG=llama-3-8b
step check 60 "${MHA[@]}" check "$CONFIG"

# Llama-3-8B, every layer at 8K, batch 1, bf16, on one GPU: the whole decoder (embedding, 32 layers, norm,
# head), weights and cache measured vs predicted, the CUDA allocator's changes vs the prediction, decode ms
# vs the roofline, the SDPA backends. JSON for the numbers (summarised below), then the table.
step verify_8b_json 240 "${MHA[@]}" verify llama-3-8b --device cuda --seq 8k --batch 1 --kv-dtype bf16 --json
sed -n '/^{/,$p' "$OUT/verify_8b_json.txt" >"$OUT/verify_8b.json"
step verify_8b_summary 30 python3 - "$OUT/verify_8b.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
print(f"{report['model_name']} on {report['device_name']}: built {report['built']}, seq {report['seq_len']}")
print(f"weights  predicted {report['predicted_weight_bytes']:,} B  measured {report['measured_weight_bytes']:,} B")
print(f"cache    predicted {report['predicted_cache_bytes']:,} B  measured {report['measured_cache_bytes']:,} B")
allocator = report["allocator"] or {}
for part in ("weights", "cache"):
    if allocator:
        change, expected = allocator[f"{part}_change_bytes"], allocator[f"{part}_expected_bytes"]
        print(f"allocator {part}: change {change:,} B, expected {expected:,} B, difference {change - expected:+,} B"
              f" (tolerance {allocator[f'{part}_tolerance_bytes']:,} B): {'ok' if allocator[f'{part}_ok'] else 'OUTSIDE'}")
if allocator:
    print(f"prefill peak {allocator['prefill_peak_bytes']:,} B vs workspace estimate {allocator['predicted_workspace_bytes']:,} B")
roofline = report["roofline_decode_ms"]
vs = "no roofline (device not in the targets database)" if roofline is None else (
    f"roofline {roofline:.3f} ms ({report['peak_source']}): {report['decode_vs_roofline']:.2f}x")
print(f"decode {report['decode_ms']:.3f} ms (IQR {report['decode']['spread_ms']:.3f}) vs {vs};"
      f" {report['decode_tokens_per_s']:.1f} tok/s")
print(f"prefill {report['prefill_ms']:.1f} ms for {report['prefill_tokens']:,} tokens, {report['prefill_tokens_per_s']:,.0f} tok/s")
print("backends", report["sdpa_backends"])
for key in ("per_rank", "whole_model"):
    scope = report[key]
    print(f"{key}: {scope['covers']}: cache {scope['cache_bytes']:,} B, weights {scope['weight_bytes']:,} B,"
          f" decode {scope['decode_ms']:.3f} ms, extrapolated {scope['extrapolated']}")
print("checks", report["checks"], "passed", report["passed"])
print(f"cost model ({report['prediction_profile']}): decode predicted {report['predicted_decode_ms']} ms, measured"
      f" / predicted {report['prediction_ratio']}; prefill predicted {report['predicted_prefill_ms']} ms, ratio"
      f" {report['prefill_prediction_ratio']}")
PY
step verify_8b_prior 240 "${MHA[@]}" verify llama-3-8b --device cuda --seq 8k --batch 1 --reps 5 --profile h200-prior
step plan_8b 60 "${MHA[@]}" plan llama-3-8b --target h200 --isl 1024 --osl 128 --concurrency 1

# The recommended 7B design for 8K on an H200 (as `mha recommend --out` writes it), a bigger batch (decode
# becomes cache-bound), and MLA (absorbed and naive) on DeepSeek-V3's first 4 layers (3 dense, 1 MoE).
step verify_config 240 "${MHA[@]}" verify "$CONFIG" --device cuda --reps 5
step verify_batch16 240 "${MHA[@]}" verify llama-3-8b --device cuda --seq 8k --batch 16 --reps 5
step verify_mla 180 "${MHA[@]}" verify deepseek-v3 --device cuda --seq 8k --layers 4 --reps 5
step verify_mla_naive 180 "${MHA[@]}" verify deepseek-v3 --device cuda --seq 8k --layers 4 --reps 5 --mla-cache naive

if "${MHA[@]}" bench --help >/dev/null 2>&1; then
    step bench 180 "${MHA[@]}" bench --device cuda
fi

echo "--- exit codes"; cat "$OUT/exit_codes.txt"
