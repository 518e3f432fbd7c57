package openai

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// Done is the payload of the final SSE event of an OpenAI stream.
var Done = []byte("[DONE]")

// SSEWriter writes `data: ...` events and flushes each one.
type SSEWriter struct {
	w       io.Writer
	flusher http.Flusher
	started bool
}

// NewSSEWriter prepares w for an event stream. Headers are sent with the
// first event.
func NewSSEWriter(w http.ResponseWriter) *SSEWriter {
	f, _ := w.(http.Flusher)
	return &SSEWriter{w: w, flusher: f}
}

// Header sets the event-stream headers; call before the first Data.
func SSEHeaders(h http.Header) {
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
}

// Data writes one event whose data is payload (one line; no newlines).
func (s *SSEWriter) Data(payload []byte) error {
	if bytes.ContainsAny(payload, "\r\n") {
		return errors.New("sse: payload contains a newline")
	}
	s.started = true
	buf := make([]byte, 0, len(payload)+8)
	buf = append(buf, "data: "...)
	buf = append(buf, payload...)
	buf = append(buf, '\n', '\n')
	if _, err := s.w.Write(buf); err != nil {
		return err
	}
	if s.flusher != nil {
		s.flusher.Flush()
	}
	return nil
}

// Done writes the terminating `data: [DONE]` event.
func (s *SSEWriter) Done() error { return s.Data(Done) }

// Started reports whether any event has been written.
func (s *SSEWriter) Started() bool { return s.started }

// MaxEventBytes bounds one upstream event; longer events are an error.
const MaxEventBytes = 4 << 20

// ErrEventTooLarge is returned for an event over MaxEventBytes.
var ErrEventTooLarge = errors.New("sse: event too large")

// SSEReader reads the data payloads of an event stream.
type SSEReader struct {
	r    *bufio.Reader
	data bytes.Buffer
}

// NewSSEReader reads events from r.
func NewSSEReader(r io.Reader) *SSEReader {
	return &SSEReader{r: bufio.NewReaderSize(r, 32<<10)}
}

// Next returns the data of the next event (multi-line data joined with \n).
// Comments, event names, ids and retry fields are skipped. It returns io.EOF
// at a clean end of stream and io.ErrUnexpectedEOF inside a partial event.
func (s *SSEReader) Next() ([]byte, error) {
	s.data.Reset()
	have := false
	for {
		line, err := s.readLine()
		if err != nil {
			if err == io.EOF && have {
				return nil, io.ErrUnexpectedEOF // an event cut off before its blank line
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

func (s *SSEReader) readLine() ([]byte, error) {
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
