package server

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/raygw/raygw/internal/config"
	"github.com/raygw/raygw/internal/openai"
)

func TestStageMetrics(t *testing.T) {
	l, err := config.Load(config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := NewStages(l.Config, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	zero := 0.0
	req := &openai.ChatRequest{Sampling: openai.Sampling{Model: "m", Temperature: &zero},
		Messages: []openai.Message{{Role: "user", Content: openai.Content{Text: "hi"}}}}
	key, ok := st.Cache.ChatKey("t", req)
	if !ok {
		t.Fatal("deterministic request not cacheable")
	}
	st.Cache.Get(key) // a miss
	reg := prometheus.NewRegistry()
	reg.MustRegister(newStageCollector(st))
	want := `
# HELP raygw_cache_requests_total Response cache lookups by result (hit, miss).
# TYPE raygw_cache_requests_total counter
raygw_cache_requests_total{result="hit"} 0
raygw_cache_requests_total{result="miss"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "raygw_cache_requests_total"); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(reg, "raygw_scheduler_jobs", "raygw_dedupe_joins_total"); err != nil || n != 4 {
		t.Fatalf("scheduler and dedupe series: %d %v", n, err)
	}
}
