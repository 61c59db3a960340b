# Sourced by spec_run.sh and spec_preempt_run.sh: start the real vLLM (CPU) serving MODEL drafting for itself
# (draft_model, k = 3) with the grid's settings and any EXTRA server flags, log to OUT/server.log, and wait until it
# answers (the server's process group is killed on exit).
# Usage: start_spec_server MODEL PORT OUT [EXTRA...]
PY=benchmarks/vllm_cpu/.venv/bin/python
[ -x "$PY" ] || PY=/work/main/benchmarks/vllm_cpu/.venv/bin/python
export VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_OMP_THREADS_BIND=1 VLLM_CPU_NUM_OF_RESERVED_CPU=1 HF_HUB_OFFLINE=1 \
  TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 TOKENIZERS_PARALLELISM=false

start_spec_server() {
  local model=$1 port=$2 out=$3
  shift 3
  local spec="{\"method\":\"draft_model\",\"model\":\"benchmarks/vllm_cpu/models/$model\",\"num_speculative_tokens\":3}"
  setsid "$PY" -m vllm.entrypoints.openai.api_server --model "benchmarks/vllm_cpu/models/$model" \
    --tokenizer "benchmarks/vllm_cpu/models/$model" --served-model-name "$model" --load-format dummy \
    --dtype bfloat16 --max-model-len 2048 --max-num-seqs 32 --max-num-batched-tokens 2048 --block-size 128 \
    --no-enable-prefix-caching --seed 0 --host 127.0.0.1 --port "$port" --speculative-config "$spec" "$@" \
    > "$out/server.log" 2>&1 &
  SERVER=$!
  trap 'kill -- -$SERVER 2>/dev/null' EXIT
  for _ in $(seq 1 180); do
    curl -sf "http://127.0.0.1:$port/v1/models" > /dev/null 2>&1 && return 0
    kill -0 "$SERVER" 2>/dev/null || { echo "server died: see $out/server.log"; exit 1; }
    sleep 5
  done
  echo "server did not answer in 15 minutes: see $out/server.log"
  exit 1
}
