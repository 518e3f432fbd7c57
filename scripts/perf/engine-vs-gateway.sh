#!/usr/bin/env bash
# Engine speed vs what clients get through raygw: llama-bench tokens/s for a
# synthetic 1B-class model, then raygw end-to-end completion tokens/s with
# the engine saturated (more clients than slots).
#   SHAPE=llama-3.2-1b QUANT=q4_k_m THREADS=2 SLOTS=1 CLIENTS=4 REPEAT=4 MODEL=existing.gguf
source "$(dirname "$0")/lib.sh"
build_raygw
SHAPE="${SHAPE:-llama-3.2-1b}"
QUANT="${QUANT:-q4_k_m}"
THREADS="${THREADS:-2}"
SLOTS="${SLOTS:-1}"
CLIENTS="${CLIENTS:-4}"
REPEAT="${REPEAT:-4}"
ENGINE="$(engine_bin)"
SCRATCH="${SCRATCH:-/dev/shm}"
if [ -z "${MODEL:-}" ]; then
  MODEL="$SCRATCH/raygw-perf-$SHAPE-$QUANT.gguf"
  [ -f "$MODEL" ] || "$RAYGW" model synth --shape "$SHAPE" --quant "$QUANT" -o "$MODEL" --tmp-dir "$SCRATCH" \
    --quantize-binary "$(dirname "$ENGINE")/llama-quantize"
  trap 'cleanup; rm -f "$MODEL"' EXIT
fi
machine | tee "$OUT/engine-machine.txt"
echo "== llama-bench ($SHAPE $QUANT, $THREADS threads)"
"$(dirname "$ENGINE")/llama-bench" -m "$MODEL" -t "$THREADS" -p 128 -n 64 -r 2 -o md | tee "$OUT/llama-bench.md"
LS_PORT=$(free_port)
GW_PORT=$(free_port)
start llama-server "$OUT/llama-server-engine.log" "$ENGINE" --model "$MODEL" --host 127.0.0.1 --port "$LS_PORT" \
  --ctx-size $((2048 * SLOTS)) --parallel "$SLOTS" --threads "$THREADS" --no-webui
wait_health "http://127.0.0.1:$LS_PORT" 300
start_gateway "$GW_PORT" "http://127.0.0.1:$LS_PORT" perf RAY_SCHEDULER_CONCURRENCY="$SLOTS" \
  RAY_LLAMA_CPP_PARALLEL="$SLOTS" RAY_SCHEDULER_MAX_QUEUE=64 RAY_MODEL_TIMEOUT_MS=600000 \
  RAY_SCHEDULER_REQUEST_TIMEOUT_MS=600000 RAY_GRACEFUL_DEGRADATION_ENABLED=false
cat >"$OUT/engine.jsonl" <<'JSONL'
{"id":"p1","prompt":"Write a short note to the team about the release.","max_tokens":64,"params":{"temperature":0,"ignore_eos":true}}
{"id":"p2","prompt":"Summarize the meeting in three sentences.","max_tokens":64,"params":{"temperature":0,"ignore_eos":true}}
JSONL
echo "== raygw end to end, $CLIENTS clients, $SLOTS slot(s)"
"$RAYGW" bench --url "http://127.0.0.1:$GW_PORT" --model perf --workload "$OUT/engine.jsonl" --repeat "$REPEAT" \
  --concurrency "$CLIENTS" --timeout 10m --no-progress --out "$OUT/engine-raygw.json"
