package slots

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/raygw/raygw/internal/testenv"
)

// storyPrefix is a long shared scaffold (about 150 tokens with the test model).
var storyPrefix = strings.Repeat("Once upon a time there was a little girl named Lily. She loved to play in the park with her friends. ", 5)

type completionTimings struct {
	IDSlot  int `json:"id_slot"`
	Timings struct {
		CacheN  int `json:"cache_n"`
		PromptN int `json:"prompt_n"`
	} `json:"timings"`
}

func complete(t *testing.T, base, prompt string, slot int) completionTimings {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"prompt": prompt, "n_predict": 4, "temperature": 0,
		"cache_prompt": true, "id_slot": slot})
	resp, err := http.Post(base+"/completion", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out completionTimings
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
		t.Fatalf("completion: status %d, %v", resp.StatusCode, err)
	}
	if out.IDSlot != slot {
		t.Fatalf("engine ran slot %d, asked %d", out.IDSlot, slot)
	}
	return out
}

// TestEnginePromptReuseOnRememberedSlot proves against the real llama-server
// (--parallel 2) that the remembered slot reuses the shared prefix while the
// other slot evaluates it again.
func TestEnginePromptReuseOnRememberedSlot(t *testing.T) {
	e := testenv.StartLlamaServer(t)
	tr, err := New(Options{BaseURL: e.URL, PrefixEntries: 16})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	snap, err := tr.Snapshot(ctx)
	if err != nil || len(snap) != 2 {
		t.Fatalf("snapshot = %+v, %v", snap, err)
	}
	const key = 0xfeed
	first := tr.Pick(ctx, key)
	if first < 0 {
		t.Fatal("no free slot on an idle engine")
	}
	a := complete(t, e.URL, storyPrefix+"Then A", first)
	tr.Remember(first, key)

	again := tr.Pick(ctx, key)
	if again != first {
		t.Fatalf("Pick = %d, want the remembered slot %d", again, first)
	}
	b := complete(t, e.URL, storyPrefix+"Then B", again)
	other := complete(t, e.URL, storyPrefix+"Then C", 1-first)
	t.Logf("first run slot %d: cache_n=%d prompt_n=%d; remembered slot: cache_n=%d prompt_n=%d; other slot %d: cache_n=%d prompt_n=%d",
		first, a.Timings.CacheN, a.Timings.PromptN, b.Timings.CacheN, b.Timings.PromptN,
		1-first, other.Timings.CacheN, other.Timings.PromptN)
	total := b.Timings.CacheN + b.Timings.PromptN
	if total < 100 {
		t.Fatalf("prompt only %d tokens; the test needs a long prefix", total)
	}
	if b.Timings.CacheN*10 < total*8 {
		t.Fatalf("remembered slot reused %d of %d prompt tokens, want >= 80%%", b.Timings.CacheN, total)
	}
	if other.Timings.CacheN*10 > total {
		t.Fatalf("other slot reused %d of %d tokens, want a re-evaluation", other.Timings.CacheN, total)
	}
}
