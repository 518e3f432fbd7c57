#!/usr/bin/env bash
# raygw resident memory: idle, then with CLIENTS concurrent streaming clients
# held open by a slow fake engine (TOKENS tokens, one every INTERVAL).
#   CLIENTS=1000 TOKENS=200 INTERVAL=25ms
source "$(dirname "$0")/lib.sh"
build_raygw
CLIENTS="${CLIENTS:-1000}"
TOKENS="${TOKENS:-200}"
INTERVAL="${INTERVAL:-25ms}"
UP_PORT=$(free_port)
GW_PORT=$(free_port)
start upstream "$OUT/upstream-rss.log" "$RAYGW" bench upstream --addr "127.0.0.1:$UP_PORT" --latency 1ms \
  --tokens "$TOKENS" --token-interval "$INTERVAL" --model perf
wait_health "http://127.0.0.1:$UP_PORT"
start_gateway "$GW_PORT" "http://127.0.0.1:$UP_PORT" perf \
  RAY_SCHEDULER_CONCURRENCY=$((CLIENTS * 2)) RAY_SCHEDULER_MAX_QUEUE=$((CLIENTS * 2)) \
  RAY_SCHEDULER_MAX_QUEUED_TOKENS=100000000 RAY_SCHEDULER_MAX_INFLIGHT_TOKENS=100000000 \
  RAY_GRACEFUL_DEGRADATION_ENABLED=false RAY_MODEL_MAX_OUTPUT_TOKENS=$((TOKENS * 2))
machine | tee "$OUT/rss-machine.txt"
sleep 2
echo "idle: RSS $(rss_kib "$GATEWAY_PID") KiB" | tee "$OUT/rss.txt"
echo '{"id":"stream","messages":[{"role":"user","content":"hello"}],"max_tokens":'"$TOKENS"'}' >"$OUT/rss.jsonl"
"$RAYGW" bench --url "http://127.0.0.1:$GW_PORT" --model perf --workload "$OUT/rss.jsonl" --repeat "$CLIENTS" \
  --concurrency "$CLIENTS" --no-progress --keep-output -1 --out "$OUT/rss-bench.json" >"$OUT/rss-bench.txt" 2>&1 &
BENCH=$!
PIDS+=("$BENCH")
peak=0
while kill -0 "$BENCH" 2>/dev/null; do
  r=$(rss_kib "$GATEWAY_PID")
  [ "$r" -gt "$peak" ] && peak=$r
  sleep 0.2
done
wait "$BENCH" || true
cat "$OUT/rss-bench.txt"
echo "with $CLIENTS streaming clients: peak sampled RSS $peak KiB, VmHWM $(hwm_kib "$GATEWAY_PID") KiB" | tee -a "$OUT/rss.txt"
sleep 2
echo "after: RSS $(rss_kib "$GATEWAY_PID") KiB" | tee -a "$OUT/rss.txt"
