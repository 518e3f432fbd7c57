package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

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

func (s *Server) recordUsage(raw []byte) {
	var u usage
	if json.Unmarshal(raw, &u) != nil {
		return
	}
	switch {
	case u.Timings != nil:
		s.metrics.Tokens.WithLabelValues("prompt").Add(float64(u.Timings.PromptN))
		s.metrics.Tokens.WithLabelValues("completion").Add(float64(u.Timings.PredictedN))
	case u.Usage != nil:
		s.metrics.Tokens.WithLabelValues("prompt").Add(float64(u.Usage.PromptTokens))
		s.metrics.Tokens.WithLabelValues("completion").Add(float64(u.Usage.CompletionTokens))
	}
}

// relayJSON copies a complete engine answer to the client.
func (s *Server) relayJSON(ctx context.Context, w http.ResponseWriter, resp *http.Response, j *job) error {
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return openaicompat.Classify(ctx, err)
	}
	s.recordUsage(body)
	body = s.renameModel(body)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	return nil
}

// relayStream copies the engine's event stream to the client event by event.
// Once the first event is out, failures are reported in-band as an error
// event, the way OpenAI clients expect them.
func (s *Server) relayStream(ctx context.Context, w http.ResponseWriter, resp *http.Response, j *job, start time.Time) error {
	openai.SSEHeaders(w.Header())
	w.WriteHeader(http.StatusOK)
	out := openai.NewSSEWriter(w)
	in := openai.NewSSEReader(resp.Body)
	first := true
	for {
		data, err := in.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF // the engine closed the stream without [DONE]
			}
			s.streamFailed(ctx, out, err)
			return nil
		}
		if bytes.Equal(data, openai.Done) {
			_ = out.Done()
			return nil
		}
		if first {
			first = false
			s.metrics.TTFT.WithLabelValues(j.route).Observe(s.now().Sub(start).Seconds())
		}
		if bytes.Contains(data, []byte(`"timings"`)) || bytes.Contains(data, []byte(`"usage"`)) {
			s.recordUsage(data)
		}
		if err := out.Data(s.renameModel(data)); err != nil {
			return nil // the client went away; ctx cancels the engine request
		}
	}
}

// streamFailed reports a broken stream to a client that is still there.
func (s *Server) streamFailed(ctx context.Context, out *openai.SSEWriter, err error) {
	if errors.Is(ctx.Err(), context.Canceled) {
		return
	}
	e := openai.AsError(openaicompat.Classify(ctx, err))
	if errors.Is(err, io.ErrUnexpectedEOF) {
		e = &openai.Error{Status: 502, Type: "server_error", Code: "engine_stream_interrupted",
			Message: "the model engine stopped in the middle of the answer", Cause: err}
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
