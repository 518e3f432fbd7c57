package bench

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raygw/raygw/internal/bench/report"
	"github.com/raygw/raygw/internal/bench/upstream"
	"github.com/raygw/raygw/internal/bench/workload"
)

func items(t *testing.T, jsonl string) []workload.Item {
	t.Helper()
	its, err := workload.Parse(strings.NewReader(jsonl))
	if err != nil {
		t.Fatal(err)
	}
	return its
}

const fourLines = `{"id":"c1","messages":[{"role":"user","content":"hello there"}],"max_tokens":5,"expect_contains":"tok"}
{"id":"c2","messages":[{"role":"user","content":"again"}],"max_tokens":3,"expect_regex":"^nope$"}
{"id":"t1","prompt":"Once upon a time","max_tokens":4,"arrival_ms":5}
{"id":"t2","prompt":"The end","max_tokens":1,"arrival_ms":10}
`

// withQueueHeader adds X-Ray-Queue-Ms and fails every failEvery-th request with 503.
func withQueueHeader(h http.Handler, failEvery int64) http.Handler {
	var n atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if k := n.Add(1); failEvery > 0 && k%failEvery == 0 {
			http.Error(w, `{"error":{"message":"busy","type":"server_error"}}`, http.StatusServiceUnavailable)
			return
		}
		w.Header().Set(QueueHeader, "7.5")
		h.ServeHTTP(w, r)
	})
}

func TestRunSchedules(t *testing.T) {
	srv := httptest.NewServer(withQueueHeader(upstream.New(upstream.Options{}), 0))
	defer srv.Close()
	cases := []struct {
		name string
		opts Options
	}{
		{"closed", Options{Schedule: Closed, Concurrency: 3, Repeat: 2}},
		{"rate", Options{Schedule: Rate, Rate: 500, Repeat: 2}},
		{"arrivals", Options{Schedule: Arrivals, Repeat: 2}},
		{"no stream", Options{Concurrency: 2, Repeat: 2, NoStream: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := c.opts
			o.Targets = []Target{{URL: srv.URL, Model: "m"}}
			o.Items = items(t, fourLines)
			var done atomic.Int64
			o.OnDone = func(report.Row) { done.Add(1) }
			rep, err := Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Rows) != 8 || done.Load() != 8 || Plan(o) != 8 {
				t.Fatalf("rows=%d done=%d plan=%d, want 8", len(rep.Rows), done.Load(), Plan(o))
			}
			s := rep.Summaries[0]
			if s.Requests != 8 || s.OK != 8 || s.Errors != 0 {
				t.Fatalf("summary %+v", s)
			}
			if s.CompletionTokens != 2*(5+3+4+1) {
				t.Errorf("completion tokens = %d, want 26", s.CompletionTokens)
			}
			if s.QueueHeaderCount != 8 || s.QueueMS.P50 != 7.5 {
				t.Errorf("queue: count=%d p50=%v", s.QueueHeaderCount, s.QueueMS.P50)
			}
			if s.Quality.Checked != 4 || s.Quality.Passed != 2 || s.Quality.PassRate != 0.5 {
				t.Errorf("quality = %+v", s.Quality)
			}
			for _, r := range rep.Rows {
				if o.NoStream && (r.TTFTMS != r.E2EMS || r.TokensPerSecond <= 0 || r.TokensPerSecond > float64(r.CompletionTokens)/(r.E2EMS/1000)*1.0001) {
					t.Errorf("row %s: non-streamed ttft %v e2e %v tok/s %v", r.ID, r.TTFTMS, r.E2EMS, r.TokensPerSecond)
				}
				if r.TTFTMS > r.E2EMS || r.TTFTMS <= 0 {
					t.Errorf("row %s: ttft %v e2e %v", r.ID, r.TTFTMS, r.E2EMS)
				}
				if !r.HasTimings || r.FinishReason != "length" {
					t.Errorf("row %s: timings=%v finish=%q", r.ID, r.HasTimings, r.FinishReason)
				}
			}
		})
	}
}

