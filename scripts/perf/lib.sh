#!/usr/bin/env bash
# Shared helpers for the scripts under scripts/perf: build raygw, find the
# engine, start loopback servers and stop exactly the processes started here.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="${OUT:-/tmp/raygw-perf}"
RAYGW="${RAYGW:-$OUT/raygw}"
mkdir -p "$OUT"
PIDS=()

cleanup() {
  local p
  for p in "${PIDS[@]:-}"; do
    [ -n "$p" ] && kill "$p" 2>/dev/null || true
  done
  for p in "${PIDS[@]:-}"; do
    [ -n "$p" ] && wait "$p" 2>/dev/null || true
  done
}
trap cleanup EXIT INT TERM

build_raygw() {
  if [ "${SKIP_BUILD:-0}" != 1 ]; then
    (cd "$REPO" && go build -o "$RAYGW" ./cmd/raygw)
  fi
}

# engine_bin prints the llama-server path: $RAYGW_LLAMA_SERVER or the cached install.
engine_bin() {
  if [ -n "${RAYGW_LLAMA_SERVER:-}" ]; then echo "$RAYGW_LLAMA_SERVER"; return; fi
  bash "$REPO/scripts/install-llama-server.sh"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# wait_health URL [seconds] [path]: llama-server and the fake engine answer
# /health; raygw answers /readyz once its engine is reachable.
wait_health() {
  local url=$1 limit=${2:-120} path=${3:-/health} i
  for ((i = 0; i < limit * 10; i++)); do
    if curl -fsS -o /dev/null "$url$path" 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "timed out waiting for $url$path" >&2
  return 1
}

# start NAME LOG CMD...: run CMD in the background and remember its pid in LAST_PID.
start() {
  local name=$1 log=$2
  shift 2
  "$@" >"$log" 2>&1 &
  LAST_PID=$!
  PIDS+=("$LAST_PID")
  echo "started $name (pid $LAST_PID, log $log)" >&2
}

# start_gateway PORT UPSTREAM_URL MODEL [extra VAR=value...]: raygw serve in
# external mode with auth, rate limit, async queue, response cache and
# in-flight dedupe off, so every request takes the full proxy path.
start_gateway() {
  local port=$1 upstream=$2 model=$3
  shift 3
  start raygw "$OUT/raygw-serve-$port.log" env \
    RAY_AUTH_ENABLED=false RAY_RATE_LIMIT_ENABLED=false RAY_ASYNC_QUEUE_ENABLED=false \
    RAY_ENGINE_MODE=external RAY_MODEL_BASE_URL="$upstream" RAY_MODEL_ID="$model" RAY_MODEL_REF="$model" \
    RAY_PORT="$port" RAY_HOST=127.0.0.1 RAY_STATE_DIR="$OUT/state-$port" \
    RAY_CACHE_ENABLED=false RAY_SCHEDULER_DEDUPE_INFLIGHT=false RAY_ADAPTIVE_TUNING_ENABLED=false \
    RAY_LOG_LEVEL="${RAY_LOG_LEVEL:-warn}" "$@" "$RAYGW" serve
  GATEWAY_PID=$LAST_PID
  wait_health "http://127.0.0.1:$port" 60 /readyz
}

# rss_kib PID: resident set size in KiB.
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
# hwm_kib PID: peak resident set size in KiB.
hwm_kib() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status"; }

machine() {
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//') x $(nproc)"
  echo "memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
  echo "kernel: $(uname -r)"
  echo "go: $(go version | awk '{print $3}')"
  echo "raygw: $(cd "$REPO" && git rev-parse --short HEAD 2>/dev/null || echo unknown) (+ working tree)"
}

# cpu_ticks prints a process's user + system CPU time in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
