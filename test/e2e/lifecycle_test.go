package e2e

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/raygw/raygw/internal/testenv"
)

// engineMetric reads one counter from llama-server's /metrics.
func engineMetric(t *testing.T, engineURL, name string) float64 {
	t.Helper()
	resp, err := http.Get(engineURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	t.Fatalf("metric %s not found", name)
	return 0
}

// waitIdle waits until no engine slot is processing.
func waitIdle(t *testing.T, engineURL string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for engineMetric(t, engineURL, "llamacpp:requests_processing") != 0 {
		if time.Now().After(deadline) {
			t.Fatal("engine slot still busy")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestClientDisconnectCancelsGeneration(t *testing.T) {
	env := testenv.GatewayEnv(t)
	env["RAY_MODEL_MAX_OUTPUT_TOKENS"] = "400"
	g := testenv.StartGateway(t, env)
	waitIdle(t, g.EngineURL)
	before := engineMetric(t, g.EngineURL, "llamacpp:n_decode_total")

	// A full run of this request decodes 400 tokens.
	body := `{"model":"stories","prompt":"Once upon a time","max_tokens":400,"ignore_eos":true,"stream":true}`
	resp, err := http.Post(g.URL+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "data: ") {
		t.Fatalf("first line %q err %v", line, err)
	}
	resp.Body.Close() // the client goes away after the first token

	waitIdle(t, g.EngineURL)
	decoded := engineMetric(t, g.EngineURL, "llamacpp:n_decode_total") - before
	if decoded >= 200 {
		t.Fatalf("engine decoded %v tokens after the client left; the request was not cancelled", decoded)
	}
	t.Logf("engine decoded %v of 400 tokens before the cancellation reached it", decoded)
}

func TestSIGTERMDrainsInFlightStream(t *testing.T) {
	env := testenv.GatewayEnv(t)
	env["RAY_MODEL_MAX_OUTPUT_TOKENS"] = "300"
	g := testenv.StartGateway(t, env)

	body := `{"model":"stories","prompt":"Once upon a time","max_tokens":300,"ignore_eos":true,"stream":true}`
	resp, err := http.Post(g.URL+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	if _, err := r.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	if err := g.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	events := readEvents(r)
	if len(events) == 0 || events[len(events)-1] != "[DONE]" {
		t.Fatalf("in-flight stream was cut: %d events, last %q", len(events), last(events))
	}
	select {
	case <-g.Exited():
	case <-time.After(20 * time.Second):
		t.Fatal("raygw did not exit after draining")
	}
	if _, err := http.Get(g.EngineURL + "/health"); err == nil {
		t.Fatal("llama-server still answers after raygw stopped")
	}
	if !strings.Contains(g.Log.String(), "draining") {
		t.Error("no drain logged")
	}
}

func TestKilledEngineIsRestarted(t *testing.T) {
	g := testenv.StartGateway(t, testenv.GatewayEnv(t))
	pid := enginePID(t, g)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The first restart is immediate; the gateway becomes ready again.
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(g.URL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 && enginePIDOrZero(g) != pid && enginePIDOrZero(g) != 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("engine was not restarted")
		}
		time.Sleep(50 * time.Millisecond)
	}
	status, _, _ := post(t, g.URL+"/v1/completions", "application/json", `{"model":"stories","prompt":"Once","max_tokens":4}`)
	if status != 200 {
		t.Fatalf("after restart: status %d", status)
	}
}

// enginePID finds the llama-server child from the gateway's log.
func enginePID(t *testing.T, g *testenv.Gateway) int {
	t.Helper()
	if pid := enginePIDOrZero(g); pid != 0 {
		return pid
	}
	t.Fatalf("no engine pid in log:\n%s", g.Log.String())
	return 0
}

func enginePIDOrZero(g *testenv.Gateway) int {
	pid := 0
	for _, line := range strings.Split(g.Log.String(), "\n") {
		if strings.Contains(line, `"state":"healthy"`) {
			if i := strings.Index(line, `"pid":`); i >= 0 {
				rest := line[i+6:]
				n, _ := strconv.Atoi(rest[:strings.IndexAny(rest, ",}")])
				pid = n
			}
		}
	}
	return pid
}

func last(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[len(s)-1]
}
