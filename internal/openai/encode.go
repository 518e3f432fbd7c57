package openai

import (
	"bytes"
	"encoding/json"
	"slices"
	"sync"
)

// encoder is a reusable buffer with a JSON encoder writing into it.
type encoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var encoders = sync.Pool{New: func() any {
	e := &encoder{}
	e.enc = json.NewEncoder(&e.buf)
	return e
}}

// maxPooledBuffer bounds the buffer an encoder keeps between uses.
const maxPooledBuffer = 64 << 10

// appendWithExtra appends v (a struct, encoded as json.Marshal does)
// followed by the members of extra in name order: exactly the bytes of
// json.Marshal(v) with json.Marshal(extra) spliced in before its closing
// brace.
func appendWithExtra(dst []byte, v any, extra map[string]json.RawMessage) ([]byte, error) {
	e := encoders.Get().(*encoder)
	defer func() {
		if e.buf.Cap() <= maxPooledBuffer {
			encoders.Put(e)
		}
	}()
	e.buf.Reset()
	if err := e.enc.Encode(v); err != nil {
		return nil, err
	}
	e.buf.Truncate(e.buf.Len() - 1) // Encode's newline
	if len(extra) > 0 {
		if err := e.appendMembers(extra); err != nil {
			return nil, err
		}
	}
	return append(dst, e.buf.Bytes()...), nil
}

// appendMembers replaces the closing brace in the buffer with the members
// of extra, sorted by name as json.Marshal sorts map keys, and the brace.
func (e *encoder) appendMembers(extra map[string]json.RawMessage) error {
	var small [16]string
	names := small[:0]
	for k := range extra {
		names = append(names, k)
	}
	slices.Sort(names)
	e.buf.Truncate(e.buf.Len() - 1)
	for _, k := range names {
		b := append(e.buf.AvailableBuffer(), ',')
		b = appendJSONString(b, k)
		b = append(b, ':')
		b, err := appendRawJSON(b, extra[k])
		if err != nil {
			return err
		}
		e.buf.Write(b)
	}
	e.buf.WriteByte('}')
	return nil
}
