#!/usr/bin/env bash
# GPU checks for `mha verify` and `mha bench`, in one short run (about 4-8 minutes on an H200).
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
PY
step verify_8b_table 240 "${MHA[@]}" verify llama-3-8b --device cuda --seq 8k --batch 1 --kv-dtype bf16 --reps 5

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
