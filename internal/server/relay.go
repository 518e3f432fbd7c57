package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/raygw/raygw/internal/engine/openaicompat"
	"github.com/raygw/raygw/internal/openai"
)

// maxResponseBytes bounds a non-streaming engine answer.
const maxResponseBytes = 16 << 20

func postJSON(ctx context.Context, c *openaicompat.Client, path string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	resp, err := c.Post(ctx, path, b)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(io.LimitReader(resp.Body, maxResponseBytes)).Decode(out)
}

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
		_ = json.NewDecoder(bytes.NewReader(raw[i+len(`"predicted_per_second":`):])).Decode(&j.usage.tps)
	}
	s.metrics.Tokens.WithLabelValues("prompt").Add(float64(prompt))
	s.metrics.Tokens.WithLabelValues("completion").Add(float64(completion))
	if j.stages.Tokens != nil && prompt > 0 {
		j.stages.Tokens.Observe(len([]rune(j.promptText)), prompt)
	}
}

// streamFailed reports a broken stream in-band to a client that is still there.
func (s *Server) streamFailed(ctx context.Context, out *openai.SSEWriter, err error) {
	if errors.Is(ctx.Err(), context.Canceled) || errors.Is(err, context.Canceled) {
		return
	}
	var e *openai.Error
	if !errors.As(err, &e) {
		e = openai.AsError(openaicompat.Classify(ctx, err))
	}
	s.log.Warn("stream interrupted", "err", err)
	msg, _ := json.Marshal(openai.Envelope{Error: openai.EnvelopeBody{Message: e.Message, Type: e.Type, Code: &e.Code}})
	_ = out.Data(msg)
}

// renameModel shows clients the model name they asked for, not the engine's
// internal alias.
func (s *Server) renameModel(b []byte) []byte {
	if s.upstreamModel == nil {
		return b
	}
	return bytes.Replace(b, s.upstreamModel, s.clientModel, 1)
}
