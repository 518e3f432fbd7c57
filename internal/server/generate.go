package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/raygw/raygw/internal/auth"
	"github.com/raygw/raygw/internal/openai"
	"github.com/raygw/raygw/internal/promptc"
	"github.com/raygw/raygw/internal/respcache"
	"github.com/raygw/raygw/internal/routing"
)

// job is one validated generation request on its way to the engine.
type job struct {
	route      string // metrics label
	path       string // engine path
	stream     bool
	outputCap  int
	promptText string // text used for token estimates and the context check
	messages   int    // chat messages (template overhead), 0 for completions
	body       any    // what is marshalled upstream
	backend    Backend
	stages     *Stages
	extra      *map[string]json.RawMessage
	prefix     uint64 // prompt-prefix hash for slot affinity
	family     string
	cacheKey   respcache.Key
	cacheable  bool
	dedupeKey  string // "" when the request is not deterministic
	usage      usageInfo
}

// usageInfo is what the engine reported about one answer.
type usageInfo struct {
	prompt, completion int
	finish             string  // "length" when cut at the cap
	tps                float64 // decode tokens/s, 0 when unknown
}

// decodeFor reads a request body, decodes it with decode and picks the
// target that serves its model.
func decodeFor[R any](s *Server, w http.ResponseWriter, r *http.Request,
	decode func([]byte, openai.Limits) (R, error), model func(R) (string, map[string]json.RawMessage)) (R, target, error) {
	var zero R
	body, err := s.readBody(w, r)
	if err != nil {
		return zero, target{}, err
	}
	req, err := decode(body, s.limits)
	if err != nil {
		return zero, target{}, err
	}
	name, extra := model(req)
	tg, err := s.pick(r, name, extra)
	return req, tg, err
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) error {
	req, tg, err := decodeFor(s, w, r, openai.DecodeChat,
		func(q *openai.ChatRequest) (string, map[string]json.RawMessage) { return q.Model, q.Extra })
	if err != nil {
		return err
	}
	var res promptc.Result
	if tg.stages.Compiler != nil {
		res = tg.stages.Compiler.Chat(req)
	}
	var text strings.Builder
	n := 0
	for _, m := range req.Messages {
		n += len(m.Content.String()) + 1
	}
	text.Grow(n)
	for _, m := range req.Messages {
		text.WriteString(m.Content.String())
		text.WriteByte('\n')
	}
	j := &job{route: "chat", path: "/v1/chat/completions", stream: req.Stream,
		promptText: text.String(), messages: len(req.Messages), body: req}
	key := func(st respcache.Strategy) (respcache.Key, bool) { return respcache.ChatKey(st, tenant(r), req) }
	return s.submit(w, r, tg, j, res, &req.Sampling, &req.Extra, key)
}

func (s *Server) completions(w http.ResponseWriter, r *http.Request) error {
	req, tg, err := decodeFor(s, w, r, openai.DecodeCompletion,
		func(q *openai.CompletionRequest) (string, map[string]json.RawMessage) { return q.Model, q.Extra })
	if err != nil {
		return err
	}
	var res promptc.Result
	if tg.stages.Compiler != nil {
		res = tg.stages.Compiler.Completion(req)
	}
	j := &job{route: "completions", path: "/v1/completions", stream: req.Stream, promptText: req.PromptText, body: req}
	key := func(st respcache.Strategy) (respcache.Key, bool) { return respcache.CompletionKey(st, tenant(r), req) }
	return s.submit(w, r, tg, j, res, &req.Sampling, &req.Extra, key)
}

