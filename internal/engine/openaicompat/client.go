// Package openaicompat is the client for an OpenAI-compatible engine
// (llama-server, vLLM, or any external endpoint). It sends one request and
// classifies failures into the gateway's error classes: engine down (503),
// timeout (504), or the engine's own 4xx passed on as an OpenAI error.
package openaicompat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/raygw/raygw/internal/openai"
)

// ErrEngineDown means the engine could not be reached before any byte was sent.
var ErrEngineDown = errors.New("engine unreachable")

// Client talks to one engine base URL.
type Client struct {
	BaseURL string
	APIKey  string // upstream Bearer token; never the client's
	HTTP    *http.Client
}

// NewTransport returns a transport tuned for one local engine: kept-alive
// connections, no proxy, no compression.
func NewTransport() *http.Transport {
	return &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 3 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		// Shorter than llama-server's 5 s keep-alive, so the gateway drops an
		// idle connection before the engine does.
		IdleConnTimeout:    4 * time.Second,
		DisableCompression: true,
		ForceAttemptHTTP2:  false,
	}
}

// jsonContentType is the Content-Type header value of every Post, shared
// read-only (a header's value slice is replaced, never written in place).
var jsonContentType = []string{"application/json"}

// New returns a client for baseURL with a shared transport.
func New(baseURL, apiKey string, tr http.RoundTripper) *Client {
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), APIKey: apiKey, HTTP: &http.Client{Transport: tr}}
}

// Post sends body to path and returns the response when the engine answered
// 2xx. Other outcomes become *openai.Error values. The caller closes the body.
func (c *Client) Post(ctx context.Context, path string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.BaseURL+path, bytes.NewReader(body))
	if err != nil {
		return nil, openai.Internal(err)
	}
	req.Header["Content-Type"] = jsonContentType
	// A generation changes no engine state, so the request may be replayed
	// when the engine closed a kept-alive connection just as it was reused.
	// A nil header value marks it replayable and is never sent.
	req.Header["X-Idempotency-Key"] = nil
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, Classify(ctx, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, upstreamError(resp)
}

// Get fetches path and decodes a JSON answer into v.
func (c *Client) Get(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.BaseURL+path, nil)
	if err != nil {
		return err
	}
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return Classify(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return upstreamError(resp)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(v)
}

// Classify maps a transport error to the gateway's error classes.
func Classify(ctx context.Context, err error) error {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		return openai.Timeout(err, "the model did not answer in time")
	case errors.Is(err, context.Canceled):
		return err // the client went away; nobody reads an answer
	case IsConnectError(err):
		return openai.Unavailable(2, fmt.Errorf("%w: %v", ErrEngineDown, err), "the model engine is not available; retry shortly")
	}
	return openai.Unavailable(2, err, "the model engine failed to answer")
}

// IsConnectError reports whether err happened before any request byte could
// reach the engine (connection refused or reset while dialing), so a retry on
// another replica is safe.
func IsConnectError(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

// upstreamError turns an engine's non-2xx answer into an OpenAI error,
// keeping its message and mapping context overflow to 413.
func upstreamError(resp *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var env struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		} `json:"error"`
	}
	_ = json.Unmarshal(raw, &env)
	msg := env.Error.Message
	if msg == "" {
		msg = strings.TrimSpace(string(raw))
	}
	if len(msg) > 500 {
		msg = msg[:500]
	}
	switch {
	case env.Error.Type == "exceed_context_size_error":
		return openai.TooLarge("context_length_exceeded", "the request does not fit the model's context: %s", msg)
	case resp.StatusCode == http.StatusServiceUnavailable:
		return openai.Unavailable(2, fmt.Errorf("engine 503: %s", msg), "the model engine is loading or busy; retry shortly")
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		return &openai.Error{Status: resp.StatusCode, Type: "invalid_request_error", Message: "the model engine rejected the request: " + msg}
	}
	return &openai.Error{Status: http.StatusBadGateway, Type: "server_error", Code: "engine_error",
		Message: "the model engine failed", Cause: fmt.Errorf("engine %d: %s", resp.StatusCode, msg)}
}
