// Package gguf owns what the ops tooling reads from a GGUF model file: the
// header check, the metadata operators review before staging (architecture,
// quantization, context, parameters), and the llama.cpp memory estimate for
// a launch profile, using github.com/gpustack/gguf-parser-go.
package gguf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	parser "github.com/gpustack/gguf-parser-go"
)

// ErrNotGGUF means a file does not start with a GGUF header.
var ErrNotGGUF = errors.New("not a GGUF file")

// HeaderSize is the bytes CheckHeader reads: magic, version, tensor count
// and metadata count.
const HeaderSize = 24

// CheckHeader validates the fixed GGUF header: the "GGUF" magic, a known
// version (1-3) and plausible tensor and metadata counts.
func CheckHeader(r io.Reader) (version uint32, err error) {
	var h [HeaderSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, fmt.Errorf("%w: header too short: %v", ErrNotGGUF, err)
	}
	if string(h[:4]) != "GGUF" {
		return 0, fmt.Errorf("%w: magic %q", ErrNotGGUF, h[:4])
	}
	version = binary.LittleEndian.Uint32(h[4:8])
	if version == 0 || version > 3 {
		return version, fmt.Errorf("%w: unsupported version %d", ErrNotGGUF, version)
	}
	tensors := binary.LittleEndian.Uint64(h[8:16])
	kvs := binary.LittleEndian.Uint64(h[16:24])
	if tensors > 1<<24 || kvs > 1<<20 {
		return version, fmt.Errorf("%w: implausible counts (%d tensors, %d metadata entries)", ErrNotGGUF, tensors, kvs)
	}
	return version, nil
}

// CheckHeaderFile opens path and runs CheckHeader.
func CheckHeaderFile(path string) (uint32, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	v, err := CheckHeader(f)
	if err != nil {
		return v, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// Info is the metadata an operator reviews.
type Info struct {
	Architecture  string
	Name          string
	Quantization  string // file type, e.g. Q4_K_M
	ContextLength uint64 // n_ctx_train
	Parameters    uint64
	FileBytes     uint64
}

// String is a one-line summary.
func (i Info) String() string {
	return fmt.Sprintf("architecture %s, quantization %s, trained context %d, %s parameters",
		i.Architecture, i.Quantization, i.ContextLength, parser.GGUFParametersScalar(i.Parameters))
}

// Profile is the part of a launch profile that drives memory use.
type Profile struct {
	CtxSize    int // total context shared by all slots
	Parallel   int
	BatchSize  int
	UBatchSize int
}

// Estimate is llama.cpp's projected host memory for one launch profile.
type Estimate struct {
	WeightsBytes uint64
	KVCacheBytes uint64
	ComputeBytes uint64 // compute buffers and fixed footprint
}

// TotalBytes is weights + KV cache + compute.
func (e Estimate) TotalBytes() uint64 { return e.WeightsBytes + e.KVCacheBytes + e.ComputeBytes }

// Model is a parsed GGUF file.
type Model struct {
	file *parser.GGUFFile
	Info Info
}

// Open checks the header of path and parses its metadata.
func Open(path string) (m *Model, err error) {
	if _, err := CheckHeaderFile(path); err != nil {
		return nil, err
	}
	defer func() {
		// The parser trusts lengths it reads; a corrupt file must not crash raygw.
		if r := recover(); r != nil {
			m, err = nil, fmt.Errorf("%s: %w: parser failed: %v", path, ErrNotGGUF, r)
		}
	}()
	f, err := parser.ParseGGUFFile(path, parser.SkipLargeMetadata())
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", path, ErrNotGGUF, err)
	}
	md, arch := f.Metadata(), f.Architecture()
	return &Model{file: f, Info: Info{
		Architecture:  md.Architecture,
		Name:          md.Name,
		Quantization:  strings.TrimPrefix(md.FileType.String(), "MOSTLY_"),
		ContextLength: arch.MaximumContextLength,
		Parameters:    uint64(md.Parameters),
		FileBytes:     uint64(md.FileSize),
	}}, nil
}

// Estimate projects the CPU memory llama-server needs for p, with weights
// counted in full (mmap'd pages stay resident while serving).
func (m *Model) Estimate(p Profile) (est Estimate, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("gguf estimate failed: %v", r)
		}
	}()
	e := m.file.EstimateLLaMACppRun(
		parser.WithLLaMACppContextSize(int32(p.CtxSize)),
		parser.WithParallelSize(int32(max(p.Parallel, 1))),
		parser.WithLLaMACppLogicalBatchSize(int32(p.BatchSize)),
		parser.WithLLaMACppPhysicalBatchSize(int32(p.UBatchSize)),
		parser.WithLLaMACppOffloadLayers(0),
	)
	if len(e.Devices) == 0 {
		return est, errors.New("gguf estimate returned no device")
	}
	d := e.Devices[0]
	return Estimate{
		WeightsBytes: uint64(d.Weight.Sum()),
		KVCacheBytes: uint64(d.KVCache.Sum()),
		ComputeBytes: uint64(d.Footprint) + uint64(d.Computation.Sum()),
	}, nil
}
