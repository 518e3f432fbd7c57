package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/raygw/raygw/internal/openai"
)

// Data is the deployments' OpenAI-compatible data path: /d/{name}/v1/...
// for one deployment and /v1/... choosing the deployment by model. It is
// the standalone path (tests, and gateways without the full pipeline).
type Data struct {
	M         *Manager
	BodyLimit int64         // default 8 MiB
	Timeout   time.Duration // per request; default 10 min
}

// Routes lists the data routes (client access).
func (h Data) Routes() []Route {
	return []Route{
		{"POST /d/{name}/v1/chat/completions", "deployment_chat", handle(h.chat)},
		{"POST /d/{name}/v1/completions", "deployment_completions", handle(h.completions)},
		{"GET /d/{name}/v1/models", "deployment_models", handle(h.models)},
		{"POST /v1/chat/completions", "chat", handle(h.chat)},
		{"POST /v1/completions", "completions", handle(h.completions)},
		{"GET /v1/models", "models", handle(h.models)},
	}
}

// Handler serves the API and data routes on one mux (no authentication:
// the server adds it when it registers the routes itself).
func Handler(m *Manager) http.Handler {
	mux := http.NewServeMux()
	for _, r := range append(API{M: m}.Routes(), Data{M: m}.Routes()...) {
		mux.Handle(r.Pattern, r.Handler)
	}
	return mux
}

// Resolve picks the target of a request: the /d/{name} deployment (whose
// model must match, optionally as "model:adapter"), else the deployment
// serving model. lora_name in extra selects an adapter as well.
func (m *Manager) Resolve(name, model string, extra map[string]json.RawMessage) (*Target, error) {
	var t *Target
	var err error
	if name != "" {
		if t, err = m.ByName(name); err != nil {
			return nil, err
		}
		if base := t.ModelName(); model != base {
			adapter, ok := strings.CutPrefix(model, base+":")
			if !ok {
				return nil, openai.NotFound("model_not_found", "deployment %s serves the model %q, not %q", name, base, model)
			}
			if err := t.SetAdapter(adapter); err != nil {
				return nil, err
			}
		}
	} else if t, err = m.Lookup(model); err != nil {
		return nil, err
	}
	if raw, ok := extra["lora_name"]; ok {
		var lora string
		if json.Unmarshal(raw, &lora) != nil {
			return nil, openai.BadRequest("lora_name", "lora_name must be a string")
		}
		if err := t.SetAdapter(lora); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func (h Data) chat(w http.ResponseWriter, r *http.Request) error {
	body, err := h.read(w, r)
	if err != nil {
		return err
	}
	req, err := openai.DecodeChat(body, openai.DefaultLimits)
	if err != nil {
		return err
	}
	t, err := h.M.Resolve(r.PathValue("name"), req.Model, req.Extra)
	if err != nil {
		return err
	}
	var text strings.Builder
	for _, m := range req.Messages {
		text.WriteString(m.Content.String())
		text.WriteByte('\n')
	}
	t.ApplyAdapter(&req.Model, &req.Extra)
	return h.forward(w, r, t, "/v1/chat/completions", req, &req.Sampling, text.String(), len(req.Messages))
}

func (h Data) completions(w http.ResponseWriter, r *http.Request) error {
	body, err := h.read(w, r)
	if err != nil {
		return err
	}
	req, err := openai.DecodeCompletion(body, openai.DefaultLimits)
	if err != nil {
		return err
	}
	t, err := h.M.Resolve(r.PathValue("name"), req.Model, req.Extra)
	if err != nil {
		return err
	}
	t.ApplyAdapter(&req.Model, &req.Extra)
	return h.forward(w, r, t, "/v1/completions", req, &req.Sampling, req.PromptText, 0)
}

// forward checks the length, routes the request and relays the answer.
func (h Data) forward(w http.ResponseWriter, r *http.Request, t *Target, path string, body any, sp *openai.Sampling, prompt string, messages int) error {
	if err := t.CheckLength(r.Context(), sp, prompt, messages); err != nil {
		t.Reject(http.StatusRequestEntityTooLarge)
		return err
	}
	client, err := t.Client()
	if err != nil {
		t.Reject(http.StatusServiceUnavailable)
		return err
	}
	payload, err := json.Marshal(body)
	if err != nil {
		return openai.Internal(err)
	}
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	resp, err := client.Post(ctx, path, payload)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return relay(w, resp)
}

// relay copies the engine's answer, flushing as it arrives (SSE streams).
func relay(w http.ResponseWriter, resp *http.Response) error {
	for _, k := range []string{"Content-Type", "Cache-Control"} {
		if v := resp.Header.Get(k); v != "" {
			w.Header().Set(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return nil // the client left; closing the body cancels upstream
			}
			_ = rc.Flush()
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return nil // headers are out; the client sees a cut stream
		}
	}
}

func (h Data) read(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	limit := h.BodyLimit
	if limit <= 0 {
		limit = 8 << 20
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, openai.TooLarge("request_too_large", "request body is larger than the %d-byte limit", limit)
		}
		return nil, openai.BadRequest("", "could not read the request body: %v", err)
	}
	return b, nil
}

func (h Data) models(w http.ResponseWriter, r *http.Request) error {
	var names []string
	if name := r.PathValue("name"); name != "" {
		t, err := h.M.ByName(name)
		if err != nil {
			return err
		}
		names = append(names, t.ModelName())
		for _, a := range t.Spec().EngineConfig.LoRAModules {
			names = append(names, t.ModelName()+":"+a.Name)
		}
	} else {
		names = h.M.Models()
	}
	list := make([]map[string]any, 0, len(names))
	for _, n := range names {
		list = append(list, map[string]any{"id": n, "object": "model", "created": 0, "owned_by": "raygw"})
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": list})
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
