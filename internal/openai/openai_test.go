package openai

import (
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestWriteErrorEnvelope(t *testing.T) {
	cases := []struct {
		err    error
		status int
		body   string
	}{
		{BadRequest("temperature", "bad %s", "value"), 400, `{"error":{"message":"bad value","type":"invalid_request_error","param":"temperature","code":null}}`},
		{NotFound("model_not_found", "no"), 404, `{"error":{"message":"no","type":"invalid_request_error","param":null,"code":"model_not_found"}}`},
		{errors.New("secret cause"), 500, `{"error":{"message":"internal error","type":"server_error","param":null,"code":"internal_error"}}`},
	}
	for _, c := range cases {
		rec := httptest.NewRecorder()
		WriteError(rec, c.err)
		if rec.Code != c.status || strings.TrimSpace(rec.Body.String()) != c.body {
			t.Errorf("%v: %d %s", c.err, rec.Code, rec.Body.String())
		}
	}
	rec := httptest.NewRecorder()
	WriteError(rec, Unavailable(3, nil, "down"))
	if rec.Header().Get("Retry-After") != "3" || rec.Code != 503 {
		t.Errorf("503: %d retry-after %q", rec.Code, rec.Header().Get("Retry-After"))
	}
}

func TestSSERoundTrip(t *testing.T) {
	rec := httptest.NewRecorder()
	w := NewSSEWriter(rec)
	for _, p := range []string{`{"a":1}`, `{"b":2}`} {
		if err := w.Data([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Done(); err != nil {
		t.Fatal(err)
	}
	if err := w.Data([]byte("x\ny")); err == nil {
		t.Fatal("newline in payload accepted")
	}
	want := "data: {\"a\":1}\n\ndata: {\"b\":2}\n\ndata: [DONE]\n\n"
	if rec.Body.String() != want || !rec.Flushed {
		t.Fatalf("wrote %q flushed=%v", rec.Body.String(), rec.Flushed)
	}
	// The reader skips comments and other fields, joins multi-line data and
	// tolerates CRLF.
	in := ": keep-alive\r\nevent: x\r\ndata: {\"a\":1}\r\n\r\ndata: one\ndata: two\n\ndata: [DONE]\n\n"
	r := NewSSEReader(strings.NewReader(in))
	var got []string
	for {
		d, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(d))
	}
	if strings.Join(got, "|") != `{"a":1}|one`+"\n"+`two|[DONE]` {
		t.Fatalf("read %q", got)
	}
	if _, err := NewSSEReader(strings.NewReader("data: " + strings.Repeat("x", MaxEventBytes+1) + "\n\n")).Next(); !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("oversized event: %v", err)
	}
}

func TestDecodeChat(t *testing.T) {
	req, err := DecodeChat([]byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"max_tokens":5,"stop":"x","top_k":3,"metadata":{"promptFamily":"f"}}`), DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if req.Messages[0].Content.String() != "hi" || len(req.Stop) != 1 || string(req.Extra["top_k"]) != "3" {
		t.Fatalf("decoded %+v", req)
	}
	out, err := json.Marshal(req)
	if err != nil || !strings.Contains(string(out), `"top_k":3`) || !strings.Contains(string(out), `"content":[{"type":"text","text":"hi"}]`) {
		t.Fatalf("re-encoded %s (%v)", out, err)
	}
	bad := map[string]string{
		`{"model":"m","messages":[{"role":"user","content":1}]}`:                       "content",
		`{"model":"m","messages":[{"role":"user","content":"x"}],"n":2}`:               "n must be",
		`{"model":"m","messages":[{"role":"user","content":"x"}],"stop":[1]}`:          "stop",
		`{"model":"m","messages":[{"role":"user","content":"x"}]} {}`:                  "malformed JSON",
		`{"model":"m","messages":[{"role":"user","content":"x"}],"stream_options":{}}`: "stream_options",
		`[]`:                    "JSON object",
		`null`:                  "JSON object",
		strings.Repeat("[", 40): "nested deeper",
		"{\"model\":\"m\x00\"}": "NUL",
		"{\"model\":\"\xff\"}":  "UTF-8",
	}
	for in, want := range bad {
		_, err := DecodeChat([]byte(in), DefaultLimits)
		var e *Error
		if !errors.As(err, &e) || e.Status != 400 || !strings.Contains(e.Message, want) {
			t.Errorf("%.60q: err %v, want 400 mentioning %q", in, err, want)
		}
	}
}

func TestDecodeCompletionPrompt(t *testing.T) {
	r, err := DecodeCompletion([]byte(`{"model":"m","prompt":["only"]}`), DefaultLimits)
	if err != nil || r.PromptText != "only" {
		t.Fatalf("%v %+v", err, r)
	}
	for _, in := range []string{`{"model":"m"}`, `{"model":"m","prompt":["a","b"]}`, `{"model":"m","prompt":{}}`} {
		if _, err := DecodeCompletion([]byte(in), DefaultLimits); err == nil {
			t.Errorf("%s accepted", in)
		}
	}
}

func TestEngineFieldsAllowList(t *testing.T) {
	r, err := DecodeCompletion([]byte(`{"model":"m","prompt":"x","top_k":5,"n_probs":100000,"n_predict":9,"MAX_TOKENS":3,"samplers":["x"]}`), DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Extra) != 1 || string(r.Extra["top_k"]) != "5" {
		t.Fatalf("forwarded %v, want only top_k", r.Extra)
	}
	for in, field := range map[string]string{
		`{"model":"m","prompt":"x","top_k":-1}`:                    "top_k",
		`{"model":"m","prompt":"x","ignore_eos":"yes"}`:            "ignore_eos",
		`{"model":"m","prompt":"x","json_schema":"not an object"}`: "json_schema",
	} {
		var e *Error
		if _, err := DecodeCompletion([]byte(in), DefaultLimits); !errors.As(err, &e) || e.Param != field {
			t.Errorf("%s: %v, want 400 on %s", in, err, field)
		}
	}
}
