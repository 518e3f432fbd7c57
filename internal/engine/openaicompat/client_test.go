package openaicompat

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/raygw/raygw/internal/openai"
)

// closingEngine answers the first request on each connection and closes the
// connection when a second one arrives on it, the way an engine that drops
// kept-alive connections races a client reusing them.
func closingEngine(t *testing.T) (string, *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var served atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				r := bufio.NewReader(c)
				for i := 0; ; i++ {
					req, err := http.ReadRequest(r)
					if err != nil {
						return
					}
					_, _ = io.Copy(io.Discard, req.Body)
					if i > 0 {
						return // drop the reused connection without answering
					}
					served.Add(1)
					_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
				}
			}(c)
		}
	}()
	return "http://" + ln.Addr().String(), &served
}

func TestPostSurvivesEngineClosingKeptAliveConnection(t *testing.T) {
	url, served := closingEngine(t)
	c := New(url, "", NewTransport())
	for i := 0; i < 5; i++ {
		resp, err := c.Post(context.Background(), "/v1/completions", []byte(`{"prompt":"x"}`))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		resp.Body.Close()
	}
	if served.Load() != 5 {
		t.Fatalf("engine answered %d requests, want 5", served.Load())
	}
}

func TestClassify(t *testing.T) {
	_, err := New("http://127.0.0.1:1", "", NewTransport()).Post(context.Background(), "/x", nil)
	var e *openai.Error
	if !errors.As(err, &e) || e.Status != 503 || !errors.Is(err, ErrEngineDown) {
		t.Fatalf("refused connection: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Classify(ctx, context.Canceled); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestUpstreamErrors(t *testing.T) {
	cases := []struct {
		status int
		body   string
		want   int
	}{
		{400, `{"error":{"code":400,"message":"too long","type":"exceed_context_size_error"}}`, 413},
		{400, `{"error":{"message":"bad grammar"}}`, 400},
		{503, `{"error":{"message":"Loading model"}}`, 503},
		{500, `boom`, 502},
	}
	for _, c := range cases {
		resp := &http.Response{StatusCode: c.status, Body: io.NopCloser(strings.NewReader(c.body))}
		var e *openai.Error
		if err := upstreamError(resp); !errors.As(err, &e) || e.Status != c.want {
			t.Errorf("%d %s: got %v, want %d", c.status, c.body, err, c.want)
		}
	}
}
