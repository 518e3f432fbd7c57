package ggufsynth

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
)

// ErrShape marks an unknown or unusable shape or type.
var ErrShape = errors.New("ggufsynth")

// Options choose what Write produces.
type Options struct {
	Shape Shape
	// Seed makes the weights reproducible: same seed, same bytes.
	Seed uint64
	// Type is the element type of the matrices: "f16" (default) or "f32".
	// Norms and biases are always F32.
	Type string
}

// ftype returns the GGML type and llama_ftype of the matrices.
func (o Options) ftype() (typ uint32, fileType uint32, err error) {
	switch o.Type {
	case "", "f16":
		return ggmlF16, 1, nil
	case "f32":
		return ggmlF32, 0, nil
	}
	return 0, 0, fmt.Errorf("%w: unwritable type %q (f16 or f32; quantize for the others)", ErrShape, o.Type)
}

// Size returns the number of bytes Write will produce.
func Size(o Options) (int64, error) {
	var cw countWriter
	if err := Write(&cw, Options{Shape: o.Shape, Seed: o.Seed, Type: o.Type}, true); err != nil {
		return 0, err
	}
	return cw.n, nil
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// metadata returns the architecture and tokenizer entries of the shape.
func metadata(s Shape, fileType uint32) ([]kv, error) {
	a := s.Arch
	kvs := []kv{
		{"general.architecture", a},
		{"general.name", "raygw synthetic " + s.Name},
		{"general.description", "random weights in the shape of " + s.Name + "; written by raygw model synth"},
		{"general.file_type", fileType},
		{a + ".context_length", uint32(s.Ctx)},
		{a + ".embedding_length", uint32(s.Embd)},
		{a + ".block_count", uint32(s.Layers)},
		{a + ".feed_forward_length", uint32(s.FF)},
		{a + ".attention.head_count", uint32(s.Heads)},
		{a + ".attention.head_count_kv", uint32(s.HeadsKV)},
		{a + ".rope.freq_base", s.RopeFreqBase},
		{a + ".attention.layer_norm_rms_epsilon", s.RMSEps},
		{a + ".vocab_size", uint32(s.Vocab)},
	}
	if s.RopeDim > 0 {
		kvs = append(kvs, kv{a + ".rope.dimension_count", uint32(s.RopeDim)})
	}
	var v vocab
	var err error
	switch s.Tokenizer {
	case TokenizerSPM:
		v, err = spmVocab(s.Vocab)
	case TokenizerBPE:
		v, err = bpeVocab(s.Vocab, s.PreTokenizer)
	default:
		err = fmt.Errorf("%w: unknown tokenizer %q", ErrShape, s.Tokenizer)
	}
	if err != nil {
		return nil, err
	}
	return append(kvs, v.kvs...), nil
}

// Write streams a complete GGUF to w. With dry set it writes zeros instead
// of random data (used to size the file cheaply).
func Write(w io.Writer, o Options, dry bool) error {
	s := o.Shape
	if s.Embd <= 0 || s.Heads <= 0 || s.HeadsKV <= 0 || s.Embd%s.Heads != 0 || s.Heads%s.HeadsKV != 0 {
		return fmt.Errorf("%w: shape %q has inconsistent dimensions", ErrShape, s.Name)
	}
	typ, fileType, err := o.ftype()
	if err != nil {
		return err
	}
	kvs, err := metadata(s, fileType)
	if err != nil {
		return err
	}
	return writeFile(w, kvs, s.tensors(typ), o.Seed, dry)
}

// writeFile writes a whole GGUF file: the header with kvs and the tensor
// infos, then each tensor's seeded data (zeros with dry).
func writeFile(w io.Writer, kvs []kv, ts []tensor, seed uint64, dry bool) error {
	e := &enc{w: bufio.NewWriterSize(w, 1<<20)}
	e.header(kvs, ts)
	buf := make([]byte, 0, 1<<16)
	for _, t := range ts {
		buf = writeTensor(e, t, seed, dry, buf)
		e.pad()
		if e.err != nil {
			return e.err
		}
	}
	return e.w.Flush()
}

// writeTensor writes t's data: ones for norms, else seeded uniform values.
// Each tensor has its own stream (seed, name), so order does not matter.
func writeTensor(e *enc, t tensor, seed uint64, dry bool, buf []byte) []byte {
	h := fnv.New64a()
	h.Write([]byte(t.name))
	rng := rand.New(rand.NewPCG(seed, h.Sum64()))
	size := 4
	if t.typ == ggmlF16 {
		size = 2
	}
	per := cap(buf) / size
	for left := t.elems(); left > 0 && e.err == nil; {
		n := int(min(uint64(per), left))
		buf = buf[:n*size]
		switch {
		case dry:
			clear(buf)
		default:
			fill(buf, t, n, rng)
		}
		e.raw(buf)
		left -= uint64(n)
	}
	return buf
}

func fill(buf []byte, t tensor, n int, rng *rand.Rand) {
	for i := 0; i < n; i++ {
		v := float32(1)
		if t.scale != 0 {
			v = (rng.Float32()*2 - 1) * t.scale
		}
		if t.typ == ggmlF16 {
			binary.LittleEndian.PutUint16(buf[i*2:], f16(v))
		} else {
			binary.LittleEndian.PutUint32(buf[i*4:], math.Float32bits(v))
		}
	}
}

// f16 converts a float32 to IEEE half precision, rounding to nearest even.
func f16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23&0xff) - 127 + 15
	mant := b & 0x7fffff
	switch {
	case exp >= 31:
		return sign | 0x7c00 // too large: infinity (never for our weights)
	case exp <= 0:
		if exp < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint32(14 - exp)
		half := uint32(1) << (shift - 1)
		r := mant >> shift
		if rem := mant & (1<<shift - 1); rem > half || (rem == half && r&1 == 1) {
			r++
		}
		return sign | uint16(r)
	}
	r := uint32(exp)<<10 | mant>>13
	if rem := mant & 0x1fff; rem > 0x1000 || (rem == 0x1000 && r&1 == 1) {
		r++
	}
	return sign | uint16(r)
}

// WriteFile writes the GGUF to path through a temporary file in the same
// directory, renamed into place only when complete.
func WriteFile(path string, o Options) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".synth-*.gguf")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := Write(tmp, o, false); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
