// Package workload owns raygw bench workloads: the JSONL format (one request
// per line), its strict parser, and the quality checks a line may carry.
package workload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// MaxLineBytes bounds one workload line.
const MaxLineBytes = 1 << 20

// ErrInvalid marks a workload line that cannot be used.
var ErrInvalid = errors.New("invalid workload")

// Message is one chat message of a workload line.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Item is one workload line: a chat (messages) or text (prompt) request and
// the checks its output must pass.
type Item struct {
	ID        string            `json:"id,omitempty"`
	Messages  []Message         `json:"messages,omitempty"`
	Prompt    string            `json:"prompt,omitempty"`
	MaxTokens int               `json:"max_tokens,omitempty"`
	Metadata  map[string]string `json:"metadata,omitempty"`
	// ArrivalMS is the send time, in ms from the start of the run, used by
	// the arrival schedule.
	ArrivalMS *float64 `json:"arrival_ms,omitempty"`
	// Params are extra request fields (temperature, seed, response_format...).
	Params map[string]json.RawMessage `json:"params,omitempty"`

	ExpectRegex      string          `json:"expect_regex,omitempty"`
	ExpectContains   StringList      `json:"expect_contains,omitempty"`
	ExpectJSONSchema json.RawMessage `json:"expect_json_schema,omitempty"`

	// Line is the 1-based line number in the source file.
	Line int `json:"-"`
	// Checks are the compiled expectations.
	Checks []Check `json:"-"`
}

// StringList is a string or a list of strings.
type StringList []string

// UnmarshalJSON accepts a string or a list of strings.
func (s *StringList) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*s = StringList{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return errors.New("expected a string or a list of strings")
	}
	*s = many
	return nil
}

// reserved are request fields a line may not set through params because
// the runner owns them.
var reserved = map[string]bool{"model": true, "messages": true, "prompt": true, "stream": true,
	"stream_options": true, "max_tokens": true, "metadata": true}

// Parse reads a JSONL workload. Blank lines and lines starting with // or #
// are skipped. Every error names its line.
func Parse(r io.Reader) ([]Item, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLineBytes)
	var items []Item
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' || bytes.HasPrefix(line, []byte("//")) {
			continue
		}
		it, err := ParseLine(line)
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %w", ErrInvalid, n, err)
		}
		it.Line = n
		if it.ID == "" {
			it.ID = fmt.Sprintf("line-%d", n)
		}
		items = append(items, *it)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: after line %d: %w", ErrInvalid, n, err)
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("%w: no requests", ErrInvalid)
	}
	return items, nil
}

// ParseLine decodes and validates one workload line.
func ParseLine(line []byte) (*Item, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var it Item
	if err := dec.Decode(&it); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if dec.More() {
		return nil, errors.New("unexpected data after the JSON object")
	}
	if err := it.validate(); err != nil {
		return nil, err
	}
	checks, err := compileChecks(&it)
	if err != nil {
		return nil, err
	}
	it.Checks = checks
	return &it, nil
}

func (it *Item) validate() error {
	switch {
	case len(it.Messages) == 0 && it.Prompt == "":
		return errors.New(`one of "messages" or "prompt" is required`)
	case len(it.Messages) > 0 && it.Prompt != "":
		return errors.New(`"messages" and "prompt" are mutually exclusive`)
	case it.MaxTokens < 0:
		return errors.New(`"max_tokens" must not be negative`)
	case it.ArrivalMS != nil && *it.ArrivalMS < 0:
		return errors.New(`"arrival_ms" must not be negative`)
	}
	for i, m := range it.Messages {
		if strings.TrimSpace(m.Role) == "" {
			return fmt.Errorf(`messages[%d]: "role" is required`, i)
		}
	}
	for k := range it.Params {
		if reserved[k] {
			return fmt.Errorf("params: %q is set by raygw bench, not by params", k)
		}
	}
	return nil
}

// Chat reports whether the item is a chat request.
func (it *Item) Chat() bool { return len(it.Messages) > 0 }

// Path is the API path the item is sent to.
func (it *Item) Path() string {
	if it.Chat() {
		return "/v1/chat/completions"
	}
	return "/v1/completions"
}

// Body renders the request body for model (empty: omitted); a streaming
// body asks for the usage in the final chunk.
func (it *Item) Body(model string, stream bool) ([]byte, error) {
	m := make(map[string]any, len(it.Params)+6)
	for k, v := range it.Params {
		m[k] = v
	}
	if model != "" {
		m["model"] = model
	}
	if it.Chat() {
		m["messages"] = it.Messages
	} else {
		m["prompt"] = it.Prompt
	}
	if it.MaxTokens > 0 {
		m["max_tokens"] = it.MaxTokens
	}
	if len(it.Metadata) > 0 {
		m["metadata"] = it.Metadata
	}
	m["stream"] = stream
	if stream {
		m["stream_options"] = map[string]bool{"include_usage": true}
	}
	return json.Marshal(m)
}

// HasChecks reports whether the item carries any quality check.
func (it *Item) HasChecks() bool { return len(it.Checks) > 0 }
