package hostile_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"unicode"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// hcase is one hostile request and what raygw must answer.
type hcase struct {
	name   string
	method string   // default POST
	path   string   // default /v1/chat/completions
	body   string   // sent with a matching Content-Length unless header sets one
	header []string // "Name: value" replaces a default header, "-Name" drops it
	raw    string   // a whole request instead; {AUTH} and {XFF} are filled in
	status int      // exact status expected
	plain  bool     // answered by net/http itself: no OpenAI envelope
	param  string   // error.param must name this JSON field (and no Go type)
	code   string   // error.code expected
	msg    string   // substring of error.message
	engine bool     // a valid request the engine may run
	rfc5xx bool     // the exact 5xx is what RFC 9112 prescribes and net/http sends
	check  func(t *testing.T, r response)
}

var xffSeq atomic.Int32

// nextXFF is a fresh client address, so every case has its own rate window.
func nextXFF() string {
	n := xffSeq.Add(1)
	return fmt.Sprintf("198.18.%d.%d", n/250, n%250+1)
}

// request renders c as raw HTTP/1.1 bytes.
func (c hcase) request() string {
	xff := nextXFF()
	if c.raw != "" {
		r := strings.ReplaceAll(c.raw, "{AUTH}", "Authorization: Bearer "+apiKey)
		return strings.ReplaceAll(r, "{XFF}", "X-Forwarded-For: "+xff)
	}
	method, path := c.method, c.path
	if method == "" {
		method = http.MethodPost
	}
	if path == "" {
		path = "/v1/chat/completions"
	}
	type hv struct{ name, value string }
	headers := []hv{{"Host", "127.0.0.1"}, {"Connection", "close"}, {"Authorization", "Bearer " + apiKey},
		{"X-Forwarded-For", xff}, {"Content-Type", "application/json"}, {"Content-Length", strconv.Itoa(len(c.body))}}
	for _, h := range c.header {
		if name, ok := strings.CutPrefix(h, "-"); ok {
			for i := range headers {
				if strings.EqualFold(headers[i].name, name) {
					headers[i].name = ""
				}
			}
			continue
		}
		name, value, _ := strings.Cut(h, ":")
		value = strings.TrimPrefix(value, " ")
		replaced := false
		for i := range headers {
			if strings.EqualFold(headers[i].name, name) && !replaced {
				headers[i].value, replaced = value, true
			}
		}
		if !replaced {
			headers = append(headers, hv{name, value})
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\n", method, path)
	for _, h := range headers {
		if h.name != "" {
			fmt.Fprintf(&b, "%s: %s\r\n", h.name, h.value)
		}
	}
	b.WriteString("\r\n")
	b.WriteString(c.body)
	return b.String()
}

// run sends c and checks the answer and that the engine did no work for it.
func (c hcase) run(t *testing.T, g *gateway) {
	t.Helper()
	before := g.engineWork(t)
	r := g.rawDo(c.request())
	if r.err != nil && !r.closed {
		t.Fatalf("no answer: %v", r.err)
	}
	if r.closed {
		t.Fatalf("connection closed without an answer: %v", r.err)
	}
	if r.status >= 500 && !c.rfc5xx {
		t.Errorf("5xx: %d %s", r.status, clip(r.body))
	}
	if r.status != c.status {
		t.Errorf("status %d, want %d; body %s", r.status, c.status, clip(r.body))
	}
	if r.status >= 400 && !c.plain && c.method != http.MethodHead {
		checkEnvelope(t, c, r)
	}
	if c.check != nil {
		c.check(t, r)
	}
	if after := g.engineWork(t); !c.engine && after != before {
		t.Errorf("the engine worked on an invalid request: %+v -> %+v", before, after)
	}
}

func checkEnvelope(t *testing.T, c hcase, r response) {
	t.Helper()
	env, err := parseEnvelope(r.body)
	if err != nil {
		t.Errorf("error body: %v", err)
		return
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("error Content-Type %q", ct)
	}
	if c.param != "" {
		p := ""
		if env.Error.Param != nil {
			p = *env.Error.Param
		}
		if !strings.Contains(p, c.param) || strings.IndexFunc(p, unicode.IsUpper) >= 0 {
			t.Errorf("error.param %q should name the JSON field %q (and no Go type)", p, c.param)
		}
		if !strings.Contains(env.Error.Message, c.param) && !strings.Contains(p, ".") {
			t.Errorf("error.message %q does not name %q", env.Error.Message, c.param)
		}
	}
	if c.code != "" && (env.Error.Code == nil || *env.Error.Code != c.code) {
		t.Errorf("error.code %v, want %q", env.Error.Code, c.code)
	}
	if c.msg != "" && !strings.Contains(env.Error.Message, c.msg) {
		t.Errorf("error.message %q does not contain %q", env.Error.Message, c.msg)
	}
	if r.status == http.StatusUnauthorized && !strings.HasPrefix(r.header.Get("WWW-Authenticate"), `Bearer realm="raygw"`) {
		t.Errorf("401 without a Bearer challenge: %v", r.header)
	}
}

func clip(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}

// TestHostile runs the whole battery against one gateway.
func TestHostile(t *testing.T) {
	if testing.Short() {
		t.Skip("starts raygw and llama-server")
	}
	g := startGateway(t)
	t.Run("control", func(t *testing.T) { controlCases(t, g) })
	if t.Failed() {
		t.Fatal("valid requests fail; the battery would prove nothing")
	}
	total := 0
	t.Run("all", func(t *testing.T) {
		t.Run("slowloris headers", func(t *testing.T) { t.Parallel(); slowHeaders(t, g) })
		t.Run("slow body", func(t *testing.T) { t.Parallel(); slowBody(t, g) })
		total += 2
		t.Run("battery", func(t *testing.T) {
			t.Parallel()
			for _, group := range caseGroups() {
				for _, c := range group.cases {
					total++
					t.Run(group.name+"/"+c.name, func(t *testing.T) { c.run(t, g) })
				}
			}
			for _, s := range streamCases() {
				total++
				t.Run("stream/"+s.name, func(t *testing.T) { s.run(t, g) })
			}
			total += rateLimitCases(t, g)
		})
	})
	t.Logf("hostile cases run: %d", total)
	if total < 100 {
		t.Fatalf("only %d hostile cases", total)
	}
}
