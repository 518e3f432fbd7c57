package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/raygw/raygw/internal/testenv"
)

func header(magic string, version uint32, tensors, kvs uint64) []byte {
	var b bytes.Buffer
	b.WriteString(magic)
	_ = binary.Write(&b, binary.LittleEndian, version)
	_ = binary.Write(&b, binary.LittleEndian, tensors)
	_ = binary.Write(&b, binary.LittleEndian, kvs)
	return b.Bytes()
}

func TestCheckHeader(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		ok   bool
	}{
		{"v3", header("GGUF", 3, 10, 20), true},
		{"bad magic", header("GGML", 3, 10, 20), false},
		{"version 0", header("GGUF", 0, 1, 1), false},
		{"version 9", header("GGUF", 9, 1, 1), false},
		{"short", []byte("GGUF"), false},
		{"huge counts", header("GGUF", 3, 1<<40, 1), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := CheckHeader(bytes.NewReader(tt.data))
			if (err == nil) != tt.ok {
				t.Fatalf("err = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrNotGGUF) {
				t.Fatalf("err %v does not wrap ErrNotGGUF", err)
			}
		})
	}
}

func TestOpenRealModel(t *testing.T) {
	m, err := Open(testenv.Model(t))
	if err != nil {
		t.Fatal(err)
	}
	if m.Info.Architecture != "llama" || m.Info.Parameters == 0 || m.Info.ContextLength == 0 || m.Info.Quantization == "" {
		t.Fatalf("unexpected metadata: %+v", m.Info)
	}
	small, err := m.Estimate(Profile{CtxSize: 128, Parallel: 1, BatchSize: 64, UBatchSize: 32})
	if err != nil {
		t.Fatal(err)
	}
	big, err := m.Estimate(Profile{CtxSize: 4096, Parallel: 2, BatchSize: 64, UBatchSize: 32})
	if err != nil {
		t.Fatal(err)
	}
	if small.WeightsBytes == 0 || big.KVCacheBytes <= small.KVCacheBytes {
		t.Fatalf("estimates do not grow with context: small %+v big %+v", small, big)
	}
	t.Logf("%s; ctx 4096: %+v", m.Info, big)
}

func TestOpenRejectsNonGGUF(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.gguf")
	if err := os.WriteFile(p, []byte("#!/bin/sh\necho not a model, but long enough\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(p); !errors.Is(err, ErrNotGGUF) {
		t.Fatalf("err = %v, want ErrNotGGUF", err)
	}
}

// FuzzOpen feeds arbitrary bytes (seeded by testdata/fuzz/FuzzOpen) through the
// header check and the metadata parser; neither may panic.
func FuzzOpen(f *testing.F) {
	f.Add(header("GGUF", 3, 0, 0))
	f.Add(header("GGUF", 3, 1, 1))
	f.Add([]byte("GGUF"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = CheckHeader(bytes.NewReader(data))
		p := filepath.Join(dir, "f.gguf")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := Open(p)
		if err == nil && m.Info.Architecture == "" && len(data) < HeaderSize {
			t.Fatalf("accepted %d bytes without a header", len(data))
		}
	})
}
