package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/raygw/raygw/internal/openai"
)

func TestMetaEventRoundTrip(t *testing.T) {
	for _, m := range []runMeta{{}, {QueueMS: 12, Position: 3}, {QueueMS: -1, Position: -7},
		{QueueMS: math.MaxInt64, Position: math.MinInt}} {
		ev := m.event()
		want, _ := json.Marshal(m)
		if !bytes.Equal(ev, append(append([]byte{}, metaPrefix...), want...)) {
			t.Errorf("event of %+v = %q, want metaPrefix+%s", m, ev, want)
		}
		if got, ok := parseMeta(ev[len(metaPrefix):]); !ok || got != m {
			t.Errorf("parseMeta(%q) = %+v, %v", ev, got, ok)
		}
	}
}

// FuzzParseMetaMatchesUnmarshal checks the short way of reading a meta
// event against json.Unmarshal.
func FuzzParseMetaMatchesUnmarshal(f *testing.F) {
	for _, s := range []string{`{"q":1,"p":2}`, `{"q":01,"p":2}`, `{"q":+1,"p":2}`, `{"q":1,"p":2} `, `{"p":2,"q":1}`,
		`{"q":1,"p":2}}`, `{"q":1.0,"p":2}`, `{"q":-0,"p":0}`, `{"q":99999999999999999999,"p":1}`, `{"q":1,"p":}`, `{"Q":1,"P":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := parseMeta(b)
		var want runMeta
		err := json.Unmarshal(b, &want)
		if ok != (err == nil) || (ok && got != want) {
			t.Fatalf("parseMeta(%q) = %+v, %v; json.Unmarshal %+v, %v", b, got, ok, want, err)
		}
	})
}

func TestSetHeadersLikeSet(t *testing.T) {
	got, want := http.Header{}, http.Header{}
	setHeaders(got, headerQueueMS, "5", headerQueuePos, "0", "Content-Type", "application/json", "Content-Length", "10")
	want.Set(headerQueueMS, "5")
	want.Set(headerQueuePos, "0")
	want.Set("Content-Type", "application/json")
	want.Set("Content-Length", "10")
	got.Add(headerQueueMS, "6") // must not write into the shared array
	want.Add(headerQueueMS, "6")
	if !equalHeaders(got, want) || got.Get(headerQueuePos) != "0" {
		t.Fatalf("setHeaders gave %v, want %v", got, want)
	}
	got, want = http.Header{}, http.Header{}
	openai.SSEHeaders(got)
	for k, v := range got {
		want.Set(k, v[0])
	}
	if got.Get("Content-Type") != "text/event-stream" || len(got) != 4 || !equalHeaders(got, want) {
		t.Fatalf("SSEHeaders gave %v", got)
	}
}

func equalHeaders(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if strings.Join(v, "\x00") != strings.Join(b[k], "\x00") {
			return false
		}
	}
	return true
}

func TestRenameModel(t *testing.T) {
	s := &Server{upstreamModel: []byte(`"model":"/models/x.gguf"`), clientModel: []byte(`"model":"m"`)}
	in := []byte(`{"id":"1","model":"/models/x.gguf","model":"/models/x.gguf"}`)
	want := bytes.Replace(in, s.upstreamModel, s.clientModel, 1)
	if got := s.renameModel(in); !bytes.Equal(got, want) {
		t.Errorf("renameModel = %s", got)
	}
	if got := s.renamedCopy(in); !bytes.Equal(got, want) {
		t.Errorf("renamedCopy = %s", got)
	}
	other := []byte(`{"model":"n"}`)
	if got := s.renamedCopy(other); !bytes.Equal(got, other) || &got[0] == &other[0] {
		t.Errorf("renamedCopy without a match = %s (shared: %v)", got, &got[0] == &other[0])
	}
	if got := s.renamedCopy([]byte{}); got != nil {
		t.Errorf("renamedCopy of an empty event = %#v, want nil as before", got)
	}
	plain := &Server{}
	if got := plain.renamedCopy(in); !bytes.Equal(got, in) || &got[0] == &in[0] {
		t.Errorf("renamedCopy without a rename must copy")
	}
}

func TestReadAllLikeIOReadAll(t *testing.T) {
	boom := errors.New("boom")
	body := strings.Repeat("abcdefgh", 300)
	for _, c := range []struct {
		name        string
		r           func() io.Reader
		size, limit int64
	}{
		{"exact size", func() io.Reader { return strings.NewReader(body) }, int64(len(body)), 1 << 20},
		{"unknown size", func() io.Reader { return strings.NewReader(body) }, -1, 1 << 20},
		{"size too small", func() io.Reader { return strings.NewReader(body) }, 10, 1 << 20},
		{"one byte reads", func() io.Reader { return iotest.OneByteReader(strings.NewReader(body)) }, int64(len(body)), 1 << 20},
		{"over the limit", func() io.Reader { return strings.NewReader(body) }, -1, 1000},
		{"size over the limit", func() io.Reader { return strings.NewReader(body) }, int64(len(body)), 1000},
		{"data then error", func() io.Reader {
			return iotest.DataErrReader(io.MultiReader(strings.NewReader("ab"), iotest.ErrReader(boom)))
		}, -1, 100},
		{"empty", func() io.Reader { return strings.NewReader("") }, 0, 100},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, gerr := readAll(c.r(), c.size, c.limit)
			want, werr := io.ReadAll(io.LimitReader(c.r(), c.limit))
			if !bytes.Equal(got, want) || !errors.Is(gerr, werr) && gerr != werr {
				t.Fatalf("readAll = %d bytes, %v; io.ReadAll %d bytes, %v", len(got), gerr, len(want), werr)
			}
		})
	}
}

func TestUpstreamPayloadSameAsMarshal(t *testing.T) {
	req, err := openai.DecodeChat([]byte(`{"model":"m","messages":[{"role":"user","content":"<hi>"}],"top_k":3,"cache_prompt":true}`), openai.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range []any{req, map[string]int{"a": 1}} {
		got, gerr := upstreamPayload(body)
		want, werr := json.Marshal(body)
		if !bytes.Equal(got, want) || gerr != nil || werr != nil {
			t.Errorf("upstreamPayload = %s, %v; json.Marshal %s, %v", got, gerr, want, werr)
		}
	}
}
