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

// usage is the part of an answer that feeds token metrics.
type usage struct {
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Timings *struct {
		PromptN    int `json:"prompt_n"`
		PredictedN int `json:"predicted_n"`
	} `json:"timings"`
}

func (s *Server) recordUsage(j *job, raw []byte) {
	var u usage
	if json.Unmarshal(raw, &u) != nil {
		return
	}
	prompt, completion := 0, 0
	switch {
	case u.Usage != nil:
		prompt, completion = u.Usage.PromptTokens, u.Usage.CompletionTokens
	case u.Timings != nil:
		prompt, completion = u.Timings.PromptN, u.Timings.PredictedN
	default:
		return
	}
	s.metrics.Tokens.WithLabelValues("prompt").Add(float64(prompt))
	s.metrics.Tokens.WithLabelValues("completion").Add(float64(completion))
	if s.stages.Tokens != nil && prompt > 0 {
		s.stages.Tokens.Observe(len([]rune(j.promptText)), prompt)
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
