package tokenest

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/raygw/raygw/internal/config"
)

func TestFromConfig(t *testing.T) {
	cfg := &config.Config{}
	cfg.LlamaCpp.Host, cfg.LlamaCpp.Port = "127.0.0.1", 8081
	if e := FromConfig(cfg, nil); e.opts.BaseURL != "http://127.0.0.1:8081" || e.CharsPerToken() != DefaultCharsPerToken {
		t.Fatalf("opts = %+v", e.opts)
	}
}

func TestCount(t *testing.T) {
	e := New(Options{CharsPerToken: 4})
	cases := []struct {
		in   string
		want int
	}{{"", 0}, {"a", 1}, {"abcd", 1}, {"abcde", 2}, {"héllo wörld", 3}, {"日本語のテキスト", 2}}
	for _, tc := range cases {
		if got := e.Count(tc.in); got != tc.want {
			t.Errorf("Count(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestObserveMovesRatioWithinBounds(t *testing.T) {
	e := New(Options{CharsPerToken: 4})
	e.Observe(100, 10) // under 16 tokens: ignored
	if e.CharsPerToken() != 4 {
		t.Fatal("small sample moved the ratio")
	}
	for range 200 {
		e.Observe(3000, 1000) // ratio 3
	}
	if r := e.CharsPerToken(); r < 2.99 || r > 3.01 {
		t.Fatalf("ratio = %g, want about 3", r)
	}
	for range 200 {
		e.Observe(100000, 20) // absurd: clamped to 8
	}
	if r := e.CharsPerToken(); r > maxRatio {
		t.Fatalf("ratio = %g above the bound", r)
	}
}

func TestExactAndFallback(t *testing.T) {
	block := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("POST /tokenize", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"tokens":[1,2,3]}`))
	})
	mux.HandleFunc("POST /slow/tokenize", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("POST /bad/tokenize", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"nope":1}`)) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	defer close(block) // before srv.Close, which waits for the blocked handler
	ctx := context.Background()

	e := New(Options{BaseURL: srv.URL, CharsPerToken: 4})
	if n, exact := e.CountContext(ctx, "some text here"); n != 3 || !exact {
		t.Fatalf("CountContext = %d, %v", n, exact)
	}
	slow := New(Options{BaseURL: srv.URL + "/slow", Timeout: 20 * time.Millisecond, CharsPerToken: 4})
	if _, err := slow.Exact(ctx, "x"); !errors.Is(err, ErrTokenize) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slow engine: %v", err)
	}
	if n, exact := slow.CountContext(ctx, "some text here"); n != 4 || exact {
		t.Fatalf("fallback = %d, %v; want estimate 4", n, exact)
	}
	bad := New(Options{BaseURL: srv.URL + "/bad"})
	if _, err := bad.Exact(ctx, "x"); !errors.Is(err, ErrTokenize) {
		t.Fatalf("bad answer: %v", err)
	}
	if _, err := New(Options{}).Exact(ctx, "x"); !errors.Is(err, ErrTokenize) {
		t.Fatalf("no URL: %v", err)
	}
}

func BenchmarkCount(b *testing.B) {
	e := New(Options{})
	text := string(make([]byte, 2000))
	b.ReportAllocs()
	for b.Loop() {
		e.Count(text)
	}
}
