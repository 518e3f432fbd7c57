package server

import (
	"context"
	"time"

	"github.com/raygw/raygw/internal/engine/openaicompat"
	"github.com/raygw/raygw/internal/openai"
)

// Per-message template overhead assumed by the cheap bound; the exact path
// renders the real template.
const templateTokensPerMessage = 16

func durationMS(ms int) time.Duration { return time.Duration(ms) * time.Millisecond }

// checkContext refuses a request whose prompt plus output cap cannot fit the
// context window (413 with the numbers). A token is at least one byte, so
// the byte length is an upper bound on the prompt's tokens: short prompts
// pass with no engine call, and only prompts near the limit are counted
// exactly with the engine's own template and tokenizer.
func (s *Server) checkContext(ctx context.Context, c *openaicompat.Client, j *job) error {
	window := j.backend.ContextWindow()
	if window <= 0 {
		return nil
	}
	if j.outputCap >= window {
		return openai.TooLarge("context_length_exceeded",
			"max_tokens (%d) must be smaller than the model's context window of %d tokens", j.outputCap, window)
	}
	upper := len(j.promptText) + templateTokensPerMessage*j.messages + 2
	if upper+j.outputCap <= window {
		return nil
	}
	n, err := s.countPromptTokens(ctx, c, j)
	if err != nil {
		// The engine cannot count (not llama.cpp, or busy): let it decide;
		// its own overflow error is mapped to 413 as well.
		s.log.Debug("prompt token count unavailable", "err", err)
		return nil
	}
	if n+j.outputCap > window {
		return openai.TooLarge("context_length_exceeded",
			"prompt (%d tokens) + max_tokens (%d) = %d tokens exceeds the model's context window of %d tokens",
			n, j.outputCap, n+j.outputCap, window)
	}
	return nil
}

// countPromptTokens counts the prompt exactly with llama-server's
// /apply-template and /tokenize endpoints.
func (s *Server) countPromptTokens(ctx context.Context, c *openaicompat.Client, j *job) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	prompt := j.promptText
	if req, ok := j.body.(*openai.ChatRequest); ok {
		var out struct {
			Prompt string `json:"prompt"`
		}
		if err := postJSON(ctx, c, "/apply-template", map[string]any{"messages": req.Messages}, &out); err != nil {
			return 0, err
		}
		prompt = out.Prompt
	}
	var tok struct {
		Tokens []int `json:"tokens"`
	}
	if err := postJSON(ctx, c, "/tokenize", map[string]any{"content": prompt, "add_special": true}, &tok); err != nil {
		return 0, err
	}
	return len(tok.Tokens), nil
}
