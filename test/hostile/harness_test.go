// Package hostile_test fires malformed, oversized, slow and sneaky requests
// at a real `raygw serve` in front of a real llama-server and checks that
// every one is refused with the exact 4xx status, that none hangs or causes
// a 5xx, and that no invalid request reaches the engine.
package hostile_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/raygw/raygw/internal/testenv"
)

const (
	apiKey      = "sk-hostile-0123456789abcdef0123"
	bodyLimit   = 48000 // RAY_REQUEST_BODY_LIMIT_BYTES of the 1b profile
	rateLimit   = 20    // RAY_RATE_LIMIT_MAX_REQUESTS for this battery
	caseTimeout = 20 * time.Second
)

// gateway is one running `raygw serve` with its managed llama-server.
type gateway struct {
	base, addr string
	engineURL  string
	cmd        *exec.Cmd
	log        *syncBuffer
	client     *http.Client
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// buildRaygw compiles ./cmd/raygw into dir.
func buildRaygw(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "raygw")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/raygw")
	cmd.Dir = testenv.RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/raygw: %v\n%s", err, out)
	}
	return bin
}

// startGateway runs `raygw serve` in managed mode and waits for /readyz.
func startGateway(t *testing.T) *gateway {
	t.Helper()
	dir := t.TempDir()
	bin := buildRaygw(t, dir)
	port, enginePort := testenv.FreePort(t), testenv.FreePort(t)
	settings := map[string]string{
		"RAY_ENGINE_MODE":              "managed",
		"RAY_LLAMA_CPP_BINARY_PATH":    testenv.LlamaServer(t),
		"RAY_LLAMA_CPP_MODEL_PATH":     testenv.Model(t),
		"RAY_LLAMA_CPP_PORT":           strconv.Itoa(enginePort),
		"RAY_PORT":                     strconv.Itoa(port),
		"RAY_HOST":                     "127.0.0.1",
		"RAY_LLAMA_CPP_CTX_SIZE":       "512",
		"RAY_LLAMA_CPP_PARALLEL":       "2",
		"RAY_LLAMA_CPP_THREADS":        "1",
		"RAY_LLAMA_CPP_THREADS_BATCH":  "1",
		"RAY_LLAMA_CPP_THREADS_HTTP":   "2",
		"RAY_MODEL_CONTEXT_WINDOW":     "512",
		"RAY_MODEL_ID":                 "stories",
		"RAY_API_KEYS":                 apiKey,
		"RAY_ASYNC_QUEUE_ENABLED":      "false",
		"RAY_STATE_DIR":                dir,
		"RAY_MODEL_WARM_ON_BOOT":       "false",
		"RAY_LLAMA_CPP_ENABLE_METRICS": "true",
		"RAY_REQUEST_BODY_LIMIT_BYTES": strconv.Itoa(bodyLimit),
		"RAY_AUTH_ENABLED":             "true",
		"RAY_RATE_LIMIT_ENABLED":       "true",
		"RAY_RATE_LIMIT_MAX_REQUESTS":  strconv.Itoa(rateLimit),
		"RAY_RATE_LIMIT_WINDOW_MS":     "600000",
		// The test client is a loopback peer, like Caddy: every case sends
		// its own X-Forwarded-For, so each gets its own rate-limit window.
		"RAY_RATE_LIMIT_KEY_STRATEGY":        "ip+api-key",
		"RAY_RATE_LIMIT_TRUST_PROXY_HEADERS": "true",
	}
	env := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RAY_") {
			env = append(env, kv)
		}
	}
	for k, v := range settings {
		env = append(env, k+"="+v)
	}
	g := &gateway{
		base:      "http://127.0.0.1:" + strconv.Itoa(port),
		addr:      "127.0.0.1:" + strconv.Itoa(port),
		engineURL: "http://127.0.0.1:" + strconv.Itoa(enginePort),
		log:       &syncBuffer{},
		client: &http.Client{Timeout: caseTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
	}
	g.cmd = exec.Command(bin, "serve")
	g.cmd.Env = env
	g.cmd.Stdout, g.cmd.Stderr = g.log, g.log
	g.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- g.cmd.Wait() }()
	t.Cleanup(func() { g.stop(t, exited) })
	if err := g.waitReady(90*time.Second, exited); err != nil {
		t.Fatalf("raygw serve did not become ready: %v\n%s", err, g.log.String())
	}
	return g
}

func (g *gateway) waitReady(timeout time.Duration, exited <-chan error) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("raygw exited: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
		resp, err := g.client.Get(g.base + "/readyz")
		if err != nil {
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
	}
	return fmt.Errorf("not ready after %v", timeout)
}

// stop sends SIGTERM (raygw drains and stops llama-server), then SIGKILL to
// the whole process group if it lingers.
func (g *gateway) stop(t *testing.T, exited <-chan error) {
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Errorf("raygw did not stop within 30s of SIGTERM")
		_ = syscall.Kill(-g.cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
	if t.Failed() {
		log := g.log.String()
		if len(log) > 16000 {
			log = log[len(log)-16000:]
		}
		t.Logf("raygw log tail:\n%s", log)
	}
}

// engineWork is the engine's cumulative work: prompt tokens, generated
// tokens and decode calls from llama-server's /metrics. An invalid request
// must leave it unchanged.
type engineWork struct{ prompt, predicted, decodes float64 }

func (g *gateway) engineWork(t *testing.T) engineWork {
	t.Helper()
	resp, err := g.client.Get(g.engineURL + "/metrics")
	if err != nil {
		t.Fatalf("engine /metrics: %v", err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("engine /metrics: %v", err)
	}
	val := func(name string) float64 {
		f, ok := fams[name]
		if !ok || len(f.GetMetric()) == 0 {
			t.Fatalf("engine /metrics has no %s", name)
		}
		m := f.GetMetric()[0]
		if c := m.GetCounter(); c != nil {
			return c.GetValue()
		}
		return m.GetGauge().GetValue()
	}
	return engineWork{val("llamacpp:prompt_tokens_total"), val("llamacpp:tokens_predicted_total"), val("llamacpp:n_decode_total")}
}

// response is what a case sees: status, headers and body, or the connection
// closing without an answer (status 0, closed true).
type response struct {
	status int
	header http.Header
	body   []byte
	closed bool
	err    error
}

// rawDo writes req to a fresh connection and reads one response.
func (g *gateway) rawDo(req string) response {
	conn, err := net.DialTimeout("tcp", g.addr, 5*time.Second)
	if err != nil {
		return response{err: err}
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(caseTimeout))
	if _, err := io.WriteString(conn, req); err != nil {
		return response{err: err}
	}
	return readResponse(conn)
}

func readResponse(conn net.Conn) response {
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			return response{err: fmt.Errorf("no answer within %v: %w", caseTimeout, err)}
		}
		return response{closed: true, err: err}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return response{status: resp.StatusCode, header: resp.Header, body: body}
}

// envelope decodes an OpenAI error body.
type envelope struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

func parseEnvelope(b []byte) (envelope, error) {
	var e envelope
	err := json.Unmarshal(b, &e)
	if err == nil && (e.Error.Message == "" || e.Error.Type == "") {
		err = fmt.Errorf("not an OpenAI error envelope: %s", b)
	}
	return e, err
}
