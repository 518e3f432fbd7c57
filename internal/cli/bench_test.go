package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/raygw/raygw/internal/bench/report"
	"github.com/raygw/raygw/internal/testenv"
)

func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := NewRoot()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String() + errb.String(), err
}

func TestBenchCommandAgainstLlamaServer(t *testing.T) {
	eng := testenv.StartLlamaServer(t)
	dir := t.TempDir()
	wl := filepath.Join(dir, "w.jsonl")
	os.WriteFile(wl, []byte(`{"id":"a","messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":6,"expect_regex":"\\S"}
{"id":"b","prompt":"Lily went to the park","max_tokens":6,"arrival_ms":3}
`), 0o644)

	t.Run("compare", func(t *testing.T) {
		out := filepath.Join(dir, "r.json")
		text, err := runCLI(t, "bench", "--url", eng.URL, "--compare", eng.URL, "--model", "m", "--workload", wl,
			"--repeat", "2", "--concurrency", "2", "--out", out, "--no-progress")
		if err != nil {
			t.Fatalf("%v\n%s", err, text)
		}
		rep, err := report.Read(out)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Rows) != 8 || len(rep.Summaries) != 2 || rep.Summaries[1].OK != 4 {
			t.Fatalf("rows=%d summaries=%+v", len(rep.Rows), rep.Summaries)
		}
		if _, ok := rep.Ratios["e2e_p50"]; !ok || !strings.Contains(text, "ratios b/a:") {
			t.Errorf("no ratios printed:\n%s", text)
		}
		if _, err := os.Stat(filepath.Join(dir, "r.svg")); err != nil {
			t.Errorf("chart not written: %v", err)
		}
	})
	t.Run("arrivals", func(t *testing.T) {
		text, err := runCLI(t, "bench", "--url", eng.URL, "--model", "m", "--workload", wl, "--arrivals",
			"--out", "", "--no-progress")
		if err != nil || !strings.Contains(text, "reused") {
			t.Fatalf("%v\n%s", err, text)
		}
	})
	t.Run("assert passes", func(t *testing.T) {
		th := filepath.Join(dir, "lenient.json")
		os.WriteFile(th, []byte(`{"profile":"test","workload":"email-1b.jsonl","error_rate_max":0,"ttft_p95_ms_max":60000}`), 0o644)
		text, err := runCLI(t, "bench", "assert", "--thresholds", th, "--workload", wl, "--url", eng.URL, "--model", "m", "--no-progress")
		if err != nil || !strings.Contains(text, "all thresholds met") {
			t.Fatalf("%v\n%s", err, text)
		}
	})
	t.Run("assert fails on the starter workload", func(t *testing.T) {
		// The story model cannot write emails: the 1b quality gate must fail.
		text, err := runCLI(t, "--profile", "1b", "bench", "assert", "--url", eng.URL, "--model", "m", "--no-progress")
		var ee *ExitError
		if !errors.As(err, &ee) || ee.Code != 3 || !errors.Is(err, report.ErrThresholdMissed) {
			t.Fatalf("err = %v, want exit 3\n%s", err, text)
		}
		if !strings.Contains(err.Error(), "quality_pass_rate = ") || !strings.Contains(err.Error(), "below the minimum 0.75") {
			t.Errorf("message does not name metric, threshold and value: %v", err)
		}
	})
}

func TestBenchCommandErrors(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"rate and arrivals", []string{"bench", "--url", "http://127.0.0.1:1", "--model", "m", "--rate", "2", "--arrivals"}, "mutually exclusive"},
		{"bad workload", []string{"bench", "--url", "http://127.0.0.1:1", "--model", "m", "--workload", "/nonexistent.jsonl"}, "nonexistent"},
		{"unknown profile", []string{"--profile", "9b", "bench", "assert", "--url", "http://127.0.0.1:1", "--model", "m"}, "9b"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := runCLI(t, c.args...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want one mentioning %q", err, c.want)
			}
		})
	}
}
