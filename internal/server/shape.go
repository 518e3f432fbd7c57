package server

import (
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/raygw/raygw/internal/adaptive"
	"github.com/raygw/raygw/internal/degrade"
	"github.com/raygw/raygw/internal/openai"
)

// Response headers of the shaping stages.
const (
	headerDegraded  = "X-Ray-Degraded"
	headerOutputCap = "X-Ray-Output-Cap"
)

// shape applies graceful degradation (refuse or clamp under pressure) and
// the adaptive output cap to a job before it is keyed, queued and sent.
func (s *Server) shape(w http.ResponseWriter, j *job, sp *openai.Sampling) error {
	n := j.outputCap
	if p := j.stages.Degrade; p != nil {
		d := p.Decide()
		if d.Level != degrade.None {
			w.Header().Set(headerDegraded, d.Header())
		}
		if err := d.Check(utf8.RuneCountInString(j.promptText)); err != nil {
			return refusal(err)
		}
		n = d.ClampMaxTokens(n)
	}
	if t := j.stages.Adaptive; t != nil {
		var reason string
		if n, reason = t.Cap(j.family, n); reason != "requested" {
			w.Header().Set(headerOutputCap, strconv.Itoa(n)+"; "+reason)
		}
	}
	if n != j.outputCap {
		j.outputCap = n
		sp.SetOutputCap(n)
	}
	return nil
}

// refusal renders a degradation refusal as an OpenAI error.
func refusal(err error) error {
	r, ok := err.(*degrade.Refusal)
	if !ok {
		return openai.Internal(err)
	}
	e := &openai.Error{Status: r.Status, Type: "server_error", Code: "overloaded", Message: r.Message, Cause: r.Err}
	if r.Status == http.StatusRequestEntityTooLarge {
		e.Type, e.Code = "invalid_request_error", "prompt_too_long_under_load"
	}
	if secs := r.RetryAfterSeconds(); secs > 0 {
		e.Header = http.Header{"Retry-After": {strconv.Itoa(secs)}}
	}
	return e
}

// observe teaches the adaptive tuner from an answer the engine produced.
func (s *Server) observe(j *job, a *answer) {
	t := j.stages.Adaptive
	if t == nil || a == nil || j.usage.completion == 0 {
		return
	}
	t.Observe(adaptive.Sample{Family: j.family, Requested: j.outputCap, CompletionTokens: j.usage.completion,
		FinishReason: j.usage.finish, QueueDelay: msDuration(a.meta.QueueMS), TokensPerSecond: j.usage.tps})
}
