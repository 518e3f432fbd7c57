package deploy

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/raygw/raygw/internal/engine/openaicompat"
)

// routedDeployment is a deployment with one healthy replica at url, its
// metrics on reg, and no owner loop: what the data path sees.
func routedDeployment(tb testing.TB, url string, reg prometheus.Registerer) *deployment {
	tb.Helper()
	tr := openaicompat.NewTransport()
	tb.Cleanup(tr.CloseIdleConnections)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	m := &Manager{opt: Options{Now: time.Now, Transport: tr, Logger: log}, log: log, deps: map[string]*deployment{}}
	pm, err := newPromMetrics(reg, m)
	if err != nil {
		tb.Fatal(err)
	}
	m.metrics = pm
	d := newDeployment(m, Spec{Name: "bench", ModelName: "m"}, 1, nil)
	d.pool.Upsert("r-1", url, true, 4)
	return d
}

func post(tb testing.TB, d *deployment, body string) (int, string) {
	resp, err := d.client.Post(context.Background(), "/v1/chat/completions", []byte(body))
	if err != nil {
		tb.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(b)
}

// TestRouteTransportMetrics checks the cached metric series count every
// request under the deployment's labels, per replica and code.
func TestRouteTransportMetrics(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = w.Write(b)
	}))
	defer up.Close()
	reg := prometheus.NewRegistry()
	d := routedDeployment(t, up.URL, reg)
	for i := 0; i < 3; i++ {
		if code, b := post(t, d, `{"n":1}`); code != 200 || b != `{"n":1}` {
			t.Fatalf("answer %d %q", code, b)
		}
	}
	want := `
# HELP raygw_deployment_requests_total Requests routed to a deployment's replicas, by replica and upstream status code.
# TYPE raygw_deployment_requests_total counter
raygw_deployment_requests_total{code="200",deployment="bench",replica="r-1"} 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "raygw_deployment_requests_total"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(d.m.metrics.e2e, "raygw_deployment_request_duration_seconds"); n != 1 {
		t.Fatalf("%d e2e series, want 1", n)
	}
	// The first answer byte was timed: one first-byte series.
	if got := testutil.CollectAndCount(d.m.metrics.ttft); got != 1 {
		t.Fatalf("%d ttft series", got)
	}
	var mt Metrics
	d.win.summary(&mt)
	if mt.Requests != 3 {
		t.Fatalf("window counted %d requests, want 3", mt.Requests)
	}
}

// BenchmarkRouteTransport measures one engine call through a deployment's
// routing transport (replica pick, retarget, metrics) against an
// in-process replica that answers at once.
func BenchmarkRouteTransport(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	defer up.Close()
	d := routedDeployment(b, up.URL, prometheus.NewRegistry())
	b.ReportAllocs()
	for b.Loop() {
		if code, _ := post(b, d, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`); code != 200 {
			b.Fatal(code)
		}
	}
}