func TestRunCompareAlternates(t *testing.T) {
	a := httptest.NewServer(upstream.New(upstream.Options{Model: "a"}))
	defer a.Close()
	b := httptest.NewServer(withQueueHeader(upstream.New(upstream.Options{Model: "b"}), 3))
	defer b.Close()
	rep, err := Run(context.Background(), Options{
		Targets: []Target{{URL: a.URL}, {URL: b.URL}}, Items: items(t, fourLines), Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 8 {
		t.Fatalf("rows = %d", len(rep.Rows))
	}
	wantOrder := "a b b a a b b a"
	var got []string
	for _, r := range rep.Rows {
		got = append(got, r.Target)
	}
	if strings.Join(got, " ") != wantOrder {
		t.Errorf("order = %v, want %s", got, wantOrder)
	}
	sa, sb := rep.Summaries[0], rep.Summaries[1]
	if sa.Requests != 4 || sb.Requests != 4 || sa.Errors != 0 {
		t.Errorf("a=%+v b=%+v", sa, sb)
	}
	if sb.Errors != 1 || sb.ErrorsByStatus["503"] != 1 || sb.ErrorRate != 0.25 {
		t.Errorf("b errors = %d %v rate %v", sb.Errors, sb.ErrorsByStatus, sb.ErrorRate)
	}
	if _, ok := rep.Ratios["ttft_p50"]; !ok {
		t.Errorf("ratios = %v", rep.Ratios)
	}
	for _, r := range rep.Rows {
		if r.Status == 503 && !strings.Contains(r.Error, "busy") {
			t.Errorf("error text = %q", r.Error)
		}
	}
}

func TestRunErrors(t *testing.T) {
	slow := httptest.NewServer(upstream.New(upstream.Options{Latency: 5 * time.Second}))
	defer slow.Close()
	cut := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n"))
	}))
	defer cut.Close()
	cases := []struct {
		name, url, kind string
		timeout         time.Duration
	}{
		{"timeout", slow.URL, "timeout", 50 * time.Millisecond},
		{"no done", cut.URL, "stream", time.Second},
		{"refused", "http://127.0.0.1:1", "transport", time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep, err := Run(context.Background(), Options{Targets: []Target{{URL: c.url}},
				Items: items(t, `{"prompt":"x","max_tokens":2}`), Timeout: c.timeout})
			if err != nil {
				t.Fatal(err)
			}
			s := rep.Summaries[0]
			if s.Errors != 1 || s.ErrorsByStatus[c.kind] != 1 {
				t.Errorf("errors = %v, want one %q", s.ErrorsByStatus, c.kind)
			}
		})
	}
}

func TestOptionsErrors(t *testing.T) {
	its := items(t, `{"prompt":"x"}`)
	cases := []Options{
		{Items: its},
		{Targets: []Target{{URL: "127.0.0.1:3000"}}, Items: its},
		{Targets: []Target{{URL: "http://x"}}},
		{Targets: []Target{{URL: "http://x"}}, Items: its, Schedule: Rate},
		{Targets: []Target{{URL: "http://x"}}, Items: its, Schedule: "poisson"},
	}
	for i, o := range cases {
		if _, err := Run(context.Background(), o); !errors.Is(err, ErrOptions) {
			t.Errorf("case %d: err = %v, want ErrOptions", i, err)
		}
	}
}

func TestRunCancelled(t *testing.T) {
	srv := httptest.NewServer(upstream.New(upstream.Options{Latency: 20 * time.Millisecond}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	rep, err := Run(ctx, Options{Targets: []Target{{URL: srv.URL}}, Items: items(t, `{"prompt":"x","max_tokens":1}`),
		Repeat: 50, OnDone: func(report.Row) {
			if n++; n == 2 {
				cancel()
			}
		}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if len(rep.Rows) >= 50 || len(rep.Rows) < 2 {
		t.Errorf("rows = %d, want a partial run", len(rep.Rows))
	}
}

func parseItems(jsonl string) ([]workload.Item, error) {
	return workload.Parse(strings.NewReader(jsonl))
}
