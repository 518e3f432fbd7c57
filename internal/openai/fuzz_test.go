package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

// Seeds shared by the request fuzz targets; more live in testdata/fuzz.
var requestSeeds = []string{
	`{"model":"stories","messages":[{"role":"user","content":"Hi"}]}`,
	`{"model":"stories","messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}],"stream":true,"stream_options":{"include_usage":true}}`,
	`{"model":"stories","prompt":"Once","max_tokens":8,"stop":["\n"],"temperature":0}`,
	`{"model":"stories","prompt":["Once"],"logit_bias":{"1":-100},"seed":1}`,
	`{"model":"x","messages":[{"role":"user","content":"a"}],"max_tokens":"8"}`,
	`{"model":1e400}`,
	`{"model":"x","max_tokens":99999999999999999999999}`,
	`{"model":"x","messages":[`,
	`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
	`{"model":"x","messages":[{"role":"user","content":null}],"extra":{"a":[1,2]}}`,
	`{"MODEL":"x","Messages":[{"role":"user","content":"a"}]}`,
	`null`, `[]`, `""`, `{}`, "{\"model\":\"\xff\"}", "{\"model\":\"a\x00\"}",
	`{"model":"x","messages":[{"role":"user","content":"a"}]} {}`,
	`{"model":"x","prompt":"a","n":2}`,
	`{"model":"x","prompt":"a","stop":"` + strings.Repeat("s", 300) + `"}`,
}

// checkDecoded holds the contract of DecodeChat and DecodeCompletion: a
// request or an *Error with status 400, never both, never a panic; and a
// request raygw accepted re-encodes to a body it accepts again.
func checkDecoded[T any](t *testing.T, body []byte, r *T, err error, again func([]byte) error) {
	t.Helper()
	if (r == nil) == (err == nil) {
		t.Fatalf("want exactly one of request and error, got %v and %v", r, err)
	}
	if err != nil {
		var e *Error
		if !errors.As(err, &e) || e.Status != 400 || e.Type != "invalid_request_error" || e.Message == "" {
			t.Fatalf("error %#v is not a 400 invalid_request_error", err)
		}
		if !jsonPath(e.Param) {
			t.Fatalf("error.param %q is not a JSON field path (a Go name leaked?): %v", e.Param, err)
		}
		return
	}
	out, merr := json.Marshal(r)
	if merr != nil {
		t.Fatalf("accepted request does not re-encode: %v", merr)
	}
	if err := again(out); err != nil {
		t.Fatalf("accepted body %q re-encoded as %q, which is rejected: %v", body, out, err)
	}
}

// jsonPath reports whether p looks like a client-facing field path such as
// "messages[0].role": lower-case JSON names, digits, '_', '.', '[' and ']'.
func jsonPath(p string) bool {
	for _, c := range p {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.ContainsRune("_.[]", c)) {
			return false
		}
	}
	return true
}

func FuzzDecodeChat(f *testing.F) {
	for _, s := range requestSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := DecodeChat(body, DefaultLimits)
		checkDecoded(t, body, r, err, func(b []byte) error { _, err := DecodeChat(b, DefaultLimits); return err })
	})
}

func FuzzDecodeCompletion(f *testing.F) {
	for _, s := range requestSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := DecodeCompletion(body, DefaultLimits)
		checkDecoded(t, body, r, err, func(b []byte) error { _, err := DecodeCompletion(b, DefaultLimits); return err })
	})
}

// FuzzSSEReader reads arbitrary bytes as an event stream: no panic, only the
// documented errors, no event larger than its input or MaxEventBytes, and
// the loop ends.
func FuzzSSEReader(f *testing.F) {
	for _, s := range []string{
		"data: {\"a\":1}\n\ndata: [DONE]\n\n",
		"data:x\r\ndata:y\r\n\r\n",
		": comment\nevent: e\nid: 1\nretry: 10\ndata: z\n\n",
		"data: partial",
		"\n\n\n",
		"data",
		"data:\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		r := NewSSEReader(bytes.NewReader(in))
		total := 0
		for i := 0; ; i++ {
			if i > len(in)+1 {
				t.Fatalf("more events (%d) than input bytes (%d)", i, len(in))
			}
			ev, err := r.Next()
			if err != nil {
				if err != io.EOF && !errors.Is(err, ErrEventTooLarge) && err != io.ErrUnexpectedEOF {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			total += len(ev)
			if len(ev) > MaxEventBytes || total > len(in) {
				t.Fatalf("event of %d bytes (total %d) from %d input bytes", len(ev), total, len(in))
			}
		}
	})
}

// FuzzSSERoundTrip writes payloads with SSEWriter and reads them back.
func FuzzSSERoundTrip(f *testing.F) {
	f.Add("{\"a\":1}", " leading space", "")
	f.Add("[DONE]", "data: nested", ":colon")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		rec := httptest.NewRecorder()
		w := NewSSEWriter(rec)
		var want [][]byte
		for _, p := range []string{a, b, c} {
			if err := w.Data([]byte(p)); err != nil {
				if !strings.ContainsAny(p, "\r\n") {
					t.Fatalf("Data(%q): %v", p, err)
				}
				continue
			}
			want = append(want, []byte(p))
		}
		r := NewSSEReader(rec.Body)
		for i, p := range want {
			got, err := r.Next()
			if err != nil || !bytes.Equal(got, p) {
				t.Fatalf("event %d = %q, %v; want %q", i, got, err, p)
			}
		}
		if _, err := r.Next(); err != io.EOF {
			t.Fatalf("after the last event: %v, want EOF", err)
		}
	})
}

// TestSSEReaderBounded checks that an endless line is refused at
// MaxEventBytes instead of being buffered.
func TestSSEReaderBounded(t *testing.T) {
	e := &endless{limit: 64 << 20}
	r := NewSSEReader(io.MultiReader(strings.NewReader("data: "), e))
	if _, err := r.Next(); !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("Next on an endless line = %v, want ErrEventTooLarge", err)
	}
	if e.n > MaxEventBytes+64<<10 {
		t.Fatalf("read %d bytes before refusing; the bound is %d", e.n, MaxEventBytes)
	}
}

// endless yields 'x' bytes up to limit, then EOF.
type endless struct{ n, limit int }

func (e *endless) Read(p []byte) (int, error) {
	if e.n >= e.limit {
		return 0, io.EOF
	}
	n := min(len(p), e.limit-e.n)
	for i := range n {
		p[i] = 'x'
	}
	e.n += n
	return n, nil
}
