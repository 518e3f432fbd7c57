// Package e2e runs `raygw serve` in front of the real llama-server and calls
// it the way users do: with the official OpenAI SDKs and plain HTTP.
package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/raygw/raygw/internal/testenv"
)

func sdkClient(g *testenv.Gateway, key string) openai.Client {
	return openai.NewClient(option.WithBaseURL(g.URL+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0),
		option.WithRequestTimeout(60*time.Second))
}

func TestGoSDKAgainstRealEngine(t *testing.T) {
	g := testenv.StartGateway(t, testenv.GatewayEnv(t))
	client := sdkClient(g, "unused")
	ctx := context.Background()

	t.Run("models", func(t *testing.T) {
		page, err := client.Models.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Data) != 1 || page.Data[0].ID != "stories" {
			t.Fatalf("models = %+v", page.Data)
		}
	})

	t.Run("chat", func(t *testing.T) {
		resp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model:     "stories",
			Messages:  []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Once upon a time")},
			MaxTokens: openai.Int(12),
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Choices) != 1 || resp.Choices[0].Message.Content == "" {
			t.Fatalf("empty answer: %+v", resp)
		}
		if resp.Model != "stories" {
			t.Errorf("model = %q, want the requested name", resp.Model)
		}
		if resp.Usage.CompletionTokens < 1 || resp.Usage.CompletionTokens > 12 {
			t.Errorf("completion tokens = %d, want 1..12", resp.Usage.CompletionTokens)
		}
	})

	t.Run("chat stream", func(t *testing.T) {
		stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
			Model:     "stories",
			Messages:  []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Once upon a time")},
			MaxTokens: openai.Int(16),
		})
		var text strings.Builder
		chunks := 0
		for stream.Next() {
			c := stream.Current()
			chunks++
			if len(c.Choices) > 0 {
				text.WriteString(c.Choices[0].Delta.Content)
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if chunks < 3 || strings.TrimSpace(text.String()) == "" {
			t.Fatalf("chunks=%d text=%q", chunks, text.String())
		}
	})

	t.Run("completion", func(t *testing.T) {
		resp, err := client.Completions.New(ctx, openai.CompletionNewParams{
			Model:     "stories",
			Prompt:    openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon a time")},
			MaxTokens: openai.Int(10),
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Choices) != 1 || resp.Choices[0].Text == "" {
			t.Fatalf("empty answer: %+v", resp)
		}
	})

	t.Run("completion stream", func(t *testing.T) {
		stream := client.Completions.NewStreaming(ctx, openai.CompletionNewParams{
			Model:     "stories",
			Prompt:    openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon a time")},
			MaxTokens: openai.Int(10),
		})
		var text strings.Builder
		for stream.Next() {
			if c := stream.Current(); len(c.Choices) > 0 {
				text.WriteString(c.Choices[0].Text)
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if text.Len() == 0 {
			t.Fatal("no streamed text")
		}
	})

	t.Run("unknown model is 404 naming the served one", func(t *testing.T) {
		_, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model:    "gpt-4o",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		})
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "model_not_found" ||
			!strings.Contains(apiErr.Message, `"stories"`) {
			t.Fatalf("err = %v", err)
		}
	})
}