// submit runs the stages shared by chat and text completions: output caps
// (configured, degraded, adaptive), cache and dedupe keys computed on the
// final request, the upstream rewrite, then generation.
func (s *Server) submit(w http.ResponseWriter, r *http.Request, tg target, j *job, res promptc.Result,
	sp *openai.Sampling, extra *map[string]json.RawMessage, key func(respcache.Strategy) (respcache.Key, bool)) error {
	j.extra, j.backend, j.stages = extra, tg.backend, tg.stages
	j.prefix, j.family = res.PrefixKey, res.Family
	j.outputCap = s.capOutput(sp)
	if err := s.shape(w, j, sp); err != nil {
		return err
	}
	strategy := respcache.Strategy(s.cfg.Cache.KeyStrategy)
	scopeModel(tg, sp, *extra) // prepare sets the upstream model afterwards
	if tg.stages.Cache != nil {
		j.cacheKey, j.cacheable = key(strategy)
	}
	if tg.stages.Dedupe != nil {
		if j.cacheable && strategy == respcache.InputParams {
			j.dedupeKey = string(j.cacheKey[:]) // the same key; no second hash
		} else if k, ok := key(respcache.InputParams); ok {
			j.dedupeKey = string(k[:])
		}
	}
	s.prepare(tg, sp, extra)
	if tg.dep != nil {
		// The deployment's router sends a prefix back to the replica that
		// has it in its prompt cache.
		r = r.WithContext(routing.WithPrefix(r.Context(), j.prefix))
	}
	return s.generate(w, r, j)
}

// prepare rewrites the upstream request for its target.
func (s *Server) prepare(tg target, sp *openai.Sampling, extra *map[string]json.RawMessage) {
	if tg.dep != nil {
		prepareTarget(tg, sp, extra)
		return
	}
	s.prepareUpstream(sp, extra)
}

// tenant scopes cached answers: the client key's fingerprint when auth is on.
func tenant(r *http.Request) string {
	fp, _ := auth.FromContext(r.Context())
	return fp
}

// prepareUpstream rewrites what the engine must see: its own model name,
// no native length fields that would bypass the cap, and prompt caching.
func (s *Server) prepareUpstream(sp *openai.Sampling, extra *map[string]json.RawMessage) {
	if ref := s.cfg.Model.Ref; ref != "" {
		sp.Model = ref
	}
	if *extra == nil {
		*extra = map[string]json.RawMessage{}
	}
	for _, k := range []string{"n_predict", "max_new_tokens", "id_slot"} {
		delete(*extra, k)
	}
	if s.cfg.LlamaCpp.CachePrompt {
		if _, set := (*extra)["cache_prompt"]; !set {
			(*extra)["cache_prompt"] = json.RawMessage("true")
		}
	}
}

// generate serves a job: from the response cache, by joining an identical
// deterministic run already in flight, or by running it on the engine.
func (s *Server) generate(w http.ResponseWriter, r *http.Request, j *job) error {
	start := s.now()
	client, err := j.backend.Client()
	if err != nil {
		return err
	}
	if err := s.checkContext(r.Context(), client, j); err != nil {
		return err
	}
	if j.cacheable {
		if e, hit := j.stages.Cache.Get(j.cacheKey); hit {
			w.Header().Set(headerCache, "hit")
			return writeCached(w, e, j.stream)
		}
		w.Header().Set(headerCache, "miss")
	}
	k := &sink{s: s, w: w, j: j, start: start}
	if j.stages.Dedupe != nil && j.dedupeKey != "" {
		run := func(ctx context.Context, emit func([]byte)) (*answer, error) { return s.run(ctx, client, j, emit) }
		waiter, leader := j.stages.Dedupe.Join(r.Context(), j.dedupeKey, run)
		defer waiter.Leave()
		if !leader {
			w.Header().Set(headerDedupe, "follower")
		}
		return s.follow(r.Context(), k, waiter.Next, waiter.Result)
	}
	return s.runDirect(r.Context(), k, client)
}

// writeCached answers from a cache entry, as a stream when asked for one.
func writeCached(w http.ResponseWriter, e *respcache.Entry, stream bool) error {
	if stream {
		openai.SSEHeaders(w.Header())
		w.WriteHeader(http.StatusOK)
		return e.Replay(openai.NewSSEWriter(w))
	}
	w.Header().Set("Content-Type", e.ContentType)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(e.Body)
	return nil
}
