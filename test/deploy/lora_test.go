package deploy_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raygw/raygw/internal/ggufsynth"
	"github.com/raygw/raygw/internal/testenv"
)

// loraPrompt is the short prompt of the adapter checks; loraLong and
// loraOther are two long prompts (over 100 tokens) for the prompt-cache
// check, long enough for llama-server's RAM prompt cache to keep them.
var (
	loraPrompt = "Once upon a time"
	loraLong   = strings.Repeat("Once upon a time there was a little girl named Lily. ", 8)
	loraOther  = strings.Repeat("The big dog ran to the park and played with a ball. ", 8)
)

// TestLoRAAdapterPerRequest deploys the test model with two synthetic LoRA
// adapters (seeds 1 and 2) on one replica with one slot, and checks through
// /d/{name}/v1/completions, greedy, against a reference llama-server that
// loads the same adapters and is sent explicit scales with no prompt cache:
// no adapter is the base model, "model:one" and lora_name "one" are adapter
// one, "two" is adapter two, an unknown adapter is 404, and no adapter leaks
// into a later request on the same slot, directly or through the prompt cache.
func TestLoRAAdapterPerRequest(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	var modules []map[string]any
	for seed, name := range []string{"one", "two"} {
		path := filepath.Join(dir, name+".gguf")
		if _, err := ggufsynth.LoRA(testenv.Model(t), path, ggufsynth.LoRAOptions{Seed: uint64(seed + 1)}); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
		modules = append(modules, map[string]any{"name": name, "path": path})
	}
	ref := loraReference(t, paths)
	if ref.one == ref.base || ref.two == ref.base || ref.two == ref.one {
		t.Fatalf("reference outputs are not distinct: base %q one %q two %q", ref.base, ref.one, ref.two)
	}

	p := startPlane(t, t.TempDir())
	s := spec(t, "tuned", 1)
	// One slot: every request runs on the same slot, so an adapter leaking
	// into a later request through the slot's KV would show.
	s["engine_config"] = map[string]any{"ctx_size": 512, "parallel": 1, "lora_modules": modules}
	p.create(s)
	p.waitFor("running", 60*time.Second, runningWith(1), "tuned")
	url := p.Srv.URL + "/d/tuned/v1/completions"
	const model = "tuned-model"
	ask := func(fields map[string]any) string { return loraComplete(t, url, loraPrompt, fields) }

	t.Run("adapter selection", func(t *testing.T) {
		// In this order, on the one slot: the last two show that no
		// adapter stays applied after adapter requests.
		steps := []struct {
			name   string
			fields map[string]any
			want   string
		}{
			{"base", map[string]any{"model": model}, ref.base},
			{"model:one", map[string]any{"model": model + ":one"}, ref.one},
			{"lora_name one", map[string]any{"model": model, "lora_name": "one"}, ref.one},
			{"model:two", map[string]any{"model": model + ":two"}, ref.two},
			{"lora_name two", map[string]any{"model": model, "lora_name": "two"}, ref.two},
			{"base again", map[string]any{"model": model}, ref.base},
			{"empty lora_name", map[string]any{"model": model, "lora_name": ""}, ref.base},
		}
		for _, st := range steps {
			got := ask(st.fields)
			t.Logf("%-15s %q", st.name, got)
			if got != st.want {
				t.Errorf("%s: got %q, want %q", st.name, got, st.want)
			}
		}
	})

	t.Run("unknown adapter", func(t *testing.T) {
		for _, f := range []map[string]any{{"model": model + ":three"}, {"model": model, "lora_name": "three"}} {
			code, body := loraPost(t, url, loraPrompt, f)
			if code != http.StatusNotFound || !strings.Contains(body, "adapter_not_found") {
				t.Errorf("%v: %d %s", f, code, body)
			}
		}
	})

	// A prompt read without an adapter, another prompt with adapter one,
	// then the first prompt with adapter one: the answer must be adapter
	// one's, not decoded on KV restored from the prompt cache that was
	// computed without it.
	t.Run("prompt cache keeps adapters apart", func(t *testing.T) {
		loraComplete(t, url, loraLong, map[string]any{"model": model})
		loraComplete(t, url, loraOther, map[string]any{"model": model + ":one"})
		if got := loraComplete(t, url, loraLong, map[string]any{"model": model + ":one"}); got != ref.longOne {
			t.Errorf("long prompt with adapter one after it was cached without: %q, want %q", got, ref.longOne)
		}
	})
}

// loraRef holds the reference engine's greedy outputs.
type loraRef struct{ base, one, two, longOne string }

// loraReference starts a llama-server with the adapters and no RAM prompt
// cache and asks it with explicit scales and cache_prompt false.
func loraReference(t *testing.T, paths []string) loraRef {
	t.Helper()
	eng := testenv.StartLlamaServer(t, "--lora", paths[0], "--lora", paths[1], "--cache-ram", "0")
	url := eng.URL + "/v1/completions"
	scales := func(a, b float64) map[string]any {
		return map[string]any{"cache_prompt": false, "lora": []map[string]any{{"id": 0, "scale": a}, {"id": 1, "scale": b}}}
	}
	return loraRef{
		base:    loraComplete(t, url, loraPrompt, scales(0, 0)),
		one:     loraComplete(t, url, loraPrompt, scales(1, 0)),
		two:     loraComplete(t, url, loraPrompt, scales(0, 1)),
		longOne: loraComplete(t, url, loraLong, scales(1, 0)),
	}
}

// loraComplete sends a greedy completion of prompt with fields added and
// returns its text.
func loraComplete(t *testing.T, url, prompt string, fields map[string]any) string {
	t.Helper()
	code, body := loraPost(t, url, prompt, fields)
	var out struct {
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
	}
	if code != http.StatusOK || json.Unmarshal([]byte(body), &out) != nil || len(out.Choices) != 1 {
		t.Fatalf("completion %v: %d %s", fields, code, body)
	}
	return out.Choices[0].Text
}

func loraPost(t *testing.T, url, prompt string, fields map[string]any) (int, string) {
	t.Helper()
	req := map[string]any{"prompt": prompt, "max_tokens": 24, "temperature": 0, "seed": 42}
	for k, v := range fields {
		req[k] = v
	}
	b, _ := json.Marshal(req)
	return call(t, http.MethodPost, url, "", string(b))
}
