package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// corpus returns the first argument of every entry of the fuzz corpora
// named, so the differential targets below start from the same inputs as
// the contract targets.
func corpus(t testing.TB, targets ...string) [][]byte {
	t.Helper()
	var out [][]byte
	for _, target := range targets {
		files, err := filepath.Glob(filepath.Join("testdata", "fuzz", target, "*"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(string(raw), "\n")
			if len(lines) < 2 {
				continue
			}
			arg := lines[1]
			_, lit, ok := strings.Cut(arg, "(")
			if !ok {
				continue
			}
			s, err := strconv.Unquote(strings.TrimSuffix(lit, ")"))
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			out = append(out, []byte(s))
		}
	}
	return out
}

// equivSeeds are edge cases of the member scanner and the encoder.
var equivSeeds = []string{
	`{"model":"m","messages":[{"role":"user","content":"a"}],"top_k":3,"top_k":4}`,
	`{"model":"m","messages":[{"role":"user","content":"a"}],"mod\u0065l":"n","top\u005fk":5}`,
	` { "model" : "m" , "messages" : [ {"role":"user","content":"a"} ] , "json_schema" : { "type" : "object" } , "grammar" : "root ::= \"<a>\"" } `,
	`{"model":"m","messages":[{"role":"user","content":"<b>&\u2028 é \ud800"}],"stop":["}","]","\""]}`,
	`{"model":"m","messages":[{"role":"user","content":"a"}],"unknown":{"x":[1,{"y":"}"}]},"min_p":0.5e0}`,
	`{"model":"m","prompt":"a","cache_prompt":true,"ignore_eos":false,"lora_name":"l\u00e9"}`,
	`{"model":"m","prompt":"a\u0000b","stream":true,"stream_options":{ "include_usage" : true }}`,
	`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"logit_bias":{"b":1,"a":-1.5}}`,
	`{"model":"m","messages":[{"role":"user","content":"a"}],"":1,"\"":2}`,
	`{"model":"m","messages":[{"role":"user","content":"a"}],"temperature":1e-7,"top_p":1E0}`,
	"\n\t{\"model\":\"m\",\"prompt\":\"x\"}\r\n",
	`{"model":"m","prompt":"x"}]`, `{"model":"m","prompt":"x"`, `"x"`, `1`, `true`, ` null `,
}

func equivInputs(t testing.TB) [][]byte {
	in := corpus(t, "FuzzDecodeChat", "FuzzDecodeCompletion")
	for _, s := range append(append([]string{}, requestSeeds...), equivSeeds...) {
		in = append(in, []byte(s))
	}
	return in
}

// sameDecode fails when the optimised and the reference decoders disagree
// on a body, or when AppendJSON and json.Marshal differ from the old
// encoder on what they accepted.
func sameDecode[R any](t *testing.T, body []byte, got *R, gerr error, want *R, werr error, enc func(*R) ([]byte, error)) {
	t.Helper()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("%q decoded differently (-reference +new):\n%s", body, diff)
	}
	if (gerr == nil) != (werr == nil) {
		t.Fatalf("%q: error %v, reference %v", body, gerr, werr)
	}
	if gerr != nil {
		var g, w *Error
		if !errors.As(gerr, &g) || !errors.As(werr, &w) || g.Status != w.Status || g.Message != w.Message || g.Param != w.Param || g.Code != w.Code {
			t.Fatalf("%q: error %#v, reference %#v", body, gerr, werr)
		}
		return
	}
	ref, rerr := enc(want)
	out, err := json.Marshal(got)
	if !bytes.Equal(out, ref) || (err == nil) != (rerr == nil) {
		t.Fatalf("%q: json.Marshal = %s (%v), reference %s (%v)", body, out, err, ref, rerr)
	}
	app, err := any(got).(interface{ AppendJSON([]byte) ([]byte, error) }).AppendJSON([]byte("x"))
	if string(app) != "x"+string(ref) || err != nil {
		t.Fatalf("%q: AppendJSON = %s (%v), reference x%s", body, app, err, ref)
	}
}

func checkEquivalent(t *testing.T, body []byte) {
	c, cerr := DecodeChat(body, DefaultLimits)
	rc, rcerr := refDecodeChat(body, DefaultLimits)
	sameDecode(t, body, c, cerr, rc, rcerr, refChat)
	p, perr := DecodeCompletion(body, DefaultLimits)
	rp, rperr := refDecodeCompletion(body, DefaultLimits)
	sameDecode(t, body, p, perr, rp, rperr, refCompletion)
}

func TestDecodeMatchesReference(t *testing.T) {
	for _, body := range equivInputs(t) {
		checkEquivalent(t, body)
	}
}

// FuzzDecodeMatchesReference checks the optimised decoder and encoder
// against the reference ones on arbitrary bodies.
func FuzzDecodeMatchesReference(f *testing.F) {
	for _, body := range equivInputs(f) {
		f.Add(body)
	}
	f.Fuzz(checkEquivalent)
}

