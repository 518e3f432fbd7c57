package deploy

import (
	"context"
	"encoding/json"
	"io"
	"time"

	"github.com/raygw/raygw/internal/engine/openaicompat"
	"github.com/raygw/raygw/internal/openai"
)

// tokensPerMessage is the chat-template overhead assumed per message.
const tokensPerMessage = 16

// CheckLength answers 413 when prompt + max_tokens exceeds the deployment's
// max model length. A token is at least one byte, so short prompts pass
// without an engine call; near the limit a llama.cpp replica counts the
// prompt exactly with its tokenizer, as does vLLM's /tokenize; external
// endpoints check it themselves.
func (t *Target) CheckLength(ctx context.Context, sp *openai.Sampling, prompt string, messages int) error {
	window := t.ContextWindow()
	if window <= 0 {
		return nil
	}
	out, ok := sp.OutputCap()
	if !ok {
		out = 0
	}
	if out >= window {
		return openai.TooLarge("context_length_exceeded",
			"max_tokens (%d) must be smaller than the deployment's max model length of %d tokens", out, window)
	}
	upper := len(prompt) + tokensPerMessage*messages + 2
	if upper+out <= window || t.Spec().ModelClass == ClassOpenAI {
		return nil
	}
	n, err := t.countTokens(ctx, prompt)
	if err != nil {
		return nil // the engine will refuse an overflow itself
	}
	n += tokensPerMessage * messages
	if n+out > window {
		return openai.TooLarge("context_length_exceeded",
			"prompt (%d tokens) + max_tokens (%d) = %d tokens exceeds the deployment's max model length of %d tokens",
			n, out, n+out, window)
	}
	return nil
}

// countTokens asks one healthy replica's /tokenize, outside the request
// metrics.
func (t *Target) countTokens(ctx context.Context, text string) (int, error) {
	addr := ""
	for _, e := range t.d.pool.Snapshot() {
		if e.Healthy && !e.Draining {
			addr = e.Address
			break
		}
	}
	if addr == "" {
		return 0, errNoReplica
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c := openaicompat.New(addr, t.d.client.APIKey, t.d.m.opt.Transport)
	req := map[string]any{"content": text, "add_special": true}
	if s := t.Spec(); s.ModelClass == ClassVLLM {
		req = map[string]any{"model": s.ModelName, "prompt": text}
	}
	b, _ := json.Marshal(req)
	resp, err := c.Post(ctx, "/tokenize", b)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var tok struct {
		Tokens []json.RawMessage `json:"tokens"`
		Count  *int              `json:"count"` // vLLM
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&tok); err != nil {
		return 0, err
	}
	if tok.Count != nil {
		return *tok.Count, nil
	}
	return len(tok.Tokens), nil
}
