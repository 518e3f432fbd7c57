package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// benchChatBody is a typical 1B-workload chat request: a system prompt, a user
// turn, sampling fields and metadata.
var benchChatBody = []byte(`{"model":"local-1b-q4","messages":[` +
	`{"role":"system","content":"You are an assistant that writes short, polite business emails. Keep replies under 120 words. Start with a line 'Subject: ...', then a greeting, the body, and a sign-off."},` +
	`{"role":"user","content":"Write a follow-up email to Dana asking whether she had time to review the Q3 budget draft."}],` +
	`"max_tokens":128,"temperature":0,"stream":true,"stream_options":{"include_usage":true},"metadata":{"promptFamily":"email"},"cache_prompt":true}`)

func BenchmarkDecodeChat(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchChatBody)))
	for b.Loop() {
		if _, err := DecodeChat(benchChatBody, DefaultLimits); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeChat(b *testing.B) {
	req, err := DecodeChat(benchChatBody, DefaultLimits)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(req); err != nil {
			b.Fatal(err)
		}
	}
}

// benchDiscardWriter is a ResponseWriter that flushes into nothing.
type benchDiscardWriter struct{ h http.Header }

func (d *benchDiscardWriter) Header() http.Header         { return d.h }
func (d *benchDiscardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *benchDiscardWriter) WriteHeader(int)             {}
func (d *benchDiscardWriter) Flush()                      {}

var benchChunk = []byte(`{"choices":[{"finish_reason":null,"index":0,"delta":{"content":" budget"}}],"created":1795981464,"id":"chatcmpl-FMzrqRlUw2pjXWNtaf3EgmHs5A3MPqEJ","model":"local-1b-q4","object":"chat.completion.benchChunk"}`)

func BenchmarkSSEWrite(b *testing.B) {
	w := &benchDiscardWriter{h: http.Header{}}
	s := NewSSEWriter(w)
	b.ReportAllocs()
	b.SetBytes(int64(len(benchChunk) + 8))
	for b.Loop() {
		if err := s.Data(benchChunk); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSSERead(b *testing.B) {
	const events = 128
	var stream bytes.Buffer
	for range events {
		fmt.Fprintf(&stream, "data: %s\n\n", benchChunk)
	}
	stream.WriteString("data: [DONE]\n\n")
	raw := stream.Bytes()
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		r := NewSSEReader(bytes.NewReader(raw))
		n := 0
		for {
			d, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if !bytes.Equal(d, Done) {
				n++
			}
		}
		if n != events {
			b.Fatalf("read %d events, want %d", n, events)
		}
	}
}

func TestBenchmarkFixturesDecode(t *testing.T) {
	req, err := DecodeChat(benchChatBody, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if len(req.Messages) != 2 || !req.Stream || req.Extra["cache_prompt"] == nil {
		t.Errorf("fixture decoded as %+v", req)
	}
	out, err := json.Marshal(req)
	if err != nil || !strings.Contains(string(out), `"cache_prompt":true`) {
		t.Errorf("re-encoded fixture lost a field: %s (%v)", out, err)
	}
}

// BenchmarkAppendChat is the encoding the gateway uses for the upstream
// request: AppendJSON, without json.Marshal's copies around a Marshaler.
func BenchmarkAppendChat(b *testing.B) {
	req, err := DecodeChat(benchChatBody, DefaultLimits)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := req.AppendJSON(nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSSEReadPooled is BenchmarkSSERead with the reader released after
// each stream, as the gateway does, so its read buffer is reused.
func BenchmarkSSEReadPooled(b *testing.B) {
	var stream bytes.Buffer
	for range 128 {
		fmt.Fprintf(&stream, "data: %s\n\n", benchChunk)
	}
	stream.WriteString("data: [DONE]\n\n")
	raw := stream.Bytes()
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		r := NewSSEReader(bytes.NewReader(raw))
		for {
			if _, err := r.Next(); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
		r.Release()
	}
}
