#!/usr/bin/env bash
# Runs the whole test suite: unit tests, fuzz seed corpora, end-to-end tests
# against the real llama-server and the official OpenAI SDKs, and every
# benchmark once so they keep compiling.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/test-deps.sh
export RAYGW_LLAMA_SERVER=${RAYGW_LLAMA_SERVER:-$(bash scripts/install-llama-server.sh)}

echo "== go vet" >&2
go vet ./...
echo "== go test" >&2
go test -count=1 -timeout 30m ./...
echo "== benchmarks (once each)" >&2
out=$(mktemp)
if ! go test -count=1 -run '^$' -bench . -benchmem -benchtime=1x -timeout 15m ./... > "$out" 2>&1; then
  cat "$out"; exit 1
fi
echo "benchmarks run once: $(grep -c '^Benchmark' "$out" || true)" >&2
rm -f "$out"
echo "== all tests passed" >&2
