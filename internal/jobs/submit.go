package jobs

import (
	"bytes"
	"encoding/json"
	"errors"
	"sort"
	"strings"

	"github.com/raygw/raygw/internal/jobs/callback"
	"github.com/raygw/raygw/internal/openai"
)

// submitFields are the fields of a POST /v1/jobs body.
var submitFields = map[string]bool{"endpoint": true, "body": true, "callback_url": true}

// DecodeSubmission reads and validates a POST /v1/jobs body:
//
//	{"endpoint": "/v1/chat/completions", "body": {...}, "callback_url": "https://..."}
//
// body is validated exactly as the synchronous endpoint would validate it
// (lim), must not ask to stream, and is stored compacted. A bad request is
// an *openai.Error (400) naming the field; fields of body are named
// "body.<field>".
func DecodeSubmission(raw []byte, lim openai.Limits, policy callback.Policy) (Submission, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return Submission{}, openai.BadRequest("", "request body must be a JSON object with endpoint and body")
	}
	if unknown := unknownFields(fields); len(unknown) > 0 {
		return Submission{}, openai.BadRequest(unknown[0], "unknown field %q: a job has endpoint, body and callback_url", unknown[0])
	}
	var s Submission
	if err := decodeString(fields, "endpoint", &s.Endpoint); err != nil {
		return Submission{}, err
	}
	switch s.Endpoint {
	case EndpointChat, EndpointCompletion:
	case "":
		return Submission{}, openai.BadRequest("endpoint", "endpoint is required: %s or %s", EndpointChat, EndpointCompletion)
	default:
		return Submission{}, openai.BadRequest("endpoint", "endpoint must be %s or %s", EndpointChat, EndpointCompletion)
	}
	body, err := decodeBody(s.Endpoint, fields["body"], lim)
	if err != nil {
		return Submission{}, err
	}
	s.Body = body
	if err := decodeString(fields, "callback_url", &s.CallbackURL); err != nil {
		return Submission{}, err
	}
	if s.CallbackURL != "" {
		if err := checkCallback(s.CallbackURL, policy); err != nil {
			return Submission{}, err
		}
	}
	return s, nil
}

func unknownFields(fields map[string]json.RawMessage) []string {
	var out []string
	for k := range fields {
		if !submitFields[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// decodeString reads an optional string field; null counts as absent.
func decodeString(fields map[string]json.RawMessage, name string, dst *string) error {
	v, ok := fields[name]
	if !ok || string(v) == "null" {
		return nil
	}
	if err := json.Unmarshal(v, dst); err != nil {
		return openai.BadRequest(name, "%s must be a string", name)
	}
	return nil
}

// decodeBody validates the inner request with the synchronous decoders.
func decodeBody(endpoint string, v json.RawMessage, lim openai.Limits) ([]byte, error) {
	if len(v) == 0 || string(v) == "null" {
		return nil, openai.BadRequest("body", "body is required: the %s request object", endpoint)
	}
	if v[0] != '{' {
		return nil, openai.BadRequest("body", "body must be a JSON object: the %s request", endpoint)
	}
	var stream bool
	var err error
	if endpoint == EndpointChat {
		var r *openai.ChatRequest
		if r, err = openai.DecodeChat(v, lim); err == nil {
			stream = r.Stream
		}
	} else {
		var r *openai.CompletionRequest
		if r, err = openai.DecodeCompletion(v, lim); err == nil {
			stream = r.Stream
		}
	}
	if err != nil {
		return nil, prefixParam(err)
	}
	if stream {
		return nil, openai.BadRequest("body.stream", "streaming is not available for jobs: omit stream, then poll GET /v1/jobs/{id} or set callback_url")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, v); err != nil {
		return nil, openai.BadRequest("body", "body is not valid JSON")
	}
	return buf.Bytes(), nil
}

// prefixParam names a field of the inner request as body.<field>.
func prefixParam(err error) error {
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.Status != 400 {
		return err
	}
	c := *oe
	if c.Param == "" {
		c.Param = "body"
	} else {
		c.Param = "body." + c.Param
	}
	if !strings.HasPrefix(c.Message, "body") {
		c.Message = "body: " + c.Message
	}
	return &c
}

// checkCallback validates callback_url against the policy.
func checkCallback(raw string, policy callback.Policy) error {
	_, err := policy.CheckURL(raw)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, callback.ErrDisabled):
		return openai.BadRequest("callback_url", "callbacks are disabled on this raygw gateway: no callback host is allowed (RAY_ASYNC_QUEUE_CALLBACK_ALLOWED_HOSTS is empty)")
	case errors.Is(err, callback.ErrHostNotAllowed):
		return openai.BadRequest("callback_url", "callback_url host is not allowed by this raygw gateway (RAY_ASYNC_QUEUE_CALLBACK_ALLOWED_HOSTS)")
	default:
		return openai.BadRequest("callback_url", "callback_url: %v", err)
	}
}
