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
go test -count=1 -run '^$' -bench . -benchtime=1x -timeout 15m ./... > /tmp/raygw-bench-once.txt
grep -E '^(ok|FAIL|Benchmark)' /tmp/raygw-bench-once.txt | grep -c '^Benchmark' | xargs -I{} echo "benchmarks run: {}" >&2
grep -q '^FAIL' /tmp/raygw-bench-once.txt && { cat /tmp/raygw-bench-once.txt; exit 1; }
echo "== all tests passed" >&2
