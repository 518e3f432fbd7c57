package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"

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

// streamFailed reports a broken stream in-band to a client that is still there.
func (s *Server) streamFailed(ctx context.Context, out *openai.SSEWriter, err error) {
	if errors.Is(ctx.Err(), context.Canceled) || errors.Is(err, context.Canceled) {
		return
	}
	var e *openai.Error
	if !errors.As(err, &e) {
		e = openai.AsError(openaicompat.Classify(ctx, err))
	}
	s.log.Warn("stream interrupted", "err", err)
	msg, _ := json.Marshal(openai.Envelope{Error: openai.EnvelopeBody{Message: e.Message, Type: e.Type, Code: &e.Code}})
	_ = out.Data(msg)
}

// renameModel shows clients the model name they asked for, not the engine's
// internal alias. The result is b itself when there is nothing to rename.
func (s *Server) renameModel(b []byte) []byte {
	if s.upstreamModel == nil {
		return b
	}
	i := bytes.Index(b, s.upstreamModel)
	if i < 0 {
		return b
	}
	return s.spliceModel(b, i)
}

// renamedCopy is a copy of b (nil when b is empty) with the model renamed
// as renameModel does, made in one allocation.
func (s *Server) renamedCopy(b []byte) []byte {
	if s.upstreamModel != nil {
		if i := bytes.Index(b, s.upstreamModel); i >= 0 {
			return s.spliceModel(b, i)
		}
	}
	return append([]byte(nil), b...)
}

// renameLent is renameModel for an event lent to its reader: b itself when
// nothing is renamed, else the renamed event in scratch, which it returns
// for reuse.
func (s *Server) renameLent(b, scratch []byte) (ev, buf []byte) {
	if s.upstreamModel == nil {
		return b, scratch
	}
	i := bytes.Index(b, s.upstreamModel)
	if i < 0 {
		return b, scratch
	}
	buf = append(scratch[:0], b[:i]...)
	buf = append(buf, s.clientModel...)
	buf = append(buf, b[i+len(s.upstreamModel):]...)
	return buf, buf
}

// spliceModel is b with the upstream model pattern at i replaced by the
// client's.
func (s *Server) spliceModel(b []byte, i int) []byte {
	out := make([]byte, 0, len(b)-len(s.upstreamModel)+len(s.clientModel))
	out = append(out, b[:i]...)
	out = append(out, s.clientModel...)
	return append(out, b[i+len(s.upstreamModel):]...)
}

// readAll is io.ReadAll(io.LimitReader(r, limit)) with the buffer sized
// from size (a Content-Length, -1 when unknown) instead of grown from 512
// bytes.
func readAll(r io.Reader, size, limit int64) ([]byte, error) {
	if size < 0 || size > limit {
		size = 511
	}
	b := make([]byte, 0, size+1) // +1: EOF is seen without growing
	for int64(len(b)) < limit {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		room := b[len(b):cap(b)]
		if rest := limit - int64(len(b)); int64(len(room)) > rest {
			room = room[:rest]
		}
		n, err := r.Read(room)
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
	return b, nil
}
