#!/bin/bash
# The real vLLM (CPU) serving tiny-llama with speculative decoding (the model drafting for itself, k = 3) on a pool
# far smaller than the load (--num-gpu-blocks-override 24, blocks of 128), closed loop of 8 users, 12 requests of
# 1,024 in / 512 out: what a request's blocks hold when each step keeps T tokens and allocates vLLM's lookahead slots.
# The server's vllm:num_preemptions_total is read before and after the run.
# Usage: bash benchmarks/vllm_cpu/spec_preempt_run.sh [OUT]
# OUT (default benchmarks/vllm_cpu/results_spec_preempt) gets server.log, metrics_{before,after}.txt and
# spec_c8_i1024_o512_kv24.json; then python benchmarks/vllm_cpu/spec_preempt_eval.py --results OUT
set -u
cd "$(dirname "$0")/../.."
OUT=${1:-benchmarks/vllm_cpu/results_spec_preempt}
mkdir -p "$OUT"
PORT=8139
BLOCKS=24
. benchmarks/vllm_cpu/spec_server.sh
start_spec_server tiny-llama $PORT "$OUT" --num-gpu-blocks-override $BLOCKS
curl -sf http://127.0.0.1:$PORT/metrics > "$OUT/metrics_before.txt"
OMP_NUM_THREADS=1 timeout 900 "$PY" benchmarks/vllm_cpu/bench_serve.py --backend vllm \
  --base-url http://127.0.0.1:$PORT --endpoint /v1/completions --model tiny-llama \
  --tokenizer benchmarks/vllm_cpu/models/tiny-llama --dataset-name random --random-input-len 1024 \
  --random-output-len 512 --random-range-ratio 0.0 --ignore-eos --temperature 0 --num-prompts 12 \
  --num-warmups 0 --seed 0 --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,90,99 --save-result \
  --result-dir "$OUT" --result-filename spec_c8_i1024_o512_kv$BLOCKS.json --disable-tqdm \
  --request-rate inf --max-concurrency 8
STATUS=$?
curl -sf http://127.0.0.1:$PORT/metrics > "$OUT/metrics_after.txt"
[ $STATUS -eq 0 ] || { echo "the benchmark client failed (exit $STATUS): the run is not a measurement"; exit $STATUS; }
