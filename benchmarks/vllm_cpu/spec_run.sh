#!/bin/bash
# The real vLLM (CPU) serving small-llama with speculative decoding (the model drafting for itself, k = 3), then
# `vllm bench serve` at concurrency 1 and 4 (random 128 in / 64 out). Usage: bash benchmarks/vllm_cpu/spec_run.sh [OUT]
# OUT (default benchmarks/vllm_cpu/results_speculative) gets server.log and spec_c{1,4}_i128_o64.json; then
# python benchmarks/vllm_cpu/spec_eval.py --results OUT --server-log OUT/server.log
set -u
cd "$(dirname "$0")/../.."
OUT=${1:-benchmarks/vllm_cpu/results_speculative}
mkdir -p "$OUT"
PORT=8137
. benchmarks/vllm_cpu/spec_server.sh
start_spec_server small-llama $PORT "$OUT"
for c in 1 4; do
  OMP_NUM_THREADS=1 timeout 600 "$PY" benchmarks/vllm_cpu/bench_serve.py --backend vllm \
    --base-url http://127.0.0.1:$PORT --endpoint /v1/completions --model small-llama \
    --tokenizer benchmarks/vllm_cpu/models/small-llama --dataset-name random --random-input-len 128 \
    --random-output-len 64 --random-range-ratio 0.0 --ignore-eos --temperature 0 --num-prompts $((c * 4)) \
    --num-warmups 2 --seed 0 --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,90,99 --save-result \
    --result-dir "$OUT" --result-filename spec_c${c}_i128_o64.json --disable-tqdm \
    --request-rate inf --max-concurrency $c
done
