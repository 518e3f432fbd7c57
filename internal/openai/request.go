package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Limits bound what a request may ask for.
type Limits struct {
	MaxN          int // choices per request
	MaxMessages   int
	MaxStop       int // stop sequences
	MaxStopLen    int // bytes per stop sequence
	MaxLogitBias  int // logit_bias entries
	MaxPrompts    int // prompts in a batch completion request
	MaxMetadata   int // metadata entries
	MaxTokensHard int // absolute ceiling for max_tokens before capping
}

// DefaultLimits are generous enough for real clients and small enough to
// keep one request from becoming a denial of service.
var DefaultLimits = Limits{MaxN: 1, MaxMessages: 256, MaxStop: 4, MaxStopLen: 256,
	MaxLogitBias: 300, MaxPrompts: 1, MaxMetadata: 16, MaxTokensHard: 1 << 20}

// Stop is a stop parameter: a string or a list of strings.
type Stop []string

// UnmarshalJSON accepts a string, a list of strings, or null.
func (s *Stop) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*s = nil
		return nil
	}
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*s = Stop{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return &fieldError{"stop", "stop must be a string or a list of strings"}
	}
	*s = many
	return nil
}

// fieldError is a decoding error of a field with a custom decoder.
type fieldError struct{ field, msg string }

func (e *fieldError) Error() string { return e.msg }

// ContentPart is one element of an array-form message content.
type ContentPart struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
}

// Content is message content: a plain string or a list of parts.
type Content struct {
	Text  string
	Parts []ContentPart // nil when the content was a string
	Null  bool
}

// UnmarshalJSON accepts a string, a list of text parts, or null.
func (c *Content) UnmarshalJSON(b []byte) error {
	*c = Content{}
	if string(b) == "null" {
		c.Null = true
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		if plainJSONText(b) {
			c.Text = string(b[1 : len(b)-1])
			return nil
		}
		return json.Unmarshal(b, &c.Text)
	}
	if err := json.Unmarshal(b, &c.Parts); err != nil {
		return &fieldError{"content", "message content must be a string or a list of content parts"}
	}
	if c.Parts == nil {
		c.Parts = []ContentPart{}
	}
	return nil
}

// MarshalJSON writes the form the content was received in.
func (c Content) MarshalJSON() ([]byte, error) {
	switch {
	case c.Null:
		return []byte("null"), nil
	case c.Parts != nil:
		return json.Marshal(c.Parts)
	}
	return appendJSONString(make([]byte, 0, len(c.Text)+2), c.Text), nil
}

// String joins the text of all parts.
func (c Content) String() string {
	if c.Parts == nil {
		return c.Text
	}
	var b strings.Builder
	for i, p := range c.Parts {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.Text)
	}
	return b.String()
}

// Message is one chat message.
type Message struct {
	Role       string          `json:"role"`
	Content    Content         `json:"content"`
	Name       string          `json:"name,omitempty"`
	ToolCalls  json.RawMessage `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

// Sampling holds the parameters shared by chat and text completions.
type Sampling struct {
	Model               string             `json:"model"`
	MaxTokens           *int               `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int               `json:"max_completion_tokens,omitempty"`
	Temperature         *float64           `json:"temperature,omitempty"`
	TopP                *float64           `json:"top_p,omitempty"`
	N                   *int               `json:"n,omitempty"`
	Stream              bool               `json:"stream,omitempty"`
	StreamOptions       json.RawMessage    `json:"stream_options,omitempty"`
	Stop                Stop               `json:"stop,omitempty"`
	Seed                *int64             `json:"seed,omitempty"`
	PresencePenalty     *float64           `json:"presence_penalty,omitempty"`
	FrequencyPenalty    *float64           `json:"frequency_penalty,omitempty"`
	LogitBias           map[string]float64 `json:"logit_bias,omitempty"`
	User                string             `json:"user,omitempty"`
	Metadata            map[string]string  `json:"metadata,omitempty"`
}

