-- wrk script: one non-streaming chat completion per request.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"model":"perf","messages":[{"role":"user","content":"Write one short sentence about the sea."}],"max_tokens":16,"temperature":0}'