func checkContentCodec(t *testing.T, lit []byte) {
	var got, want Content
	gerr := got.UnmarshalJSON(lit)
	werr := refContentUnmarshal(&want, lit)
	if (gerr == nil) != (werr == nil) || !cmp.Equal(got, want) {
		t.Fatalf("UnmarshalJSON(%q) = %+v, %v; reference %+v, %v", lit, got, gerr, want, werr)
	}
	text := Content{Text: string(lit)}
	g, gerr := text.MarshalJSON()
	w, werr := refContentMarshal(text)
	if !bytes.Equal(g, w) || (gerr == nil) != (werr == nil) {
		t.Fatalf("MarshalJSON(%q) = %s; reference %s", lit, g, w)
	}
}

// FuzzContentMatchesReference checks Content's fast paths against
// encoding/json on arbitrary string literals and texts.
func FuzzContentMatchesReference(f *testing.F) {
	for _, s := range []string{`"plain"`, `"esc\"aped"`, `"\u00e9"`, "\"\xff\"", "\"a\x01\"", `"<&>"`,
		"\"\u2028\"", `"`, `""`, `"a"b"`, `null`, `[{"type":"text","text":"x"}]`, "\"é\"", `"\ud800"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(checkContentCodec)
}

func checkSSEEquivalent(t *testing.T, in []byte) {
	r, ref := NewSSEReader(bytes.NewReader(in)), newRefSSEReader(bytes.NewReader(in))
	for i := 0; i <= len(in)+1; i++ {
		got, gerr := r.Next()
		want, werr := ref.Next()
		if !bytes.Equal(got, want) || (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
			t.Fatalf("event %d of %q: %q, %v; reference %q, %v", i, in, got, gerr, want, werr)
		}
		if gerr != nil {
			return
		}
	}
	t.Fatalf("more events than input bytes in %q", in)
}

// FuzzSSEReaderMatchesReference checks the reader that reuses its buffers
// against the one that copied every line.
func FuzzSSEReaderMatchesReference(f *testing.F) {
	for _, in := range corpus(f, "FuzzSSEReader") {
		f.Add(in)
	}
	long := strings.Repeat("y", 40<<10)
	for _, s := range []string{"data: " + long + "\r\n\r\n", "data: " + long, "data: " + long + "\r",
		"data: a\r\ndata: " + long + "\n\n", ": " + long + "\ndata: b\n\n", "data: " + long + "\r\n" + long + "\n\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(checkSSEEquivalent)
}

func TestSSEReaderLongLines(t *testing.T) {
	// Lines longer than the read buffer take the copying path; several in
	// a row reuse its buffer.
	var in bytes.Buffer
	for i := range 5 {
		in.WriteString("data: " + strings.Repeat(strconv.Itoa(i), 40<<10+i) + "\r\n\r\n")
	}
	r := NewSSEReader(&in)
	for i := range 5 {
		ev, err := r.Next()
		if err != nil || len(ev) != 40<<10+i || ev[0] != byte('0'+i) || ev[len(ev)-1] != byte('0'+i) {
			t.Fatalf("event %d: %d bytes, %v", i, len(ev), err)
		}
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("after the last event: %v", err)
	}
}

func checkScalars(t *testing.T, raw []byte) {
	var f float64
	ferr := json.Unmarshal(raw, &f)
	if v, ok := jsonFloat(raw); ok != (ferr == nil) || (ok && v != f && !(v != v && f != f)) {
		t.Fatalf("jsonFloat(%q) = %v, %v; json.Unmarshal %v, %v", raw, v, ok, f, ferr)
	}
	var i int64
	ierr := json.Unmarshal(raw, &i)
	if v, ok := jsonInt(raw); ok != (ierr == nil) || (ok && v != i) {
		t.Fatalf("jsonInt(%q) = %v, %v; json.Unmarshal %v, %v", raw, v, ok, i, ierr)
	}
	var b bool
	berr := json.Unmarshal(raw, &b)
	if err := boolean("x", raw); (err == nil) != (berr == nil) {
		t.Fatalf("boolean(%q) = %v; json.Unmarshal %v", raw, err, berr)
	}
}

// FuzzScalarsMatchUnmarshal checks the number and boolean fast paths of
// the engine field rules against json.Unmarshal.
func FuzzScalarsMatchUnmarshal(f *testing.F) {
	for _, s := range []string{"0", "-0", "1", "-1.5", "1e3", "1E+3", "1e-3", "01", "1.", ".5", "-", "1e", "0x10",
		"1_0", "9223372036854775807", "9223372036854775808", "1e400", "true", "false", "null", " 1", "1 ", `"1"`,
		"Inf", "NaN", "+1", "1.0"} {
		f.Add([]byte(s))
	}
	f.Fuzz(checkScalars)
}

// TestSSEReaderRelease checks that a released reader's buffers serve the
// next stream without carrying anything over, and that a second Release is
// harmless.
func TestSSEReaderRelease(t *testing.T) {
	long := strings.Repeat("z", 40<<10)
	for i, in := range []string{"data: a\n\ndata: " + long + "\n\ndata: partial", "data: b\n\n", ": x\ndata: c\ndata: d\n\n"} {
		r, ref := NewSSEReader(strings.NewReader(in)), newRefSSEReader(strings.NewReader(in))
		for {
			got, gerr := r.Next()
			want, werr := ref.Next()
			if !bytes.Equal(got, want) || (gerr == nil) != (werr == nil) {
				t.Fatalf("stream %d: %q, %v; reference %q, %v", i, got, gerr, want, werr)
			}
			if gerr != nil {
				break
			}
		}
		r.Release()
		r.Release()
	}
}
