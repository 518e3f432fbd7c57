package openai

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// Done is the payload of the final SSE event of an OpenAI stream.
var Done = []byte("[DONE]")

// SSEWriter writes `data: ...` events and flushes each one.
type SSEWriter struct {
	w       io.Writer
	flusher http.Flusher
	started bool
	buf     []byte // one event, reused
}

// NewSSEWriter prepares w for an event stream. Headers are sent with the
// first event.
func NewSSEWriter(w http.ResponseWriter) *SSEWriter {
	f, _ := w.(http.Flusher)
	return &SSEWriter{w: w, flusher: f}
}

// Header sets the event-stream headers; call before the first Data.
func SSEHeaders(h http.Header) {
	// As h.Set with canonical names; the four values share one array.
	v := []string{"text/event-stream", "no-cache", "keep-alive", "no"}
	h["Content-Type"] = v[0:1:1]
	h["Cache-Control"] = v[1:2:2]
	h["Connection"] = v[2:3:3]
	h["X-Accel-Buffering"] = v[3:4:4]
}

// Data writes one event whose data is payload (one line; no newlines).
func (s *SSEWriter) Data(payload []byte) error {
	if bytes.ContainsAny(payload, "\r\n") {
		return errors.New("sse: payload contains a newline")
	}
	s.started = true
	buf := s.buf[:0]
	if need := len(payload) + 8; cap(buf) < need {
		buf = make([]byte, 0, max(need, 512)) // most events fit the first buffer
	}
	buf = append(buf, "data: "...)
	buf = append(buf, payload...)
	buf = append(buf, '\n', '\n')
	if cap(buf) <= maxKeptEventBuffer {
		s.buf = buf
	}
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

// maxKeptEventBuffer bounds the event buffer an SSEWriter keeps.
const maxKeptEventBuffer = 64 << 10

// MaxEventBytes bounds one upstream event; longer events are an error.
const MaxEventBytes = 4 << 20

// ErrEventTooLarge is returned for an event over MaxEventBytes.
var ErrEventTooLarge = errors.New("sse: event too large")

// SSEReader reads the data payloads of an event stream.
type SSEReader struct {
	r        *bufio.Reader
	data     bytes.Buffer
	line     []byte // a line longer than the read buffer, reused
	released bool
}

// sseReaders keeps released readers with their 32 KiB read buffers.
var sseReaders = sync.Pool{New: func() any { return &SSEReader{r: bufio.NewReaderSize(nil, 32<<10)} }}

// NewSSEReader reads events from r.
func NewSSEReader(r io.Reader) *SSEReader {
	s := sseReaders.Get().(*SSEReader)
	s.r.Reset(r)
	s.released = false
	return s
}

// Release hands the reader's buffers to the next NewSSEReader. Neither the
// reader nor an event it returned may be used afterwards. Calling it is
// optional; a reader that is not released is garbage collected.
func (s *SSEReader) Release() {
	if s.released {
		return
	}
	s.released = true
	s.r.Reset(nil)
	s.data.Reset()
	if s.data.Cap() > maxKeptEventBuffer {
		s.data = bytes.Buffer{}
	}
	s.line = nil
	sseReaders.Put(s)
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

// readLine returns the next line without its line ending. The line is
// valid until the next call.
func (s *SSEReader) readLine() ([]byte, error) {
	chunk, isPrefix, err := s.r.ReadLine()
	if err != nil {
		return nil, err
	}
	if !isPrefix { // the common case: the line fits the read buffer
		return bytes.TrimSuffix(chunk, []byte("\r")), nil
	}
	line := append(s.line[:0], chunk...)
	defer func() {
		if cap(line) <= maxKeptEventBuffer {
			s.line = line[:0]
		}
	}()
	for {
		chunk, isPrefix, err := s.r.ReadLine()
		if err != nil {
			if err == io.EOF {
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
