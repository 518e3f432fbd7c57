package respcache

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"math"
	"slices"

	"github.com/raygw/raygw/internal/openai"
)

// Strategy says which parts of a request make up its cache key.
type Strategy string

// Key strategies (RAY_CACHE_KEY_STRATEGY).
const (
	// InputParams keys on the model, the input and every parameter that can
	// change the output, canonicalised.
	InputParams Strategy = "input+params"
	// Input keys on the model and the input only: requests that differ only in
	// sampling parameters share an answer.
	Input Strategy = "input"
)

// ParseStrategy checks a RAY_CACHE_KEY_STRATEGY value.
func ParseStrategy(s string) (Strategy, error) {
	switch Strategy(s) {
	case InputParams, Input:
		return Strategy(s), nil
	case "":
		return InputParams, nil
	}
	return "", fmt.Errorf("RAY_CACHE_KEY_STRATEGY: %q is not input+params or input", s)
}

// Key identifies one cached answer: a SHA-256 over the tenant and the
// canonical request.
type Key [32]byte

// ChatKey returns the key of a chat request for tenant, and false when the
// request is not cacheable (not deterministic, or more than one choice).
// Every key also covers the response shape (chat or text, stream or not),
// because the cached bytes are shape-specific.
func ChatKey(s Strategy, tenant string, r *openai.ChatRequest) (Key, bool) {
	if !cacheable(&r.Sampling) {
		return Key{}, false
	}
	k := newKeyer(tenant, "chat", &r.Sampling)
	k.int(len(r.Messages))
	for _, m := range r.Messages {
		k.str(m.Role)
		k.bool(m.Content.Null)
		k.str(m.Content.String())
		k.str(m.Name)
		k.raw(m.ToolCalls)
		k.str(m.ToolCallID)
	}
	if s != Input {
		k.params(&r.Sampling, r.Extra)
		k.raw(r.ResponseFormat)
		k.raw(r.Tools)
		k.raw(r.ToolChoice)
		k.optBool(r.Logprobs)
		k.optInt(r.TopLogprobs)
	}
	return k.sum(), true
}

// CompletionKey is ChatKey for a text completion request.
func CompletionKey(s Strategy, tenant string, r *openai.CompletionRequest) (Key, bool) {
	if !cacheable(&r.Sampling) {
		return Key{}, false
	}
	k := newKeyer(tenant, "text", &r.Sampling)
	k.str(r.PromptText)
	if s != Input {
		k.params(&r.Sampling, r.Extra)
		k.str(r.Suffix)
		k.bool(r.Echo)
		k.optInt(r.Logprobs)
	}
	return k.sum(), true
}

func cacheable(s *openai.Sampling) bool {
	return s.Deterministic() && (s.N == nil || *s.N == 1)
}

// keyer writes length-prefixed fields into a hash so no two different field
// sequences can produce the same byte stream.
type keyer struct {
	h   hash.Hash
	buf [binary.MaxVarintLen64]byte
}

func newKeyer(tenant, kind string, s *openai.Sampling) *keyer {
	k := &keyer{h: sha256.New()}
	k.str("raygw-respcache-v1")
	k.str(tenant)
	k.str(kind)
	k.bool(s.Stream)
	k.str(s.Model)
	return k
}

func (k *keyer) int(n int) {
	k.h.Write(k.buf[:binary.PutVarint(k.buf[:], int64(n))])
}

func (k *keyer) str(s string) {
	k.int(len(s))
	io.WriteString(k.h, s)
}

func (k *keyer) bool(b bool) {
	if b {
		k.int(1)
	} else {
		k.int(0)
	}
}

func (k *keyer) optInt(p *int) {
	k.bool(p != nil)
	if p != nil {
		k.int(*p)
	}
}

func (k *keyer) optBool(p *bool) {
	k.bool(p != nil)
	if p != nil {
		k.bool(*p)
	}
}

func (k *keyer) optFloat(p *float64) {
	k.bool(p != nil)
	if p != nil {
		k.h.Write(binary.LittleEndian.AppendUint64(k.buf[:0], math.Float64bits(*p)))
	}
}

// raw writes a JSON value in canonical form: objects with sorted keys and no
// insignificant whitespace. JSON null and absence are the same.
func (k *keyer) raw(b json.RawMessage) {
	k.str(string(canonicalJSON(b)))
}

func canonicalJSON(b json.RawMessage) []byte {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || string(b) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return b // already validated upstream; keep the bytes as they are
	}
	out, err := json.Marshal(v)
	if err != nil {
		return b
	}
	return out
}

// params writes every sampling parameter that can change the output. The
// output cap is written once, whichever field carried it; metadata and user
// are left out.
func (k *keyer) params(s *openai.Sampling, extra map[string]json.RawMessage) {
	outCap, ok := s.OutputCap()
	k.bool(ok)
	k.int(outCap)
	k.optFloat(s.Temperature)
	k.optFloat(s.TopP)
	k.optInt(s.N)
	k.int(len(s.Stop))
	for _, st := range s.Stop {
		k.str(st)
	}
	k.bool(s.Seed != nil)
	if s.Seed != nil {
		k.int(int(*s.Seed))
	}
	k.optFloat(s.PresencePenalty)
	k.optFloat(s.FrequencyPenalty)
	k.sortedFloats(s.LogitBias)
	k.raw(s.StreamOptions)
	names := make([]string, 0, len(extra))
	for name := range extra {
		names = append(names, name)
	}
	slices.Sort(names)
	k.int(len(names))
	for _, name := range names {
		k.str(name)
		k.raw(extra[name])
	}
}

func (k *keyer) sortedFloats(m map[string]float64) {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	slices.Sort(names)
	k.int(len(names))
	for _, name := range names {
		v := m[name]
		k.str(name)
		k.optFloat(&v)
	}
}

func (k *keyer) sum() Key {
	var out Key
	k.h.Sum(out[:0])
	return out
}
