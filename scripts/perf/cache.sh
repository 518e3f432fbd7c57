#!/usr/bin/env bash
# Response cache and in-flight dedupe at work, on one llama-server engine
# (2 slots, a synthetic 1B-class model):
#  1. bench/workloads/cache-faq.jsonl at concurrency 1 through raygw with the
#     response cache on: hit ratio (raygw_cache_requests_total) and the latency
#     of a hit vs a miss (first sight of a question = miss, later = hit).
#  2. bench/workloads/cache-burst.jsonl replayed BURST times at concurrency
#     BURST, with the cache off: once with in-flight dedupe on, once off.
#     Followers (raygw_dedupe_joins_total, X-Ray-Dedupe) vs engine runs
#     (llama-server tokens_predicted_total / max_tokens).
#
#   SHAPE=qwen2.5-0.5b QUANT=q4_k_m  synthetic model in $SCRATCH (deleted at exit); MODEL=file.gguf to reuse one
#   THREADS=2 SLOTS=2 CTX=4096 BURST=16 TIME_LIMIT=600 (seconds per bench run)
#   THREADS_HTTP=8   engine --threads-http, also told to raygw (it opens at most THREADS_HTTP-1 engine connections)
source "$(dirname "$0")/lib.sh"
trap 'echo "$0: failed at line $LINENO" >&2' ERR
build_raygw
SHAPE="${SHAPE:-qwen2.5-0.5b}"
QUANT="${QUANT:-q4_k_m}"
THREADS="${THREADS:-2}"
SLOTS="${SLOTS:-2}"
CTX="${CTX:-4096}"
THREADS_HTTP="${THREADS_HTTP:-8}"
BURST="${BURST:-16}"
TIME_LIMIT="${TIME_LIMIT:-600}"
SCRATCH="${SCRATCH:-/dev/shm}"
FAQ="$REPO/bench/workloads/cache-faq.jsonl"
BURSTW="$REPO/bench/workloads/cache-burst.jsonl"
ENGINE="$(engine_bin)"
if [ -z "${MODEL:-}" ]; then
  MODEL="$SCRATCH/raygw-perf-$SHAPE-$QUANT.gguf"
  trap 'cleanup; rm -f "$MODEL"' EXIT
  [ -f "$MODEL" ] || "$RAYGW" model synth --shape "$SHAPE" --quant "$QUANT" -o "$MODEL" --tmp-dir "$SCRATCH" \
    --quantize-binary "$(dirname "$ENGINE")/llama-quantize"
fi
trap 'exit 130' INT TERM # the EXIT trap stops what was started here
machine | tee "$OUT/cache-machine.txt"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/cache-machine.txt"

LS=$(free_port)
start llama-server "$OUT/llama-server-cache.log" "$ENGINE" --model "$MODEL" --host 127.0.0.1 --port "$LS" \
  --ctx-size "$CTX" --parallel "$SLOTS" --threads "$THREADS" --threads-batch "$THREADS" --threads-http "$THREADS_HTTP" --metrics --slots --no-webui
wait_health "http://127.0.0.1:$LS" 300
# A throwaway admin key of this run, for raygw's /metrics.
ADMIN_KEY="perf-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
# gateway PORT CACHE DEDUPE: raygw in front of the engine (the cache sizes are the 1b profile's).
gateway() {
  start_gateway "$1" "http://127.0.0.1:$LS" perf RAY_CACHE_ENABLED="$2" RAY_SCHEDULER_DEDUPE_INFLIGHT="$3" \
    RAY_ADMIN_API_KEYS="$ADMIN_KEY" \
    RAY_CACHE_MAX_ENTRIES=256 RAY_CACHE_MAX_BYTES=2097152 RAY_CACHE_TTL_MS=600000 \
    RAY_SCHEDULER_CONCURRENCY="$SLOTS" RAY_LLAMA_CPP_PARALLEL="$SLOTS" RAY_LLAMA_CPP_THREADS_HTTP="$THREADS_HTTP" \
    RAY_SCHEDULER_MAX_QUEUE=256 \
    RAY_SCHEDULER_MAX_QUEUED_TOKENS=100000000 RAY_SCHEDULER_MAX_INFLIGHT_TOKENS=100000000 \
    RAY_SCHEDULER_REQUEST_TIMEOUT_MS=600000 RAY_MODEL_TIMEOUT_MS=600000 RAY_GRACEFUL_DEGRADATION_ENABLED=false
}
# metric URL NAME [LABEL]: value of one Prometheus sample (0 when absent).
metric() {
  curl -fsS -H "Authorization: Bearer $ADMIN_KEY" "$1/metrics" | awk -v n="$2" -v l="${3:-}" '
    index($0, n) == 1 && (l == "" || index($0, l)) { v = $NF } END { printf "%d\n", v + 0 }'
}
bench() { # OUT URL WORKLOAD extra-flags...
  local out=$1 url=$2 w=$3
  shift 3
  timeout --signal=INT "$TIME_LIMIT" "$RAYGW" bench --url "$url" --model perf --workload "$w" --timeout 10m \
    --no-progress --keep-output 64 --out "$out" "$@" || echo "raygw bench exited with status $?" >&2
}
ENG="http://127.0.0.1:$LS"

