#!/usr/bin/env bash
# GPU checks for `mha verify` and `mha bench`, in one short run (about 3-6 minutes on an H200).
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

# A 7B-class design for 8K context on an H200, as `mha recommend --out` writes it (preset fallback).
CONFIG="$OUT/config-7b-8k-h200.yaml"
step recommend 60 "${MHA[@]}" recommend --params 7B --seq 8k --target h200 --out "$CONFIG" --force
[ -s "$CONFIG" ] || CONFIG=llama-3-8b
step check 60 "${MHA[@]}" check "$CONFIG"

# Every layer at 8K, batch 1, in the config's dtype: JSON for the numbers, then the table.
step verify_json 180 "${MHA[@]}" verify "$CONFIG" --device cuda --json
sed -n '/^{/,$p' "$OUT/verify_json.txt" >"$OUT/verify.json"
step verify_table 180 "${MHA[@]}" verify "$CONFIG" --device cuda --reps 5
# A bigger batch (decode becomes cache-bound), and MLA (absorbed and naive) on a few DeepSeek-V3 layers.
step verify_batch16 120 "${MHA[@]}" verify "$CONFIG" --device cuda --batch 16 --reps 5
step verify_mla 120 "${MHA[@]}" verify deepseek-v3 --device cuda --seq 8k --layers 4 --reps 5
step verify_mla_naive 120 "${MHA[@]}" verify deepseek-v3 --device cuda --seq 8k --layers 4 --reps 5 --mla-cache naive

if "${MHA[@]}" bench --help >/dev/null 2>&1; then
    step bench 180 "${MHA[@]}" bench --device cuda
fi

echo "--- exit codes"; cat "$OUT/exit_codes.txt"