// ChatRequest is a POST /v1/chat/completions body.
type ChatRequest struct {
	Sampling
	Messages       []Message       `json:"messages"`
	ResponseFormat json.RawMessage `json:"response_format,omitempty"`
	Tools          json.RawMessage `json:"tools,omitempty"`
	ToolChoice     json.RawMessage `json:"tool_choice,omitempty"`
	Logprobs       *bool           `json:"logprobs,omitempty"`
	TopLogprobs    *int            `json:"top_logprobs,omitempty"`
	// Extra keeps the engine fields of EngineFields; they are forwarded
	// upstream. Other unknown fields are dropped.
	Extra map[string]json.RawMessage `json:"-"`
}

// CompletionRequest is a POST /v1/completions body.
type CompletionRequest struct {
	Sampling
	Prompt   json.RawMessage            `json:"prompt"`
	Echo     bool                       `json:"echo,omitempty"`
	Logprobs *int                       `json:"logprobs,omitempty"`
	Suffix   string                     `json:"suffix,omitempty"`
	Extra    map[string]json.RawMessage `json:"-"`
	// PromptText is the decoded prompt (a string, or a one-element list).
	PromptText string `json:"-"`
}

var chatFields = fieldSet(ChatRequest{})
var completionFields = fieldSet(CompletionRequest{})

// DecodeChat reads and validates a chat request body.
func DecodeChat(body []byte, lim Limits) (*ChatRequest, error) {
	var r ChatRequest
	extra, err := decode(body, &r, chatFields)
	if err != nil {
		return nil, err
	}
	r.Extra = extra
	if err := r.validate(lim); err != nil {
		return nil, err
	}
	return &r, nil
}

// DecodeCompletion reads and validates a text completion request body.
func DecodeCompletion(body []byte, lim Limits) (*CompletionRequest, error) {
	var r CompletionRequest
	extra, err := decode(body, &r, completionFields)
	if err != nil {
		return nil, err
	}
	r.Extra = extra
	if err := r.validate(lim); err != nil {
		return nil, err
	}
	return &r, nil
}

// MarshalJSON writes the modelled fields followed by the forwarded extras.
func (r *ChatRequest) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil) }

// AppendJSON appends the request as MarshalJSON encodes it, without the
// copies json.Marshal makes around a Marshaler.
func (r *ChatRequest) AppendJSON(dst []byte) ([]byte, error) {
	type plain ChatRequest
	return appendWithExtra(dst, (*plain)(r), r.Extra)
}

// MarshalJSON writes the modelled fields followed by the forwarded extras.
func (r *CompletionRequest) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil) }

// AppendJSON appends the request as MarshalJSON encodes it, without the
// copies json.Marshal makes around a Marshaler.
func (r *CompletionRequest) AppendJSON(dst []byte) ([]byte, error) {
	type plain CompletionRequest
	return appendWithExtra(dst, (*plain)(r), r.Extra)
}

// decode decodes body into v and returns the allowed engine fields among
// the members v does not model. One pass of encoding/json decodes v (and
// rejects malformed JSON); a light scan of the already valid object then
// collects the unknown member names without building a map of all members.
func decode(body []byte, v any, known map[string]bool) (map[string]json.RawMessage, error) {
	if err := checkBody(body); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return nil, jsonError(err)
	}
	// body is one valid JSON value; only an object is a request (null
	// decodes into a struct without error).
	if body[SkipSpace(body, 0)] != '{' {
		return nil, BadRequest("", "request body must be a JSON object")
	}
	extra, _, err := filterExtra(unknownMembers(body, known))
	return extra, err
}

// checkBody holds the checks made before any JSON decoding.
func checkBody(body []byte) error {
	if !utf8.Valid(body) {
		return BadRequest("", "request body is not valid UTF-8")
	}
	if bytes.IndexByte(body, 0) >= 0 {
		return BadRequest("", "request body contains a NUL byte")
	}
	return checkDepth(body, 32)
}

