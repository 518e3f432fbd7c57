package hostile_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// controlCases prove the engine answers valid requests and that its work
// counters move, so the "engine did nothing" checks mean something.
func controlCases(t *testing.T, g *gateway) {
	t.Run("chat", func(t *testing.T) {
		before := g.engineWork(t)
		r := g.rawDo(hcase{body: chatBody}.request())
		if r.status != 200 || !strings.Contains(string(r.body), `"chat.completion"`) {
			t.Fatalf("valid chat: %d %v %s", r.status, r.err, clip(r.body))
		}
		if r.header.Get("X-RateLimit-Limit") == "" {
			t.Errorf("no X-RateLimit-Limit on a limited route: %v", r.header)
		}
		if after := g.engineWork(t); after.predicted <= before.predicted {
			t.Fatalf("engine counters did not move for a valid request: %+v -> %+v", before, after)
		}
	})
	t.Run("completion stream", func(t *testing.T) {
		r := g.rawDo(hcase{path: "/v1/completions", body: compWith(`"max_tokens":3,"stream":true`)}.request())
		if r.status != 200 || !strings.HasSuffix(strings.TrimSpace(string(r.body)), "data: [DONE]") {
			t.Fatalf("valid stream: %d %v %s", r.status, r.err, clip(r.body))
		}
	})
}

// generator yields n bytes of a JSON-looking body without holding them.
type generator struct {
	n, sent int64
}

func (g *generator) Read(p []byte) (int, error) {
	if g.sent >= g.n {
		return 0, io.EOF
	}
	k := int64(len(p))
	if rest := g.n - g.sent; rest < k {
		k = rest
	}
	for i := range p[:k] {
		p[i] = 'a'
	}
	if g.sent == 0 && k > 0 {
		copy(p[:k], `{"model":"stories","prompt":"`)
	}
	atomic.AddInt64(&g.sent, k)
	return int(k), nil
}

// streamCase sends a 10 GB body that is generated on the fly and checks
// that raygw answers 413 after reading about the limit, not the body.
type streamCase struct {
	name    string
	chunked bool
}

func streamCases() []streamCase {
	return []streamCase{{"10 GB with Content-Length", false}, {"10 GB chunked", true}}
}

func (s streamCase) run(t *testing.T, g *gateway) {
	const total = 10 << 30
	before := g.engineWork(t)
	conn, err := net.DialTimeout("tcp", g.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(caseTimeout))
	head := "POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + apiKey + "\r\nX-Forwarded-For: " + nextXFF() +
		"\r\nContent-Type: application/json\r\n"
	if s.chunked {
		head += "Transfer-Encoding: chunked\r\n\r\n"
	} else {
		head += fmt.Sprintf("Content-Length: %d\r\n\r\n", int64(total))
	}
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	gen := &generator{n: total}
	writeDone := make(chan error, 1)
	go func() {
		var w io.Writer = conn
		var cw io.WriteCloser
		if s.chunked {
			cw = newChunkedWriter(conn)
			w = cw
		}
		_, err := io.Copy(w, gen)
		writeDone <- err
	}()
	r := readResponse(conn)
	_ = conn.Close() // stops the writer
	werr := <-writeDone
	sent := atomic.LoadInt64(&gen.sent)
	t.Logf("sent %d bytes (%.2f MiB) of a %d-byte body before the answer; writer stopped with %v", sent, float64(sent)/(1<<20), int64(total), werr)
	if r.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d (%v), want 413: %s", r.status, r.err, clip(r.body))
	}
	if werr == nil {
		t.Fatal("the whole 10 GB body was sent")
	}
	// The limit plus socket buffers on both sides; nowhere near the body.
	if sent > 64<<20 {
		t.Fatalf("%d bytes were sent before the 413; the body was read far past the limit", sent)
	}
	if after := g.engineWork(t); after != before {
		t.Errorf("the engine worked: %+v -> %+v", before, after)
	}
}

// chunkedWriter frames writes as HTTP/1.1 chunks.
type chunkedWriter struct{ w io.Writer }

func newChunkedWriter(w io.Writer) *chunkedWriter { return &chunkedWriter{w} }
func (c *chunkedWriter) Write(p []byte) (int, error) {
	if _, err := fmt.Fprintf(c.w, "%x\r\n", len(p)); err != nil {
		return 0, err
	}
	if _, err := c.w.Write(p); err != nil {
		return 0, err
	}
	_, err := io.WriteString(c.w, "\r\n")
	return len(p), err
}
func (c *chunkedWriter) Close() error { _, err := io.WriteString(c.w, "0\r\n\r\n"); return err }

