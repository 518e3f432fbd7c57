package server

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/raygw/raygw/internal/openai"
)

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	switch {
	case s.draining.Load():
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "draining"})
	case !s.backend.Ready():
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "engine not ready"})
	default:
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	}
}

type modelEntry struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request) error {
	list := []modelEntry{{ID: s.cfg.Model.ID, Object: "model", Created: 0, OwnedBy: "raygw"}}
	if s.deps != nil {
		for _, m := range s.deps.Models() {
			list = append(list, modelEntry{ID: m, Object: "model", OwnedBy: "raygw"})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": list})
	return nil
}

// readBody reads a JSON request body within the configured limit. The limit
// is enforced while reading: an oversized body is never buffered whole.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" && ct != "application/json" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return nil, &openai.Error{Status: http.StatusUnsupportedMediaType, Type: "invalid_request_error",
				Message: "Content-Type must be application/json"}
		}
	}
	limit := s.cfg.Request.BodyLimitBytes
	if r.ContentLength > limit {
		return nil, tooLargeBody(limit)
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(30 * time.Second))
	body, err := readLimited(http.MaxBytesReader(w, r.Body, limit), r.ContentLength)
	if err == nil {
		_ = rc.SetReadDeadline(time.Time{}) // streams may run long
	} else {
		// Keep the deadline and drop the connection: the server must not
		// go on draining a slow or oversized body after answering.
		w.Header().Set("Connection", "close")
	}
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLargeBody(limit)
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, &openai.Error{Status: http.StatusRequestTimeout, Type: "invalid_request_error",
				Code: "request_timeout", Message: "the request body was not received in time", Cause: err}
		}
		return nil, &openai.Error{Status: http.StatusBadRequest, Type: "invalid_request_error",
			Message: "the request body could not be read", Cause: err}
	}
	if len(body) == 0 {
		return nil, openai.BadRequest("", "request body is empty; send a JSON object")
	}
	return body, nil
}

func tooLargeBody(limit int64) error {
	return openai.TooLarge("request_too_large", "request body is larger than the %d-byte limit", limit)
}

// resolveModel checks the requested model against the served one.
func (s *Server) resolveModel(name string) error {
	if name == s.cfg.Model.ID {
		return nil
	}
	for _, a := range s.cfg.Model.Aliases {
		if name == a {
			return nil
		}
	}
	return openai.NotFound("model_not_found", "the model %q does not exist; this gateway serves %q", name, s.cfg.Model.ID)
}

// capOutput applies RAY_MODEL_MAX_OUTPUT_TOKENS and returns the effective cap.
func (s *Server) capOutput(sp *openai.Sampling) int {
	max := s.cfg.Model.MaxOutputTokens
	n, ok := sp.OutputCap()
	if !ok || n > max {
		n = max
	}
	sp.SetOutputCap(n)
	return n
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// readLimited reads r to EOF into a buffer sized from the declared length
// (already checked against the limit), so a typical body is read without
// regrowing.
func readLimited(r io.Reader, declared int64) ([]byte, error) {
	if declared <= 0 {
		return io.ReadAll(r)
	}
	b := make([]byte, 0, declared+1) // +1: room to see EOF without regrowing
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // the body was longer than declared
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}
