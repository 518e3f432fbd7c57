#!/usr/bin/env bash
# Slot affinity on vs off in one `raygw bench --compare` run: two identical
# llama-server engines (2 slots each, a synthetic 1B-class model), each behind
# its own raygw, one with RAY_SCHEDULER_SLOT_AFFINITY_ENABLED=true (a) and
# one with false (b). The workload rotates 4 prompt families with long shared
# system prompts over the 2 slots. Prints TTFT, queue delay and the prompt
# tokens each engine evaluated vs reused, and keeps the raw output in $OUT.
#
#   SHAPE=qwen2.5-0.5b QUANT=q4_k_m   synthetic model written to $SCRATCH (deleted at exit)
#   MODEL=existing.gguf               use this model instead (kept)
#   THREADS=1 SLOTS=2 CTX=4096        per engine (each engine gets its own thread)
#   BATCH=256 UBATCH=128              --batch-size/--ubatch-size (the 1b-8gb profile's)
#   THREADS_HTTP=8                    engine --threads-http, also told to raygw (RAY_LLAMA_CPP_THREADS_HTTP), which
#                                     opens at most THREADS_HTTP-1 connections to the engine
#   CACHE_RAM=0                       --cache-ram MiB (0: slot KV only, no host-memory prompt cache)
#   ENGINE_ARGS=                      more llama-server flags, e.g. "--kv-unified --cache-idle-slots"
#   CONCURRENCY=16 REPEAT=1           bench clients (shared by both targets in MODE=compare) and replays
#   MODE=compare                      compare: one `raygw bench --compare` run (closed loop shared by a and b);
#                                     parallel: two bench runs at the same time, CONCURRENCY/2 clients each;
#                                     sequential: one target after the other, CONCURRENCY/2 clients each
#   WORKLOAD=bench/workloads/affinity-4families.jsonl
#   TIME_LIMIT=900                    seconds before the bench run is stopped
source "$(dirname "$0")/lib.sh"
trap 'echo "$0: failed at line $LINENO" >&2' ERR
build_raygw
SHAPE="${SHAPE:-qwen2.5-0.5b}"
QUANT="${QUANT:-q4_k_m}"
THREADS="${THREADS:-1}"
SLOTS="${SLOTS:-2}"
CTX="${CTX:-4096}"
CACHE_RAM="${CACHE_RAM:-0}"
BATCH="${BATCH:-256}"
THREADS_HTTP="${THREADS_HTTP:-8}"
UBATCH="${UBATCH:-128}"
read -r -a EXTRA <<<"${ENGINE_ARGS:-}"
CONCURRENCY="${CONCURRENCY:-16}"
REPEAT="${REPEAT:-1}"
MODE="${MODE:-compare}"
TIME_LIMIT="${TIME_LIMIT:-900}"
WORKLOAD="${WORKLOAD:-$REPO/bench/workloads/affinity-4families.jsonl}"
SCRATCH="${SCRATCH:-/dev/shm}"
ENGINE="$(engine_bin)"
if [ -z "${MODEL:-}" ]; then
  MODEL="$SCRATCH/raygw-perf-$SHAPE-$QUANT.gguf"
  trap 'cleanup; rm -f "$MODEL"' EXIT
  [ -f "$MODEL" ] || "$RAYGW" model synth --shape "$SHAPE" --quant "$QUANT" -o "$MODEL" --tmp-dir "$SCRATCH" \
    --quantize-binary "$(dirname "$ENGINE")/llama-quantize"
fi
trap 'exit 130' INT TERM # the EXIT trap stops what was started here
machine | tee "$OUT/affinity-machine.txt"
{
  echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "engines: --parallel $SLOTS --ctx-size $CTX --threads $THREADS --threads-http $THREADS_HTTP --batch-size $BATCH --ubatch-size $UBATCH --cache-ram $CACHE_RAM ${ENGINE_ARGS:-}"
} | tee -a "$OUT/affinity-machine.txt"

start_engine() { # NAME PORT
  start "llama-server $1" "$OUT/llama-server-affinity-$1.log" "$ENGINE" --model "$MODEL" --host 127.0.0.1 \
    --port "$2" --ctx-size "$CTX" --parallel "$SLOTS" --threads "$THREADS" --threads-batch "$THREADS" \
    --threads-http "$THREADS_HTTP" --batch-size "$BATCH" --ubatch-size "$UBATCH" --cache-ram "$CACHE_RAM" --metrics --slots --no-webui "${EXTRA[@]}"
}
gateway() { # PORT ENGINE_PORT AFFINITY
  RAY_LOG_LEVEL=debug start_gateway "$1" "http://127.0.0.1:$2" perf \
    RAY_SCHEDULER_SLOT_AFFINITY_ENABLED="$3" RAY_SCHEDULER_CONCURRENCY="$SLOTS" RAY_LLAMA_CPP_PARALLEL="$SLOTS" \
    RAY_LLAMA_CPP_THREADS_HTTP="$THREADS_HTTP" RAY_LLAMA_CPP_CACHE_PROMPT=true RAY_SCHEDULER_MAX_QUEUE=256 RAY_SCHEDULER_MAX_QUEUED_TOKENS=100000000 \
    RAY_SCHEDULER_MAX_INFLIGHT_TOKENS=100000000 RAY_SCHEDULER_REQUEST_TIMEOUT_MS=1800000 \
    RAY_MODEL_TIMEOUT_MS=1800000 RAY_GRACEFUL_DEGRADATION_ENABLED=false
}
# engine_counters PORT: prompt tokens evaluated and decode calls so far.
engine_counters() {
  curl -fsS "http://127.0.0.1:$1/metrics" | awk '
    /^llamacpp:prompt_tokens_total/ {p=$2} /^llamacpp:n_decode_total/ {d=$2}
    END {printf "prompt_tokens_total=%d n_decode_total=%d\n", p, d}'
}

