#!/usr/bin/env bash
# Fresh-machine quickstart: installs the engine, builds raygw, serves the small
# story model on 127.0.0.1:3000 and shows one completion. Ctrl-C stops it.
# Override RAYGW_QUICKSTART_MODEL to serve another GGUF.
set -euo pipefail
cd "$(dirname "$0")/.."

model=${RAYGW_QUICKSTART_MODEL:-$(cd .. && pwd)/shared/models/stories260K.gguf}
[ -f "$model" ] || { echo "quickstart: no model at $model (set RAYGW_QUICKSTART_MODEL)" >&2; exit 1; }
engine=$(bash scripts/install-llama-server.sh)
mkdir -p bin
go build -o bin/raygw ./cmd/raygw

state=$(mktemp -d)
key=${RAYGW_QUICKSTART_KEY:-quickstart-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')}
export RAY_ENGINE_MODE=managed RAY_HOST=127.0.0.1 RAY_PORT=${RAY_PORT:-3000} \
  RAY_LLAMA_CPP_BINARY_PATH="$engine" RAY_LLAMA_CPP_MODEL_PATH="$model" RAY_LLAMA_CPP_PORT=${RAY_LLAMA_CPP_PORT:-8081} \
  RAY_LLAMA_CPP_CTX_SIZE=1024 RAY_LLAMA_CPP_PARALLEL=2 RAY_MODEL_ID=stories RAY_MODEL_CONTEXT_WINDOW=2048 \
  RAY_API_KEYS="$key" RAY_STATE_DIR="$state" RAY_ASYNC_QUEUE_STORAGE_DIR="$state/async-queue"

bin/raygw serve &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid; rm -rf "$state"' EXIT INT TERM
for _ in $(seq 1 300); do
  curl -fsS "http://127.0.0.1:$RAY_PORT/readyz" >/dev/null 2>&1 && break
  kill -0 $pid 2>/dev/null || { echo "quickstart: raygw exited" >&2; exit 1; }
  sleep 0.2
done
echo
echo "raygw is serving on http://127.0.0.1:$RAY_PORT (API key: $key). A completion:"
curl -sS "http://127.0.0.1:$RAY_PORT/v1/chat/completions" -H "Authorization: Bearer $key" \
  -H 'Content-Type: application/json' \
  -d '{"model":"stories","messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":48}'
echo
echo "Press Ctrl-C to stop."
wait $pid
