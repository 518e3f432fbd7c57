package openai

// Reference implementations: the straightforward versions of the decoder,
// encoder and SSE reader that the optimised ones replaced. The differential
// tests in equiv_test.go check that both give the same results.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

func refDecodeChat(body []byte, lim Limits) (*ChatRequest, error) {
	var r ChatRequest
	extra, err := refDecode(body, &r, chatFields)
	if err != nil {
		return nil, err
	}
	r.Extra = extra
	if err := r.validate(lim); err != nil {
		return nil, err
	}
	return &r, nil
}

func refDecodeCompletion(body []byte, lim Limits) (*CompletionRequest, error) {
	var r CompletionRequest
	extra, err := refDecode(body, &r, completionFields)
	if err != nil {
		return nil, err
	}
	r.Extra = extra
	if err := r.validate(lim); err != nil {
		return nil, err
	}
	return &r, nil
}

// refDecode decodes body twice: into a map for the unknown fields and into v.
func refDecode(body []byte, v any, known map[string]bool) (map[string]json.RawMessage, error) {
	if err := checkBody(body); err != nil {
		return nil, err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, jsonError(err)
	}
	if raw == nil {
		return nil, BadRequest("", "request body must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return nil, jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, BadRequest("", "unexpected data after the JSON object")
	}
	var extra map[string]json.RawMessage
	for k, val := range raw {
		if !known[k] {
			if extra == nil {
				extra = map[string]json.RawMessage{}
			}
			extra[k] = val
		}
	}
	extra, _, err := filterExtra(extra)
	return extra, err
}

// refMarshal encodes a request the way MarshalJSON did: the modelled fields,
// then the extras marshalled as a map and spliced in.
func refMarshal(v any, extra map[string]json.RawMessage) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil || len(extra) == 0 {
		return b, err
	}
	e, err := json.Marshal(extra)
	if err != nil {
		return nil, err
	}
	if len(e) <= 2 {
		return b, nil
	}
	out := append(b[:len(b)-1], ',')
	return append(out, e[1:]...), nil
}

// refChat and refCompletion marshal like the old MarshalJSON methods.
func refChat(r *ChatRequest) ([]byte, error) {
	type plain ChatRequest
	return refMarshal((*plain)(r), r.Extra)
}

func refCompletion(r *CompletionRequest) ([]byte, error) {
	type plain CompletionRequest
	return refMarshal((*plain)(r), r.Extra)
}

// refSSEReader is the SSE reader that copied every line.
type refSSEReader struct {
	r    *bufio.Reader
	data bytes.Buffer
}

func newRefSSEReader(r io.Reader) *refSSEReader {
	return &refSSEReader{r: bufio.NewReaderSize(r, 32<<10)}
}

func (s *refSSEReader) Next() ([]byte, error) {
	s.data.Reset()
	have := false
	for {
		line, err := s.readLine()
		if err != nil {
			if err == io.EOF && have {
				return nil, io.ErrUnexpectedEOF
			}
			if err == io.EOF && s.data.Len() == 0 {
				return nil, io.EOF
			}
			return nil, err
		}
		if len(line) == 0 {
			if have {
				return s.data.Bytes(), nil
			}
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		if string(field) != "data" {
			continue
		}
		if have {
			s.data.WriteByte('\n')
		}
		if s.data.Len()+len(value) > MaxEventBytes {
			return nil, ErrEventTooLarge
		}
		s.data.Write(value)
		have = true
	}
}

func (s *refSSEReader) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, isPrefix, err := s.r.ReadLine()
		if err != nil {
			if err == io.EOF && len(line) > 0 {
				return line, nil
			}
			return nil, err
		}
		if len(line)+len(chunk) > MaxEventBytes {
			return nil, fmt.Errorf("%w: line over %d bytes", ErrEventTooLarge, MaxEventBytes)
		}
		line = append(line, chunk...)
		if !isPrefix {
			return bytes.TrimSuffix(line, []byte("\r")), nil
		}
	}
}

// refContentMarshal and refContentUnmarshal are Content's old codec.
func refContentMarshal(c Content) ([]byte, error) {
	switch {
	case c.Null:
		return []byte("null"), nil
	case c.Parts != nil:
		return json.Marshal(c.Parts)
	}
	return json.Marshal(c.Text)
}

func refContentUnmarshal(c *Content, b []byte) error {
	*c = Content{}
	if string(b) == "null" {
		c.Null = true
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
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
