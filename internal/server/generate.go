package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/raygw/raygw/internal/openai"
)

// job is one validated generation request on its way to the engine.
type job struct {
	route      string // metrics label
	path       string // engine path
	stream     bool
	outputCap  int
	promptText string // text used for the context-window check
	messages   int    // chat messages (template overhead), 0 for completions
	body       any    // what is marshalled upstream
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	req, err := openai.DecodeChat(body, s.limits)
	if err != nil {
		return err
	}
	if err := s.resolveModel(req.Model); err != nil {
		return err
	}
	var text strings.Builder
	for _, m := range req.Messages {
		text.WriteString(m.Content.String())
		text.WriteByte('\n')
	}
	j := &job{route: "chat", path: "/v1/chat/completions", stream: req.Stream, outputCap: s.capOutput(&req.Sampling),
		promptText: text.String(), messages: len(req.Messages), body: req}
	s.prepareUpstream(&req.Sampling, &req.Extra)
	return s.generate(w, r, j)
}

func (s *Server) completions(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	req, err := openai.DecodeCompletion(body, s.limits)
	if err != nil {
		return err
	}
	if err := s.resolveModel(req.Model); err != nil {
		return err
	}
	j := &job{route: "completions", path: "/v1/completions", stream: req.Stream, outputCap: s.capOutput(&req.Sampling),
		promptText: req.PromptText, body: req}
	s.prepareUpstream(&req.Sampling, &req.Extra)
	return s.generate(w, r, j)
}

// prepareUpstream rewrites what the engine must see: its own model name and
// llama.cpp prompt caching.
func (s *Server) prepareUpstream(sp *openai.Sampling, extra *map[string]json.RawMessage) {
	if ref := s.cfg.Model.Ref; ref != "" {
		sp.Model = ref
	}
	// llama.cpp's native length fields would bypass the output cap.
	for _, k := range []string{"n_predict", "max_new_tokens"} {
		delete(*extra, k)
	}
	if s.cfg.LlamaCpp.CachePrompt {
		if *extra == nil {
			*extra = map[string]json.RawMessage{}
		}
		if _, set := (*extra)["cache_prompt"]; !set {
			(*extra)["cache_prompt"] = json.RawMessage("true")
		}
	}
}

// generate runs a job on the engine and writes the answer.
func (s *Server) generate(w http.ResponseWriter, r *http.Request, j *job) error {
	client, err := s.backend.Client()
	if err != nil {
		return err
	}
	if err := s.checkContext(r.Context(), client, j); err != nil {
		return err
	}
	payload, err := json.Marshal(j.body)
	if err != nil {
		return openai.Internal(err)
	}
	ctx, cancel := context.WithTimeout(r.Context(), durationMS(s.cfg.Model.TimeoutMS))
	defer cancel()
	start := s.now()
	resp, err := client.Post(ctx, j.path, payload)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if j.stream {
		return s.relayStream(ctx, w, resp, j, start)
	}
	return s.relayJSON(ctx, w, resp, j)
}
