package bench

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/raygw/raygw/internal/bench/report"
	"github.com/raygw/raygw/internal/testenv"
)

// TestRunAgainstLlamaServer replays a small workload against the real engine
// and checks what the report says about it.
func TestRunAgainstLlamaServer(t *testing.T) {
	eng := testenv.StartLlamaServer(t)
	const jsonl = `{"id":"s1","messages":[{"role":"system","content":"Once upon a time there was a little girl named Lily."},{"role":"user","content":"She liked"}],"max_tokens":12,"params":{"temperature":0},"expect_regex":"\\S"}
{"id":"s2","messages":[{"role":"system","content":"Once upon a time there was a little girl named Lily."},{"role":"user","content":"One day"}],"max_tokens":12,"params":{"temperature":0},"expect_contains":"zzz-not-there"}
{"id":"p1","prompt":"Once upon a time","max_tokens":8,"params":{"temperature":0}}
`
	its := items(t, jsonl)
	rep, err := Run(context.Background(), Options{Targets: []Target{{URL: eng.URL, Model: "stories"}},
		Items: its, Repeat: 3, Concurrency: 1, WorkloadName: "engine-test"})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Summaries[0]
	if s.Requests != 9 || s.OK != 9 || s.Errors != 0 {
		t.Fatalf("summary: %+v\nrows: %+v\n%s", s, rep.Rows, eng.Log.String())
	}
	for _, r := range rep.Rows {
		if r.TTFTMS > r.E2EMS || r.E2EMS <= 0 {
			t.Errorf("%s: ttft %.3f > e2e %.3f", r.ID, r.TTFTMS, r.E2EMS)
		}
		if !r.HasTimings || r.CompletionTokens == 0 || r.PromptEvaluated+r.PromptReused == 0 {
			t.Errorf("%s: timings=%v completion=%d prompt=%d+%d", r.ID, r.HasTimings, r.CompletionTokens,
				r.PromptEvaluated, r.PromptReused)
		}
		if r.Output == "" {
			t.Errorf("%s: empty output", r.ID)
		}
	}
	if s.TimingsReported != 9 || s.PromptReused == 0 || s.ReuseRatio <= 0 {
		t.Errorf("prompt reuse not reported: timings=%d reused=%d ratio=%v", s.TimingsReported, s.PromptReused, s.ReuseRatio)
	}
	if s.Quality.Checked != 6 || s.Quality.Passed != 3 {
		t.Errorf("quality = %+v, want 3 of 6", s.Quality)
	}
	if s.TTFTMS.P50 > s.E2EMS.P99 || s.TokensPerSec.N == 0 {
		t.Errorf("distributions: ttft %+v e2e %+v tps %+v", s.TTFTMS, s.E2EMS, s.TokensPerSec)
	}

	dir := t.TempDir()
	out := filepath.Join(dir, "report.json")
	if err := rep.WriteJSON(out); err != nil {
		t.Fatal(err)
	}
	back, err := report.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Rows) != 9 || back.Summaries[0].PromptReused != s.PromptReused {
		t.Errorf("report did not round-trip: %d rows", len(back.Rows))
	}
	var svg bytes.Buffer
	if err := rep.WriteSVG(&svg); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(svg.String(), "<polyline") || !strings.Contains(svg.String(), "a TTFT (n=9)") {
		t.Errorf("chart lacks the series:\n%s", svg.String())
	}
	_ = os.Remove(out)
}