func jsonError(err error) *Error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := fieldPath(te.Field)
		if field == "" {
			return BadRequest("", "request body must be a JSON object")
		}
		return BadRequest(field, "%s: expected %s, got JSON %s", field, typeName(te.Type.String()), te.Value)
	}
	var fe *fieldError
	if errors.As(err, &fe) {
		return BadRequest(fe.field, "%s", fe.msg)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return BadRequest("", "malformed JSON at byte %d: %v", se.Offset, se)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return BadRequest("", "malformed JSON: unexpected end of input")
	}
	// Errors from custom unmarshalers name no field; keep their text.
	return BadRequest("", "invalid request: %v", err)
}

// fieldPath drops Go embedded-struct names (capitalised segments) from a
// decoder field path, leaving the JSON path: "Sampling.max_tokens" -> "max_tokens".
func fieldPath(field string) string {
	parts := strings.Split(field, ".")
	out := parts[:0]
	for _, p := range parts {
		if p != "" && p[0] >= 'A' && p[0] <= 'Z' {
			continue
		}
		out = append(out, p)
	}
	return strings.Join(out, ".")
}

func typeName(t string) string {
	switch {
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "*int"):
		return "an integer"
	case strings.Contains(t, "float"):
		return "a number"
	case strings.Contains(t, "bool"):
		return "a boolean"
	case strings.Contains(t, "string") && strings.HasPrefix(t, "map"):
		return "an object"
	case strings.Contains(t, "string"):
		return "a string"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	}
	return "a value of type " + t
}

