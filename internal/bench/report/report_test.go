package report

import (
	"bytes"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/raygw/raygw/internal/bench/workload"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestNewDist(t *testing.T) {
	cases := []struct {
		name string
		in   []float64
		want Dist
	}{
		{"empty", nil, Dist{}},
		{"one", []float64{4}, Dist{N: 1, Min: 4, Mean: 4, P50: 4, P95: 4, P99: 4, Max: 4}},
		{"1..101", seq(101), Dist{N: 101, Min: 1, Mean: 51, P50: 51, P95: 96, P99: 100, Max: 101}},
		{"two", []float64{10, 0}, Dist{N: 2, Min: 0, Mean: 5, P50: 5, P95: 9.5, P99: 9.9, Max: 10}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := NewDist(c.in)
			if diff := cmp.Diff(c.want, got, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-9 })); diff != "" {
				t.Error(diff)
			}
		})
	}
}

func seq(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(n - i)
	}
	return out
}

func q(v float64) *float64 { return &v }

// fixture is a two-target report with every kind of row.
func fixture() *Report {
	pass := []workload.Result{{Check: "regex", Passed: true}}
	fail := []workload.Result{{Check: "contains", Passed: false, Reason: "no"}}
	rows := []Row{
		{Seq: 0, ID: "a1", Target: "a", Status: 200, StartMS: 0, TTFTMS: 10, E2EMS: 100, CompletionTokens: 10, TokensPerSecond: 100, HasTimings: true, PromptEvaluated: 30, PromptReused: 10, Checks: pass, QueueMS: q(2)},
		{Seq: 1, ID: "a1", Target: "b", Status: 200, StartMS: 100, TTFTMS: 12, E2EMS: 110, CompletionTokens: 10, TokensPerSecond: 90, HasTimings: true, PromptEvaluated: 5, PromptReused: 35, Checks: fail},
		{Seq: 2, ID: "a2", Target: "b", Status: 429, ErrorKind: "http", Error: "HTTP 429: slow down", StartMS: 210, E2EMS: 1},
		{Seq: 3, ID: "a2", Target: "a", Status: 200, StartMS: 211, TTFTMS: 20, E2EMS: 200, CompletionTokens: 20, TokensPerSecond: 110, Checks: fail, QueueMS: q(4)},
		{Seq: 4, ID: "a3", Target: "a", ErrorKind: "transport", Error: "refused", StartMS: 411, E2EMS: 1},
	}
	r := &Report{Tool: "raygw bench", StartedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Rows: rows,
		Config: Config{Workload: "fixture.jsonl", Schedule: "concurrency", Concurrency: 1, Repeat: 1}}
	r.Summaries = []Summary{Summarize("a", "http://a", rows), Summarize("b", "http://b", rows)}
	r.Ratios = CompareRatios(r.Summaries[0], r.Summaries[1])
	r.DeltasMS = CompareDeltas(r.Summaries[0], r.Summaries[1])
	return r
}

func TestSummarize(t *testing.T) {
	r := fixture()
	a, b := r.Summaries[0], r.Summaries[1]
	if a.Requests != 3 || a.OK != 2 || a.Errors != 1 || a.ErrorsByStatus["transport"] != 1 {
		t.Errorf("a counts: %+v", a)
	}
	if b.ErrorsByStatus["429"] != 1 || b.ErrorRate != 0.5 {
		t.Errorf("b errors: %+v", b.ErrorsByStatus)
	}
	if a.Quality != (Quality{Checked: 2, Passed: 1, PassRate: 0.5}) {
		t.Errorf("a quality: %+v", a.Quality)
	}
	if a.TimingsReported != 1 || a.PromptReused != 10 || a.ReuseRatio != 0.25 {
		t.Errorf("a reuse: %+v", a)
	}
	if a.QueueHeaderCount != 2 || a.QueueMS.P50 != 3 {
		t.Errorf("a queue: %+v", a.QueueMS)
	}
	if a.CompletionTokens != 30 || a.WallMS != 412 {
		t.Errorf("a tokens %d wall %v", a.CompletionTokens, a.WallMS)
	}
	if got := r.Ratios["ttft_p50"]; math.Abs(got-12.0/15) > 1e-9 {
		t.Errorf("ttft_p50 ratio = %v", got)
	}
}

func TestRoundTripAndOutputs(t *testing.T) {
	r := fixture()
	dir := t.TempDir()
	p := filepath.Join(dir, "r.json")
	if err := r.WriteJSON(p); err != nil {
		t.Fatal(err)
	}
	back, err := Read(p)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r, back); diff != "" {
		t.Errorf("round trip: %s", diff)
	}
	var table bytes.Buffer
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"errors a: transport=1", "errors b: 429=1", "ratios b/a:", "deltas b-a (ms): e2e_p50=-40.000", "10/40", "1/2"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	var svg bytes.Buffer
	if err := r.WriteSVG(&svg); err != nil {
		t.Fatal(err)
	}
	golden(t, "chart.svg", svg.Bytes())
	golden(t, "table.txt", table.Bytes())
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", name, diff)
	}
}

func TestThresholds(t *testing.T) {
	th, err := ParseThresholds([]byte(`{"profile":"p","workload":"w.jsonl","ttft_p95_ms_max":15,
		"completion_tokens_per_second_p50_min":200,"quality_pass_rate_min":0.5,"error_rate_max":0.1}`))
	if err != nil {
		t.Fatal(err)
	}
	if th.Concurrency != 1 || th.Repeat != 1 {
		t.Errorf("defaults: %+v", th)
	}
	s := fixture().Summaries[0]
	err = th.Assert(s)
	if !errors.Is(err, ErrThresholdMissed) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{"ttft_p95_ms = 19.5, above the maximum 15", "completion_tokens_per_second_p50 = 105, below the minimum 200",
		"error_rate = 0.3333, above the maximum 0.1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "quality") {
		t.Errorf("quality 0.5 meets the minimum 0.5: %v", err)
	}
	lenient, _ := ParseThresholds([]byte(`{"profile":"p","workload":"w.jsonl","ttft_p95_ms_max":1000}`))
	if err := lenient.Assert(s); err != nil {
		t.Errorf("lenient: %v", err)
	}
	if err := lenient.Assert(Summary{Requests: 3, Errors: 3}); err == nil {
		t.Error("a run with no successful request passed a TTFT limit")
	}
	for _, bad := range []string{`{"workload":"w"}`, `{"profile":"p"}`, `{"profile":"p","workload":"w","bogus":1}`, `{"profile":"p","workload":"w","repeat":-1}`} {
		if _, err := ParseThresholds([]byte(bad)); err == nil {
			t.Errorf("%s: want an error", bad)
		}
	}
}

func TestCheckedInThresholds(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "..", "bench", "thresholds", "*.json"))
	if len(files) < 2 {
		t.Fatalf("want a threshold file per profile, found %v", files)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, _ := os.ReadFile(f)
			th, err := ParseThresholds(b)
			if err != nil {
				t.Fatal(err)
			}
			if th.Profile+".json" != filepath.Base(f) {
				t.Errorf("profile %q in %s", th.Profile, f)
			}
			if th.TTFTP95MSMax == nil || th.TokensPerSecondP50Min == nil || th.QualityPassRateMin == nil || th.ErrorRateMax == nil {
				t.Errorf("a limit is missing: %+v", th)
			}
			for _, k := range []string{"ttft_p95_ms_max", "completion_tokens_per_second_p50_min", "quality_pass_rate_min", "error_rate_max"} {
				if th.Notes[k] == "" {
					t.Errorf("limit %s is not documented in notes", k)
				}
			}
		})
	}
}
