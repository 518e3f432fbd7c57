// Package upstream owns a tiny OpenAI-compatible test server with a fixed
// latency and no model: the stand-in upstream that measures raygw's own
// proxy overhead and capacity (`raygw bench upstream`).
package upstream

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/raygw/raygw/internal/openai"
)

// Options shape the fake engine's answers.
type Options struct {
	// Latency is waited before the first byte of every completion.
	Latency time.Duration
	// TokenInterval is waited between streamed tokens (0: none).
	TokenInterval time.Duration
	// Tokens is the completion length when a request sets no max_tokens.
	Tokens int
	// Model is the id reported by /v1/models and in responses.
	Model string
	// Token is the text of every generated token.
	Token string
}

func (o *Options) defaults() {
	if o.Tokens <= 0 {
		o.Tokens = 16
	}
	if o.Model == "" {
		o.Model = "bench-upstream"
	}
	if o.Token == "" {
		o.Token = "tok "
	}
}

// Server is the fake engine's handler.
type Server struct {
	opts     Options
	mux      *http.ServeMux
	models   []byte
	chatTok  []byte // pre-rendered chat chunk of one token
	textTok  []byte // pre-rendered text-completion chunk of one token
	maxBody  int64
	maxToken int
}

// New returns the fake engine with its routes registered.
func New(opts Options) *Server {
	opts.defaults()
	s := &Server{opts: opts, mux: http.NewServeMux(), maxBody: 1 << 20, maxToken: 8192}
	s.models, _ = json.Marshal(map[string]any{"object": "list", "data": []map[string]any{
		{"id": opts.Model, "object": "model", "owned_by": "raygw-bench"}}})
	s.chatTok, _ = json.Marshal(chunk{ID: "chatcmpl-bench", Object: "chat.completion.chunk", Model: opts.Model,
		Choices: []choice{{Delta: &delta{Content: opts.Token}}}})
	s.textTok, _ = json.Marshal(chunk{ID: "cmpl-bench", Object: "text_completion", Model: opts.Model,
		Choices: []choice{{Text: opts.Token}}})
	s.mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"status":"ok"}`)
	})
	s.mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(s.models)
	})
	s.mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { s.complete(w, r, true) })
	s.mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { s.complete(w, r, false) })
	return s
}

// ServeHTTP serves the fake engine's routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

type request struct {
	Stream    bool `json:"stream"`
	MaxTokens *int `json:"max_tokens"`
	// Messages and Prompt are only measured, to report a prompt size.
	Messages []struct {
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Prompt json.RawMessage `json:"prompt"`
}

func (s *Server) complete(w http.ResponseWriter, r *http.Request, chat bool) {
	body, err := io.ReadAll(io.LimitReader(r.Body, s.maxBody+1))
	if err != nil || int64(len(body)) > s.maxBody {
		openai.WriteError(w, openai.BadRequest("", "request body unreadable or too large"))
		return
	}
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		openai.WriteError(w, openai.BadRequest("", "request body is not valid JSON"))
		return
	}
	n := s.opts.Tokens
	if req.MaxTokens != nil && *req.MaxTokens > 0 {
		n = min(*req.MaxTokens, s.maxToken)
	}
	promptN := len(req.Prompt) / 4
	for _, m := range req.Messages {
		promptN += len(m.Content) / 4
	}
	if !s.wait(r, s.opts.Latency) {
		return
	}
	if req.Stream {
		s.stream(w, r, chat, n, promptN)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	text := strings.Repeat(s.opts.Token, n)
	resp := chunk{ID: "chatcmpl-bench", Object: "chat.completion", Model: s.opts.Model,
		Usage:   &usage{PromptTokens: promptN, CompletionTokens: n, TotalTokens: promptN + n},
		Timings: &timings{PromptN: promptN, PredictedN: n}}
	if chat {
		resp.Choices = []choice{{Message: &delta{Role: "assistant", Content: text}, FinishReason: ptr("length")}}
	} else {
		resp.Object = "text_completion"
		resp.Choices = []choice{{Text: text, FinishReason: ptr("length")}}
	}
	json.NewEncoder(w).Encode(resp)
}

func (s *Server) stream(w http.ResponseWriter, r *http.Request, chat bool, n, promptN int) {
	openai.SSEHeaders(w.Header())
	sw := openai.NewSSEWriter(w)
	tok := s.textTok
	if chat {
		tok = s.chatTok
	}
	for i := 0; i < n; i++ {
		if i > 0 && !s.wait(r, s.opts.TokenInterval) {
			return
		}
		if err := sw.Data(tok); err != nil {
			return
		}
	}
	last := chunk{ID: "chatcmpl-bench", Object: "chat.completion.chunk", Model: s.opts.Model,
		Choices: []choice{{FinishReason: ptr("length")}},
		Usage:   &usage{PromptTokens: promptN, CompletionTokens: n, TotalTokens: promptN + n},
		Timings: &timings{PromptN: promptN, PredictedN: n}}
	if chat {
		last.Choices[0].Delta = &delta{}
	} else {
		last.Object = "text_completion"
	}
	b, _ := json.Marshal(last)
	if sw.Data(b) == nil {
		_ = sw.Done()
	}
}

// wait sleeps d unless the client goes away first; it reports whether to go on.
func (s *Server) wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

type chunk struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Model   string   `json:"model"`
	Choices []choice `json:"choices"`
	Usage   *usage   `json:"usage,omitempty"`
	Timings *timings `json:"timings,omitempty"`
}

type choice struct {
	Index        int     `json:"index"`
	Delta        *delta  `json:"delta,omitempty"`
	Message      *delta  `json:"message,omitempty"`
	Text         string  `json:"text,omitempty"`
	FinishReason *string `json:"finish_reason"`
}

type delta struct {
	Role    string `json:"role,omitempty"`
	Content string `json:"content,omitempty"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type timings struct {
	CacheN     int `json:"cache_n"`
	PromptN    int `json:"prompt_n"`
	PredictedN int `json:"predicted_n"`
}

func ptr[T any](v T) *T { return &v }