ON_LS=$(free_port)
OFF_LS=$(free_port)
start_engine on "$ON_LS"
start_engine off "$OFF_LS"
wait_health "http://127.0.0.1:$ON_LS" 300
wait_health "http://127.0.0.1:$OFF_LS" 300
ON_GW=$(free_port)
gateway "$ON_GW" "$ON_LS" true
OFF_GW=$(free_port)
gateway "$OFF_GW" "$OFF_LS" false
for p in "$ON_LS" "$OFF_LS"; do echo "engine $p before: $(engine_counters "$p")"; done | tee "$OUT/affinity-counters.txt"

bench() { # OUTFILE CONCURRENCY URL [--compare URL2]
  local out=$1 c=$2
  shift 2
  timeout --signal=INT "$TIME_LIMIT" "$RAYGW" bench --url "$@" --model perf --workload "$WORKLOAD" \
    --repeat "$REPEAT" --concurrency "$c" --timeout 30m --no-progress --keep-output 64 --out "$out" || echo "raygw bench exited with status $?" >&2
}
rm -f "$OUT"/affinity.json "$OUT"/affinity-on.json "$OUT"/affinity-off.json
echo "== a = affinity on (raygw :$ON_GW), b = affinity off (raygw :$OFF_GW); $SLOTS slots, $MODE, concurrency $CONCURRENCY"
case "$MODE" in
compare) bench "$OUT/affinity.json" "$CONCURRENCY" "http://127.0.0.1:$ON_GW" --compare "http://127.0.0.1:$OFF_GW" ;;
parallel)
  bench "$OUT/affinity-on.json" $((CONCURRENCY / 2)) "http://127.0.0.1:$ON_GW" >"$OUT/affinity-on.txt" 2>&1 &
  b1=$!
  bench "$OUT/affinity-off.json" $((CONCURRENCY / 2)) "http://127.0.0.1:$OFF_GW" >"$OUT/affinity-off.txt" 2>&1 &
  b2=$!
  wait "$b1" "$b2" || true
  cat "$OUT/affinity-on.txt" "$OUT/affinity-off.txt"
  ;;
sequential)
  bench "$OUT/affinity-on.json" $((CONCURRENCY / 2)) "http://127.0.0.1:$ON_GW"
  bench "$OUT/affinity-off.json" $((CONCURRENCY / 2)) "http://127.0.0.1:$OFF_GW"
  ;;
*) echo "MODE must be compare, parallel or sequential" >&2; exit 2 ;;
esac
for p in "$ON_LS" "$OFF_LS"; do echo "engine $p after: $(engine_counters "$p")"; done | tee -a "$OUT/affinity-counters.txt"
for p in "$ON_LS" "$OFF_LS"; do curl -fsS "http://127.0.0.1:$p/slots" >"$OUT/affinity-slots-$p.json" || true; done

# Per target: TTFT p50/p95, queue p50, prompt tokens evaluated/reused, and
# how many requests reused more than half their prompt (a warm slot).
echo "== summary"
for f in "$OUT"/affinity.json "$OUT"/affinity-on.json "$OUT"/affinity-off.json; do
  [ -f "$f" ] || continue
  jq -r '.summaries[] as $s | [.rows[] | select(.target == $s.target and .status == 200)] as $r |
    "\($s.target) \($s.url) ok=\($s.ok)/\($s.requests) ttft_p50=\($s.ttft_ms.p50|round)ms ttft_p95=\($s.ttft_ms.p95|round)ms queue_p50=\($s.queue_ms.p50|round)ms e2e_p50=\($s.e2e_ms.p50|round)ms evaluated=\($s.prompt_tokens_evaluated) reused=\($s.prompt_tokens_reused) reuse=\($s.prompt_reuse_ratio*100|round)% warm=\([$r[] | select(.prompt_reused > .prompt_evaluated)] | length)/\($r|length) mean_in_flight=\(([$r[].e2e_ms] | add) / $s.wall_ms * 10 | round / 10) wall=\($s.wall_ms/1000|round)s" ' "$f"
  jq -r 'if .ratios then "ratios b/a: ttft_p50=\(.ratios.ttft_p50) ttft_p95=\(.ratios.ttft_p95)" else empty end' "$f"
done | tee "$OUT/affinity-summary.txt"
