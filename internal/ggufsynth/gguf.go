package ggufsynth

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
)

// GGUF value types (gguf.h).
const (
	typeUint32  = 4
	typeInt32   = 5
	typeFloat32 = 6
	typeBool    = 7
	typeString  = 8
	typeArray   = 9
)

// GGML tensor types written by this package.
const (
	ggmlF32 = 0
	ggmlF16 = 1
)

// alignment is the GGUF data alignment (general.alignment default).
const alignment = 32

// kv is one metadata entry.
type kv struct {
	key string
	val any // uint32, int32, float32, bool, string, []string, []float32, []int32
}

// enc writes little-endian GGUF primitives and counts bytes written.
type enc struct {
	w   *bufio.Writer
	n   int64
	err error
}

func (e *enc) raw(b []byte) {
	if e.err != nil {
		return
	}
	var k int
	k, e.err = e.w.Write(b)
	e.n += int64(k)
}

func (e *enc) u32(v uint32) {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], v)
	e.raw(b[:])
}

func (e *enc) u64(v uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	e.raw(b[:])
}

func (e *enc) str(s string) {
	e.u64(uint64(len(s)))
	if e.err == nil {
		var k int
		k, e.err = e.w.WriteString(s)
		e.n += int64(k)
	}
}

func (e *enc) pad() {
	if r := e.n % alignment; r != 0 {
		e.raw(make([]byte, alignment-r))
	}
}

func (e *enc) kv(p kv) {
	e.str(p.key)
	switch v := p.val.(type) {
	case uint32:
		e.u32(typeUint32)
		e.u32(v)
	case int32:
		e.u32(typeInt32)
		e.u32(uint32(v))
	case float32:
		e.u32(typeFloat32)
		e.u32(math.Float32bits(v))
	case bool:
		e.u32(typeBool)
		if v {
			e.raw([]byte{1})
		} else {
			e.raw([]byte{0})
		}
	case string:
		e.u32(typeString)
		e.str(v)
	case []string:
		e.u32(typeArray)
		e.u32(typeString)
		e.u64(uint64(len(v)))
		for _, s := range v {
			e.str(s)
		}
	case []float32:
		e.u32(typeArray)
		e.u32(typeFloat32)
		e.u64(uint64(len(v)))
		for _, f := range v {
			e.u32(math.Float32bits(f))
		}
	case []int32:
		e.u32(typeArray)
		e.u32(typeInt32)
		e.u64(uint64(len(v)))
		for _, x := range v {
			e.u32(uint32(x))
		}
	default:
		if e.err == nil {
			e.err = fmt.Errorf("gguf: unsupported value type %T for %s", p.val, p.key)
		}
	}
}

// tensor describes one tensor: its GGUF dims (ne0 first) and element type.
type tensor struct {
	name  string
	dims  []uint64
	typ   uint32
	scale float32 // values are uniform in [-scale, scale]; 0 means all ones
}

func (t tensor) elems() uint64 {
	n := uint64(1)
	for _, d := range t.dims {
		n *= d
	}
	return n
}

func (t tensor) bytes() uint64 {
	if t.typ == ggmlF16 {
		return t.elems() * 2
	}
	return t.elems() * 4
}

func alignUp(n uint64) uint64 { return (n + alignment - 1) / alignment * alignment }

// header writes magic, version, counts, metadata and tensor infos, padded
// to the alignment, so the tensor data can follow.
func (e *enc) header(kvs []kv, ts []tensor) {
	e.raw([]byte("GGUF"))
	e.u32(3)
	e.u64(uint64(len(ts)))
	e.u64(uint64(len(kvs)))
	for _, p := range kvs {
		e.kv(p)
	}
	var off uint64
	for _, t := range ts {
		e.str(t.name)
		e.u32(uint32(len(t.dims)))
		for _, d := range t.dims {
			e.u64(d)
		}
		e.u32(t.typ)
		e.u64(off)
		off = alignUp(off + t.bytes())
	}
	e.pad()
}