// checkDepth rejects JSON nested deeper than max without parsing it.
func checkDepth(b []byte, max int) error {
	depth, inStr, esc := 0, false, false
	for _, c := range b {
		switch {
		case inStr:
			if esc {
				esc = false
			} else if c == '\\' {
				esc = true
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '{' || c == '[':
			depth++
			if depth > max {
				return BadRequest("", "JSON nested deeper than %d levels", max)
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return nil
}

func fieldSet(v any) map[string]bool {
	out := map[string]bool{}
	collectFields(v, out)
	return out
}

// OutputCap is the requested output limit (max_completion_tokens wins).
func (s *Sampling) OutputCap() (int, bool) {
	if s.MaxCompletionTokens != nil {
		return *s.MaxCompletionTokens, true
	}
	if s.MaxTokens != nil {
		return *s.MaxTokens, true
	}
	return 0, false
}

// SetOutputCap sets max_tokens and clears max_completion_tokens.
func (s *Sampling) SetOutputCap(n int) {
	s.MaxTokens = &n
	s.MaxCompletionTokens = nil
}

// Deterministic reports whether the same request yields the same output:
// temperature 0 or a fixed seed.
func (s *Sampling) Deterministic() bool {
	return (s.Temperature != nil && *s.Temperature == 0) || s.Seed != nil
}

func (s *Sampling) validate(lim Limits) error {
	if strings.TrimSpace(s.Model) == "" {
		return BadRequest("model", "model is required")
	}
	if len(s.Model) > 256 {
		return BadRequest("model", "model name is longer than 256 bytes")
	}
	for _, p := range []struct {
		name string
		v    *int
	}{{"max_tokens", s.MaxTokens}, {"max_completion_tokens", s.MaxCompletionTokens}} {
		if p.v != nil && (*p.v < 1 || *p.v > lim.MaxTokensHard) {
			return BadRequest(p.name, "%s must be between 1 and %d, got %d", p.name, lim.MaxTokensHard, *p.v)
		}
	}
	if s.Temperature != nil && (*s.Temperature < 0 || *s.Temperature > 2) {
		return BadRequest("temperature", "temperature must be between 0 and 2, got %g", *s.Temperature)
	}
	if s.TopP != nil && (*s.TopP < 0 || *s.TopP > 1) {
		return BadRequest("top_p", "top_p must be between 0 and 1, got %g", *s.TopP)
	}
	if s.N != nil && (*s.N < 1 || *s.N > lim.MaxN) {
		return BadRequest("n", "n must be between 1 and %d, got %d", lim.MaxN, *s.N)
	}
	for _, p := range []struct {
		name string
		v    *float64
	}{{"presence_penalty", s.PresencePenalty}, {"frequency_penalty", s.FrequencyPenalty}} {
		if p.v != nil && (*p.v < -2 || *p.v > 2) {
			return BadRequest(p.name, "%s must be between -2 and 2, got %g", p.name, *p.v)
		}
	}
	if len(s.Stop) > lim.MaxStop {
		return BadRequest("stop", "at most %d stop sequences are allowed, got %d", lim.MaxStop, len(s.Stop))
	}
	for _, st := range s.Stop {
		if st == "" || len(st) > lim.MaxStopLen {
			return BadRequest("stop", "each stop sequence must be 1 to %d bytes", lim.MaxStopLen)
		}
	}
	if len(s.LogitBias) > lim.MaxLogitBias {
		return BadRequest("logit_bias", "at most %d logit_bias entries are allowed, got %d", lim.MaxLogitBias, len(s.LogitBias))
	}
	for k, v := range s.LogitBias {
		if v < -100 || v > 100 {
			return BadRequest("logit_bias", "logit_bias[%s] must be between -100 and 100", k)
		}
	}
	if len(s.Metadata) > lim.MaxMetadata {
		return BadRequest("metadata", "at most %d metadata entries are allowed", lim.MaxMetadata)
	}
	if len(s.StreamOptions) > 0 && !s.Stream && string(s.StreamOptions) != "null" {
		return BadRequest("stream_options", "stream_options is only allowed with stream: true")
	}
	return nil
}

func (r *ChatRequest) validate(lim Limits) error {
	if err := r.Sampling.validate(lim); err != nil {
		return err
	}
	if len(r.Messages) == 0 {
		return BadRequest("messages", "messages must contain at least one message")
	}
	if len(r.Messages) > lim.MaxMessages {
		return BadRequest("messages", "at most %d messages are allowed, got %d", lim.MaxMessages, len(r.Messages))
	}
	for i, m := range r.Messages {
		switch m.Role {
		case "system", "developer", "user", "assistant", "tool":
		case "":
			return BadRequest(fmt.Sprintf("messages[%d].role", i), "messages[%d].role is required", i)
		default:
			return BadRequest(fmt.Sprintf("messages[%d].role", i), "messages[%d].role %q is not one of system, developer, user, assistant, tool", i, m.Role)
		}
		for j, p := range m.Content.Parts {
			if p.Type != "text" {
				return BadRequest(fmt.Sprintf("messages[%d].content[%d].type", i, j), "only text content parts are supported, got %q", p.Type)
			}
		}
	}
	if r.TopLogprobs != nil && (*r.TopLogprobs < 0 || *r.TopLogprobs > 20) {
		return BadRequest("top_logprobs", "top_logprobs must be between 0 and 20")
	}
	return nil
}

func (r *CompletionRequest) validate(lim Limits) error {
	if err := r.Sampling.validate(lim); err != nil {
		return err
	}
	if len(r.Prompt) == 0 || string(r.Prompt) == "null" {
		return BadRequest("prompt", "prompt is required")
	}
	var s string
	if err := json.Unmarshal(r.Prompt, &s); err == nil {
		r.PromptText = s
	} else {
		var list []string
		if err := json.Unmarshal(r.Prompt, &list); err != nil {
			return BadRequest("prompt", "prompt must be a string or a list of strings")
		}
		if len(list) == 0 || len(list) > lim.MaxPrompts {
			return BadRequest("prompt", "prompt lists must hold 1 to %d prompts, got %d", lim.MaxPrompts, len(list))
		}
		r.PromptText = list[0]
	}
	if r.Logprobs != nil && (*r.Logprobs < 0 || *r.Logprobs > 5) {
		return BadRequest("logprobs", "logprobs must be between 0 and 5")
	}
	return nil
}
