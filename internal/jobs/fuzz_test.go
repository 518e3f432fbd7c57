package jobs

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/raygw/raygw/internal/jobs/callback"
	"github.com/raygw/raygw/internal/openai"
)

// FuzzDecodeSubmission checks that the POST /v1/jobs decoder never panics,
// answers every rejection with a 400 envelope, and accepts only what the
// synchronous decoders accept, never a streaming request.
func FuzzDecodeSubmission(f *testing.F) {
	f.Add([]byte(chatJob))
	f.Add([]byte(`{"endpoint":"/v1/completions","body":{"model":"m","prompt":["x"]},"callback_url":"https://a.trusted.example/h"}`))
	f.Add([]byte(`{"endpoint":"/v1/chat/completions","body":{"stream":true}}`))
	f.Add([]byte(`{"endpoint":null,"body":null,"callback_url":null}`))
	allow, err := callback.NewAllowList([]string{"callback.example", "*.trusted.example"})
	if err != nil {
		f.Fatal(err)
	}
	policy := callback.Policy{Allow: allow}
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, err := DecodeSubmission(raw, openai.DefaultLimits, policy)
		if err != nil {
			var oe *openai.Error
			if !errors.As(err, &oe) || oe.Status != 400 || oe.Message == "" {
				t.Fatalf("rejection %v is not a 400 envelope", err)
			}
			return
		}
		if !json.Valid(s.Body) {
			t.Fatalf("accepted body %q is not JSON", s.Body)
		}
		var stream bool
		switch s.Endpoint {
		case EndpointChat:
			r, err := openai.DecodeChat(s.Body, openai.DefaultLimits)
			if err != nil {
				t.Fatalf("stored chat body does not decode: %v", err)
			}
			stream = r.Stream
		case EndpointCompletion:
			r, err := openai.DecodeCompletion(s.Body, openai.DefaultLimits)
			if err != nil {
				t.Fatalf("stored completion body does not decode: %v", err)
			}
			stream = r.Stream
		default:
			t.Fatalf("accepted endpoint %q", s.Endpoint)
		}
		if stream {
			t.Fatal("accepted a streaming job")
		}
		if s.CallbackURL != "" {
			if _, err := policy.CheckURL(s.CallbackURL); err != nil {
				t.Fatalf("accepted callback %q: %v", s.CallbackURL, err)
			}
		}
	})
}
