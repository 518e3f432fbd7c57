package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/raygw/raygw/internal/testenv"
)

type apiError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

func post(t *testing.T, url, contentType, body string) (int, apiError, http.Header) {
	t.Helper()
	resp, err := http.Post(url, contentType, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var e apiError
	if resp.StatusCode != 200 {
		if err := json.Unmarshal(raw, &e); err != nil || e.Error.Message == "" {
			t.Fatalf("status %d: body is not an OpenAI error envelope: %s", resp.StatusCode, raw)
		}
	}
	return resp.StatusCode, e, resp.Header
}

func TestErrorMapping(t *testing.T) {
	env := testenv.GatewayEnv(t)
	env["RAY_REQUEST_BODY_LIMIT_BYTES"] = "4096"
	env["RAY_MODEL_MAX_OUTPUT_TOKENS"] = "64"
	g := testenv.StartGateway(t, env)
	chat := g.URL + "/v1/chat/completions"
	long := strings.Repeat("Once upon a time there was a little girl. ", 40) // ~400 tokens, under 4096 bytes

	cases := []struct {
		name, body, ctype string
		status            int
		want              string // substring of the message
	}{
		{"malformed JSON", `{"model":"stories","messages":[`, "application/json", 400, "malformed JSON"},
		{"wrong type names the field", `{"model":"stories","messages":[{"role":"user","content":"x"}],"max_tokens":"ten"}`, "application/json", 400, "max_tokens"},
		{"out of range", `{"model":"stories","messages":[{"role":"user","content":"x"}],"temperature":7}`, "application/json", 400, "temperature"},
		{"no messages", `{"model":"stories","messages":[]}`, "application/json", 400, "messages"},
		{"bad role", `{"model":"stories","messages":[{"role":"wizard","content":"x"}]}`, "application/json", 400, "role"},
		{"wrong content type", `{"model":"stories"}`, "text/plain", 415, "application/json"},
		{"unknown model", `{"model":"other","messages":[{"role":"user","content":"x"}]}`, "application/json", 404, `"stories"`},
		{"body over limit", `{"model":"stories","messages":[{"role":"user","content":"` + strings.Repeat("a", 5000) + `"}]}`, "application/json", 413, "4096"},
		{"prompt plus max_tokens over context", `{"model":"stories","max_tokens":64,"messages":[{"role":"user","content":"` + long + `"}]}`, "application/json", 413, "context window of 512"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, e, _ := post(t, chat, c.ctype, c.body)
			if status != c.status || !strings.Contains(e.Error.Message, c.want) {
				t.Fatalf("status %d message %q; want %d containing %q", status, e.Error.Message, c.status, c.want)
			}
		})
	}

	t.Run("max_tokens is capped", func(t *testing.T) {
		resp, err := http.Post(g.URL+"/v1/completions", "application/json",
			strings.NewReader(`{"model":"stories","prompt":"Once upon a time","max_tokens":500,"ignore_eos":true}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			Usage struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
			t.Fatalf("status %d err %v", resp.StatusCode, err)
		}
		if out.Usage.CompletionTokens != 64 {
			t.Fatalf("completion tokens = %d, want the cap 64", out.Usage.CompletionTokens)
		}
	})
}

func TestEngineDownIs503(t *testing.T) {
	env := testenv.GatewayEnv(t)
	env["RAY_ENGINE_MODE"] = "external"
	env["RAY_MODEL_BASE_URL"] = "http://127.0.0.1:" + strconv.Itoa(testenv.FreePort(t)) // nothing listens
	g := startUnready(t, env)
	status, e, h := post(t, g+"/v1/chat/completions", "application/json",
		`{"model":"stories","messages":[{"role":"user","content":"hi"}]}`)
	if status != 503 || h.Get("Retry-After") == "" || e.Error.Type != "server_error" {
		t.Fatalf("status %d retry-after %q error %+v", status, h.Get("Retry-After"), e.Error)
	}
	resp, err := http.Get(g + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Fatalf("/readyz = %d with the engine down", resp.StatusCode)
	}
}

func TestUpstreamTimeoutIs504(t *testing.T) {
	env := testenv.GatewayEnv(t)
	env["RAY_MODEL_TIMEOUT_MS"] = "1"
	g := testenv.StartGateway(t, env)
	for _, stream := range []bool{false, true} {
		body := `{"model":"stories","prompt":"Once upon a time","max_tokens":200,"ignore_eos":true,"stream":` + strconv.FormatBool(stream) + `}`
		status, e, _ := post(t, g.URL+"/v1/completions", "application/json", body)
		if status != 504 || e.Error.Code == nil || *e.Error.Code != "timeout" {
			t.Fatalf("stream=%v: status %d error %+v", stream, status, e.Error)
		}
	}
}

// startUnready starts a gateway whose engine is down and waits for /healthz.
func startUnready(t *testing.T, env map[string]string) string {
	t.Helper()
	g := testenv.StartGatewayAlive(t, env)
	return g.URL
}

// readEvents reads SSE data lines from r until [DONE] or EOF.
func readEvents(r io.Reader) []string {
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
			if d == "[DONE]" {
				break
			}
		}
	}
	return out
}