// slowHeaders sends a request line and then one header byte every 200 ms,
// forever; the header timeout (10 s in serve) must cut the connection.
func slowHeaders(t *testing.T, g *gateway) {
	conn, err := net.DialTimeout("tcp", g.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const bound = 30 * time.Second
	_ = conn.SetDeadline(time.Now().Add(bound + 5*time.Second))
	start := time.Now()
	closed := make(chan response, 1)
	go func() { closed <- readResponse(conn) }()
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: "); err != nil {
		t.Fatal(err)
	}
	sent := 0
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case r := <-closed:
			t.Logf("cut off after %v and %d header bytes (status %d, %v)", time.Since(start).Round(time.Millisecond), sent, r.status, r.err)
			if r.status != 0 && r.status < 400 {
				t.Fatalf("a never-finished request got %d", r.status)
			}
			if r.status >= 500 {
				t.Fatalf("5xx %d", r.status)
			}
			return
		case <-tick.C:
			if time.Since(start) > bound {
				t.Fatalf("still connected after %v of byte-by-byte headers", bound)
			}
			if _, err := conn.Write([]byte{'a'}); err != nil {
				// The server closed first; the reader reports it next.
				continue
			}
			sent++
		}
	}
}

// slowBody sends complete headers and then one body byte every 500 ms; the
// body read deadline must end the request with a 4xx instead of waiting.
func slowBody(t *testing.T, g *gateway) {
	conn, err := net.DialTimeout("tcp", g.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const bound = 60 * time.Second
	_ = conn.SetDeadline(time.Now().Add(bound + 5*time.Second))
	before := g.engineWork(t)
	start := time.Now()
	head := "POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + apiKey + "\r\nX-Forwarded-For: " + nextXFF() +
		"\r\nContent-Type: application/json\r\nContent-Length: 4000\r\n\r\n"
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	got := make(chan response, 1)
	go func() { got <- readResponse(conn) }()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case r := <-got:
			t.Logf("answered after %v: %d %s (%v)", time.Since(start).Round(time.Millisecond), r.status, clip(r.body), r.err)
			if r.status != http.StatusBadRequest && r.status != http.StatusRequestTimeout {
				t.Fatalf("status %d (%v), want 400 or 408", r.status, r.err)
			}
			if after := g.engineWork(t); after != before {
				t.Errorf("the engine worked: %+v -> %+v", before, after)
			}
			return
		case <-tick.C:
			if time.Since(start) > bound {
				t.Fatalf("slow body still being read after %v", bound)
			}
			_, _ = conn.Write([]byte{' '})
		}
	}
}

// rateLimitCases exhaust one client's window and check the 429 and that a
// spoofed left-most X-Forwarded-For hop does not open a new window.
func rateLimitCases(t *testing.T, g *gateway) int {
	ip := nextXFF()
	req := func(xff string, extra ...string) response {
		h := append([]string{"X-Forwarded-For: " + xff}, extra...)
		return g.rawDo(hcase{method: http.MethodGet, path: "/v1/models", header: h}.request())
	}
	n := 0
	t.Run("rate/window", func(t *testing.T) {
		for i := range rateLimit {
			r := req(ip)
			if r.status != 200 || r.header.Get("X-RateLimit-Remaining") != fmt.Sprint(rateLimit-1-i) {
				t.Fatalf("request %d: %d remaining %q", i, r.status, r.header.Get("X-RateLimit-Remaining"))
			}
		}
	})
	cases := []struct {
		name  string
		xff   string
		extra []string
		want  int
	}{
		{"over the limit", ip, nil, 429},
		{"spoofed left hop", "203.0.113.50, " + ip, nil, 429},
		{"Forwarded does not override X-Forwarded-For", ip, []string{"Forwarded: for=203.0.113.51"}, 429},
		{"other client", nextXFF(), nil, 200},
	}
	for _, c := range cases {
		n++
		t.Run("rate/"+c.name, func(t *testing.T) {
			r := req(c.xff, c.extra...)
			if r.status != c.want {
				t.Fatalf("status %d, want %d", r.status, c.want)
			}
			if c.want != 429 {
				return
			}
			env, err := parseEnvelope(r.body)
			if err != nil || env.Error.Type != "requests" || env.Error.Code == nil || *env.Error.Code != "rate_limit_exceeded" {
				t.Fatalf("429 body %s (%v)", clip(r.body), err)
			}
			for _, h := range []string{"Retry-After", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
				if r.header.Get(h) == "" {
					t.Errorf("429 without %s", h)
				}
			}
		})
	}
	return n + 1
}
