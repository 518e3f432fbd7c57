package bench

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/raygw/raygw/internal/bench/report"
	"github.com/raygw/raygw/internal/bench/upstream"
)

// BenchmarkAbsorb measures folding one stream event into a measurement.
func BenchmarkAbsorb(b *testing.B) {
	data := []byte(`{"choices":[{"finish_reason":null,"index":0,"delta":{"content":" budget"}}],"created":1795981464,"id":"chatcmpl-x","model":"m","object":"chat.completion.chunk"}`)
	c := &caller{opts: &Options{Now: time.Now}}
	var row report.Row
	b.ReportAllocs()
	for b.Loop() {
		var m measurement
		if err := c.absorb(data, &row, &m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRequest measures one streamed 16-token request through the
// fixed-latency upstream (no latency): the harness's own cost per request.
func BenchmarkRequest(b *testing.B) {
	srv := httptest.NewServer(upstream.New(upstream.Options{}))
	defer srv.Close()
	its, err := parseItems(`{"prompt":"x","max_tokens":16}`)
	if err != nil {
		b.Fatal(err)
	}
	o := Options{Targets: []Target{{URL: srv.URL}}, Items: its}
	if err := o.setDefaults(); err != nil {
		b.Fatal(err)
	}
	js, _ := o.jobs()
	c := &caller{opts: &o}
	b.ReportAllocs()
	for b.Loop() {
		if r := c.do(context.Background(), js[0]); !r.OK() || r.CompletionTokens != 16 {
			b.Fatalf("row %+v", r)
		}
	}
}
