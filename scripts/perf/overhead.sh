#!/usr/bin/env bash
# Added latency of raygw over direct llama-server: the same workload
# alternates request by request between llama-server (a) and raygw in front
# of it (b), at concurrency 1 and 16, streaming (TTFT) and non-streaming.
#   MODEL=path.gguf (default: the stories260K test model)  REPEAT=n (default 25)
source "$(dirname "$0")/lib.sh"
build_raygw
MODEL="${MODEL:-$REPO/../shared/models/stories260K.gguf}"
REPEAT="${REPEAT:-25}"
LS_PORT=$(free_port)
GW_PORT=$(free_port)
start llama-server "$OUT/llama-server-overhead.log" "$(engine_bin)" --model "$MODEL" --host 127.0.0.1 \
  --port "$LS_PORT" --ctx-size 4096 --parallel 16 --threads 1 --no-webui
wait_health "http://127.0.0.1:$LS_PORT"
start_gateway "$GW_PORT" "http://127.0.0.1:$LS_PORT" perf \
  RAY_SCHEDULER_CONCURRENCY=16 RAY_SCHEDULER_MAX_QUEUE=1024 RAY_SCHEDULER_MAX_QUEUED_TOKENS=10000000 \
  RAY_SCHEDULER_MAX_INFLIGHT_TOKENS=10000000 RAY_LLAMA_CPP_PARALLEL=16
cat >"$OUT/overhead.jsonl" <<'JSONL'
{"id":"chat-short","messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":16,"params":{"temperature":0}}
{"id":"chat-system","messages":[{"role":"system","content":"You tell short stories for children."},{"role":"user","content":"Lily found a red ball in the park."}],"max_tokens":16,"params":{"temperature":0}}
{"id":"text","prompt":"The little dog ran","max_tokens":16,"params":{"temperature":0}}
{"id":"chat-long","messages":[{"role":"user","content":"Tim and Sue went to the big park. They saw a tree, a bird and a dog. The dog was happy."}],"max_tokens":16,"params":{"temperature":0}}
JSONL
machine | tee "$OUT/overhead-machine.txt"
for c in 1 16; do
  for mode in stream no-stream; do
    flag=""
    [ "$mode" = no-stream ] && flag="--no-stream"
    echo "== concurrency $c, $mode (a = llama-server, b = raygw)"
    "$RAYGW" bench --url "http://127.0.0.1:$LS_PORT" --compare "http://127.0.0.1:$GW_PORT" --model perf \
      --workload "$OUT/overhead.jsonl" --repeat "$REPEAT" --concurrency "$c" $flag --no-progress \
      --out "$OUT/overhead-c$c-$mode.json"
  done
done