echo "== 1. response cache: $(grep -vc '^#' "$FAQ") requests, concurrency 1"
GW=$(free_port)
gateway "$GW" true false
G="http://127.0.0.1:$GW"
p0=$(metric "$ENG" llamacpp:tokens_predicted_total)
bench "$OUT/cache-faq.json" "$G" "$FAQ" --concurrency 1
p1=$(metric "$ENG" llamacpp:tokens_predicted_total)
hits=$(metric "$G" raygw_cache_requests_total 'result="hit"')
misses=$(metric "$G" raygw_cache_requests_total 'result="miss"')
# The X-Ray-Cache header of one more request of the workload (a hit by now).
# raygw bench sends stream_options.include_usage, which is part of the cache key (it changes the stream).
first=$(grep -v '^#' "$FAQ" | head -1 |
  jq -c '{model: "perf", messages, max_tokens, metadata, stream: true, stream_options: {include_usage: true}} + .params')
hdr=$(curl -sS -o /dev/null -D - -H 'Content-Type: application/json' -d "$first" "$G/v1/chat/completions" |
  tr -d '\r' | grep -i '^x-ray-cache:' || echo "x-ray-cache: (none)")
{
  echo "gateway cache lookups: hit=$hits miss=$misses hit_ratio=$(awk -v h="$hits" -v m="$misses" 'BEGIN { printf "%.2f", h / (h + m) }')"
  echo "engine tokens predicted: $((p1 - p0)) (= $(((p1 - p0) / 24)) engine runs of 24 tokens)"
  echo "replayed first line: $hdr"
  # Rows in run order; the first sight of faq-NN is a miss, the rest hits, open-* are never cacheable.
  jq -r '.rows | sort_by(.start_ms) | reduce .[] as $r ({seen: {}, out: []};
      ($r.id | capture("^(?<k>faq-[0-9]+)-").k // null) as $k |
      (if $k == null then "uncacheable" elif .seen[$k] then "hit" else "miss" end) as $c |
      .out += [{c: $c, ttft: $r.ttft_ms, e2e: $r.e2e_ms}] | if $k then .seen[$k] = true else . end) | .out |
    group_by(.c)[] | (map(.ttft) | sort) as $t | (map(.e2e) | sort) as $e |
    "\(.[0].c): n=\(length) ttft_p50=\($t[(length - 1) / 2 | floor] * 10 | round / 10)ms ttft_max=\($t[-1] * 10 | round / 10)ms e2e_p50=\($e[(length - 1) / 2 | floor] * 10 | round / 10)ms e2e_max=\($e[-1] * 10 | round / 10)ms"' \
    "$OUT/cache-faq.json"
} | tee "$OUT/cache-summary.txt"
kill "$GATEWAY_PID" && wait "$GATEWAY_PID" 2>/dev/null || true

for dd in true false; do
  echo "== 2. burst: $BURST identical requests at once, cache off, dedupe $dd" | tee -a "$OUT/cache-summary.txt"
  GW=$(free_port)
  gateway "$GW" false "$dd"
  G="http://127.0.0.1:$GW"
  p0=$(metric "$ENG" llamacpp:tokens_predicted_total)
  bench "$OUT/cache-burst-dedupe-$dd.json" "$G" "$BURSTW" --repeat "$BURST" --concurrency "$BURST"
  p1=$(metric "$ENG" llamacpp:tokens_predicted_total)
  {
    echo "gateway dedupe joins: leader=$(metric "$G" raygw_dedupe_joins_total 'role="leader"') follower=$(metric "$G" raygw_dedupe_joins_total 'role="follower"')"
    echo "engine tokens predicted: $((p1 - p0)) (= $(((p1 - p0) / 32)) engine runs of 32 tokens)"
    jq -r '.summaries[0] | "ok=\(.ok)/\(.requests) ttft_p50=\(.ttft_ms.p50|round)ms ttft_max=\(.ttft_ms.max|round)ms e2e_p50=\(.e2e_ms.p50|round)ms e2e_max=\(.e2e_ms.max|round)ms wall=\(.wall_ms|round)ms"' \
      "$OUT/cache-burst-dedupe-$dd.json"
  } | tee -a "$OUT/cache-summary.txt"
  if [ "$dd" = true ]; then # the headers of a small burst of 4 (curl), for the record
    body=$(grep -v '^#' "$BURSTW" | jq -c '{model: "perf", messages, max_tokens: 8, stream: false} + .params')
    curls=()
    for i in 1 2 3 4; do
      curl -sS --max-time 300 -o /dev/null -D "$OUT/burst-headers-$i.txt" -H 'Content-Type: application/json' \
        -d "$body" "$G/v1/chat/completions" &
      curls+=($!)
    done
    wait "${curls[@]}" || true
    echo "curl burst of 4: $(cat "$OUT"/burst-headers-*.txt | tr -d '\r' | grep -ci '^x-ray-dedupe: follower') with X-Ray-Dedupe: follower" |
      tee -a "$OUT/cache-summary.txt"
  fi
  kill "$GATEWAY_PID" && wait "$GATEWAY_PID" 2>/dev/null || true
done
