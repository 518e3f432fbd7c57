package server

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/raygw/raygw/internal/openai"
)

// tokenCounts reads an answer's token counts without parsing the whole
// answer: the OpenAI "usage" object, else llama.cpp's "timings". Inside
// generated text these keys appear only with escaped quotes, so the last
// unescaped match is the top-level one.
func tokenCounts(raw []byte) (prompt, completion int, ok bool) {
	if i := bytes.LastIndex(raw, []byte(`"usage":`)); i >= 0 {
		var u struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		}
		if decodeObjectAt(raw, i+len(`"usage":`), &u) {
			return u.PromptTokens, u.CompletionTokens, true
		}
	}
	if i := bytes.LastIndex(raw, []byte(`"timings":`)); i >= 0 {
		var t struct {
			PromptN    int `json:"prompt_n"`
			PredictedN int `json:"predicted_n"`
		}
		if decodeObjectAt(raw, i+len(`"timings":`), &t) {
			return t.PromptN, t.PredictedN, true
		}
	}
	return 0, 0, false
}

func (s *Server) recordUsage(j *job, raw []byte) {
	prompt, completion, ok := tokenCounts(raw)
	if !ok {
		return
	}
	j.usage.prompt, j.usage.completion = prompt, completion
	j.usage.finish = "stop"
	if bytes.Contains(raw, []byte(`"finish_reason":"length"`)) {
		j.usage.finish = "length"
	}
	if i := bytes.LastIndex(raw, []byte(`"predicted_per_second":`)); i >= 0 {
		decodeFloatAt(raw, i+len(`"predicted_per_second":`), &j.usage.tps)
	}
	s.promptTokens.Add(float64(prompt))
	s.completionTokens.Add(float64(completion))
	if j.stages.Tokens != nil && prompt > 0 {
		j.stages.Tokens.Observe(utf8.RuneCountInString(j.promptText), prompt)
	}
}

// The two decoders below give the result of
// json.NewDecoder(bytes.NewReader(raw[i:])).Decode(v) == nil, which reads
// the first JSON value after i and ignores what follows it, without the
// decoder's buffers: only an object is handed to json.Unmarshal.

// decodeObjectAt decodes the JSON value at raw[i:] into v, a pointer to a
// struct, and reports whether that succeeded.
func decodeObjectAt(raw []byte, i int, v any) bool {
	i = openai.SkipSpace(raw, i)
	switch {
	case i == len(raw):
		return false
	case raw[i] == '{':
		end := openai.ValueEnd(raw, i)
		return end > 0 && json.Unmarshal(raw[i:end], v) == nil
	}
	// null leaves v as it is; any other value is a syntax or type error.
	return bytes.HasPrefix(raw[i:], []byte("null"))
}

// decodeFloatAt decodes the JSON value at raw[i:] into *f when it is a
// number that fits; any other value leaves *f as it is, as the decoder does
// (null, or an error).
func decodeFloatAt(raw []byte, i int, f *float64) {
	i = openai.SkipSpace(raw, i)
	end := openai.NumberEnd(raw, i)
	if end < 0 {
		return
	}
	if v, err := strconv.ParseFloat(string(raw[i:end]), 64); err == nil {
		*f = v
	}
}
