package upstream

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/raygw/raygw/internal/openai"
)

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestStreamAndJSON(t *testing.T) {
	srv := httptest.NewServer(New(Options{Latency: time.Millisecond, Model: "fake"}))
	defer srv.Close()
	cases := []struct {
		name, path, body string
		stream           bool
		tokens           int
	}{
		{"chat stream", "/v1/chat/completions", `{"stream":true,"max_tokens":3,"messages":[{"role":"user","content":"hello"}]}`, true, 3},
		{"text stream default length", "/v1/completions", `{"stream":true,"prompt":"abc"}`, true, 16},
		{"chat json", "/v1/chat/completions", `{"max_tokens":2,"messages":[]}`, false, 2},
		{"text json", "/v1/completions", `{"max_tokens":5,"prompt":"abc"}`, false, 5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := post(t, srv.URL+c.path, c.body)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			if !c.stream {
				var out struct {
					Choices []struct {
						Text    string `json:"text"`
						Message *struct {
							Content string `json:"content"`
						} `json:"message"`
					} `json:"choices"`
					Usage struct {
						CompletionTokens int `json:"completion_tokens"`
					} `json:"usage"`
				}
				if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
					t.Fatal(err)
				}
				text := out.Choices[0].Text
				if out.Choices[0].Message != nil {
					text = out.Choices[0].Message.Content
				}
				if out.Usage.CompletionTokens != c.tokens || strings.Count(text, "tok") != c.tokens {
					t.Errorf("got %d tokens, text %q", out.Usage.CompletionTokens, text)
				}
				return
			}
			r := openai.NewSSEReader(resp.Body)
			events, done := 0, false
			for {
				d, err := r.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if bytes.Equal(d, openai.Done) {
					done = true
					continue
				}
				events++
			}
			if !done || events != c.tokens+1 {
				t.Errorf("events=%d done=%v, want %d token events and a final one", events, done, c.tokens)
			}
		})
	}
}

func TestRoutesAndErrors(t *testing.T) {
	srv := httptest.NewServer(New(Options{}))
	defer srv.Close()
	for _, p := range []string{"/health", "/v1/models"} {
		resp, err := http.Get(srv.URL + p)
		if err != nil || resp.StatusCode != 200 {
			t.Errorf("%s: %v %v", p, err, resp)
		}
		resp.Body.Close()
	}
	if resp := post(t, srv.URL+"/v1/completions", "{not json"); resp.StatusCode != 400 {
		t.Errorf("bad JSON: status %d", resp.StatusCode)
	}
	if resp := post(t, srv.URL+"/v1/completions", strings.Repeat("x", 2<<20)); resp.StatusCode != 400 {
		t.Errorf("huge body: status %d", resp.StatusCode)
	}
}

func BenchmarkStream(b *testing.B) {
	srv := httptest.NewServer(New(Options{}))
	defer srv.Close()
	b.ReportAllocs()
	for b.Loop() {
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"stream":true,"max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}
