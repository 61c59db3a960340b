#!/bin/bash
# The real vLLM (CPU) serving small-llama with speculative decoding (the model drafting for itself, k = 3), then
# `vllm bench serve` at concurrency 1 and 4 (random 128 in / 64 out). Usage: bash benchmarks/vllm_cpu/spec_run.sh [OUT]
# OUT (default benchmarks/vllm_cpu/results_speculative) gets server.log and spec_c{1,4}_i128_o64.json; then
# python benchmarks/vllm_cpu/spec_eval.py --results OUT --server-log OUT/server.log
set -u
cd "$(dirname "$0")/../.."
OUT=${1:-benchmarks/vllm_cpu/results_speculative}
mkdir -p "$OUT"
PY=benchmarks/vllm_cpu/.venv/bin/python
[ -x "$PY" ] || PY=/work/main/benchmarks/vllm_cpu/.venv/bin/python
PORT=8137
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_OMP_THREADS_BIND=1 VLLM_CPU_NUM_OF_RESERVED_CPU=1 HF_HUB_OFFLINE=1 \
  TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 TOKENIZERS_PARALLELISM=false
SPEC='{"method":"draft_model","model":"benchmarks/vllm_cpu/models/small-llama","num_speculative_tokens":3}'
setsid "$PY" -m vllm.entrypoints.openai.api_server --model benchmarks/vllm_cpu/models/small-llama \
  --tokenizer benchmarks/vllm_cpu/models/small-llama --served-model-name small-llama --load-format dummy \
  --dtype bfloat16 --max-model-len 2048 --max-num-seqs 32 --max-num-batched-tokens 2048 --block-size 128 \
  --no-enable-prefix-caching --seed 0 --host 127.0.0.1 --port $PORT --speculative-config "$SPEC" \
  > "$OUT/server.log" 2>&1 &
SERVER=$!
trap 'kill -- -$SERVER 2>/dev/null' EXIT
for i in $(seq 1 180); do
  curl -sf http://127.0.0.1:$PORT/v1/models > /dev/null 2>&1 && break
  kill -0 $SERVER 2>/dev/null || { echo "server died: see $OUT/server.log"; exit 1; }
  sleep 5
done
for c in 1 4; do
  OMP_NUM_THREADS=1 timeout 600 "$PY" benchmarks/vllm_cpu/bench_serve.py --backend vllm \
    --base-url http://127.0.0.1:$PORT --endpoint /v1/completions --model small-llama \
    --tokenizer benchmarks/vllm_cpu/models/small-llama --dataset-name random --random-input-len 128 \
    --random-output-len 64 --random-range-ratio 0.0 --ignore-eos --temperature 0 --num-prompts $((c * 4)) \
    --num-warmups 2 --seed 0 --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,90,99 --save-result \
    --result-dir "$OUT" --result-filename spec_c${c}_i128_o64.json --disable-tqdm \
    --request-rate inf --max-concurrency $c
done
