#!/usr/bin/env bash
# Proxy capacity: wrk drives non-streaming chat completions at a fixed-latency
# fake engine (raygw bench upstream, 1 ms, 16 tokens) directly, then through
# raygw. The fake engine has no model, so the numbers are raygw's own cost.
#   DURATION=20s CONNECTIONS="16 64 256"
source "$(dirname "$0")/lib.sh"
build_raygw
command -v wrk >/dev/null || { echo "wrk is needed: apt-get install wrk" >&2; exit 1; }
DURATION="${DURATION:-20s}"
CONNECTIONS="${CONNECTIONS:-16 64 256}"
UP_PORT=$(free_port)
GW_PORT=$(free_port)
start upstream "$OUT/upstream-capacity.log" "$RAYGW" bench upstream --addr "127.0.0.1:$UP_PORT" --latency 1ms --tokens 16 --model perf
wait_health "http://127.0.0.1:$UP_PORT"
start_gateway "$GW_PORT" "http://127.0.0.1:$UP_PORT" perf \
  RAY_SCHEDULER_CONCURRENCY=1024 RAY_SCHEDULER_MAX_QUEUE=4096 RAY_SCHEDULER_MAX_QUEUED_TOKENS=100000000 \
  RAY_SCHEDULER_MAX_INFLIGHT_TOKENS=100000000 RAY_SCHEDULER_BATCH_WINDOW_MS=0 RAY_GRACEFUL_DEGRADATION_ENABLED=false \
  RAY_LLAMA_CPP_THREADS_HTTP="${THREADS_HTTP:-2}"
machine | tee "$OUT/capacity-machine.txt"
for c in $CONNECTIONS; do
  for target in upstream raygw; do
    port=$UP_PORT
    [ "$target" = raygw ] && port=$GW_PORT
    echo "== $target, $c connections, $DURATION"
    before=$(cpu_ticks "$GATEWAY_PID")
    wrk -t2 -c"$c" -d"$DURATION" --latency -s "$REPO/scripts/perf/chat.lua" "http://127.0.0.1:$port/v1/chat/completions" \
      | tee "$OUT/capacity-$target-c$c.txt"
    if [ "$target" = raygw ]; then
      # raygw's own CPU per request (user + system), the figure that does not
      # depend on how the 2 vCPUs are shared with wrk and the fake engine.
      ticks=$(($(cpu_ticks "$GATEWAY_PID") - before))
      reqs=$(awk '/requests in/ {print $1}' "$OUT/capacity-$target-c$c.txt")
      awk -v t="$ticks" -v n="$reqs" -v hz="$(getconf CLK_TCK)" 'BEGIN {
        us = t / hz * 1e6 / n; printf "raygw CPU: %.1f us per request (%.0f requests per CPU-second)\n", us, 1e6 / us }'
    fi
  done
done
echo "raygw RSS after the runs: $(rss_kib "$GATEWAY_PID") KiB (peak $(hwm_kib "$GATEWAY_PID") KiB)"
