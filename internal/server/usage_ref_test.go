package server

import (
	"bytes"
	"encoding/json"
	"testing"
)

// refTokenCounts is tokenCounts as it was, with a json.Decoder per read;
// the optimised one must agree with it.
func refTokenCounts(raw []byte) (prompt, completion int, ok bool) {
	if i := bytes.LastIndex(raw, []byte(`"usage":`)); i >= 0 {
		var u struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		}
		if json.NewDecoder(bytes.NewReader(raw[i+len(`"usage":`):])).Decode(&u) == nil {
			return u.PromptTokens, u.CompletionTokens, true
		}
	}
	if i := bytes.LastIndex(raw, []byte(`"timings":`)); i >= 0 {
		var t struct {
			PromptN    int `json:"prompt_n"`
			PredictedN int `json:"predicted_n"`
		}
		if json.NewDecoder(bytes.NewReader(raw[i+len(`"timings":`):])).Decode(&t) == nil {
			return t.PromptN, t.PredictedN, true
		}
	}
	return 0, 0, false
}

// refFloatAt is the old read of predicted_per_second.
func refFloatAt(raw []byte, i int, f *float64) {
	_ = json.NewDecoder(bytes.NewReader(raw[i:])).Decode(f)
}

var usageSeeds = []string{
	`{"usage":{"completion_tokens":4,"prompt_tokens":42,"total_tokens":46,"prompt_tokens_details":{"cached_tokens":0}},"timings":{"cache_n":0,"prompt_n":42,"predicted_n":4,"predicted_per_second":2457.002457002457}}`,
	`{"choices":[],"timings":{"prompt_n":5,"predicted_n":2}}`,
	`{"usage":null,"timings":{"prompt_n":5}}`, `{"usage":nullx`, `{"usage":nul`, `{"usage": {"PROMPT_TOKENS":3}}`,
	`{"usage":{"prompt_tokens":1.5},"timings":{"prompt_n":1}}`, `{"usage":{"prompt_tokens":"1"}}`,
	`{"usage":{"prompt_tokens":1}}garbage`, `{"usage":{"prompt_tokens":1,}}`, `{"usage":{"a":"}"},"x":1}`,
	`{"usage":[1]}`, `{"usage":"x"}`, `{"usage":7}`, `{"usage":`, `{"usage":{"prompt_tokens":99999999999999999999}}`,
	`{"usage":{"a":"\"}"}}`, `{"usage":{"a":"\\"}}`, `{"usage":{"prompt_tokens":1,"prompt_tokens":2}}`,
	`"predicted_per_second":1.5x`, `"predicted_per_second":1.x`, `"predicted_per_second":01`,
	`"predicted_per_second":-`, `"predicted_per_second":1e400`, `"predicted_per_second": null`,
	`"predicted_per_second":"2"`, `"predicted_per_second":1e5.`, `"predicted_per_second":-0.5E+2}`,
	`"predicted_per_second":`, `"predicted_per_second":{}`, `"predicted_per_second":1e`,
}

func checkUsageEquivalent(t *testing.T, raw []byte) {
	p, c, ok := tokenCounts(raw)
	rp, rc, rok := refTokenCounts(raw)
	if p != rp || c != rc || ok != rok {
		t.Fatalf("tokenCounts(%q) = %d %d %v; reference %d %d %v", raw, p, c, ok, rp, rc, rok)
	}
	const key = `"predicted_per_second":`
	if i := bytes.LastIndex(raw, []byte(key)); i >= 0 {
		got, want := -1.0, -1.0
		decodeFloatAt(raw, i+len(key), &got)
		refFloatAt(raw, i+len(key), &want)
		if got != want {
			t.Fatalf("predicted_per_second in %q = %v; reference %v", raw, got, want)
		}
	}
}

func TestUsageMatchesReference(t *testing.T) {
	for _, s := range usageSeeds {
		checkUsageEquivalent(t, []byte(s))
	}
}

// FuzzUsageMatchesReference checks the decoder-free reads of token counts
// and decode speed against the json.Decoder ones.
func FuzzUsageMatchesReference(f *testing.F) {
	for _, s := range usageSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkUsageEquivalent)
}
