package storage

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/raygw/raygw/internal/config"
	"github.com/raygw/raygw/internal/ops/hostfs"
)

// fakeHost builds a host tree where /data is a separate filesystem.
func fakeHost(t *testing.T, rootFree, dataFree uint64) *hostfs.Host {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"var/cache/apt", "var/lib/apt", "var/log", "tmp", "var/tmp", "usr/local/bin", "data/models", "work"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h := hostfs.New(root)
	h.Statfs = func(p string) (hostfs.Usage, error) {
		rel, _ := filepath.Rel(root, p)
		if rel == "data" || strings.HasPrefix(rel, "data/") {
			return hostfs.Usage{Device: 2, TotalBytes: 100 << 30, AvailBytes: dataFree << 20, Inodes: 1e6, FreeInodes: 1e5}, nil
		}
		return hostfs.Usage{Device: 1, TotalBytes: 40 << 30, AvailBytes: rootFree << 20, Inodes: 1e6, FreeInodes: 1e5}, nil
	}
	return h
}

func cfg(t *testing.T, flags map[string]string) *config.Config {
	t.Helper()
	l, err := config.Load(config.Options{Flags: flags})
	if err != nil {
		t.Fatal(err)
	}
	return l.Config
}

func TestCheck(t *testing.T) {
	flags := map[string]string{"RAY_MODEL_PATH": "/data/models/m.gguf", "RAY_MODEL_SOURCE_PATH": "incoming/m.gguf"}
	tests := []struct {
		name               string
		rootFree, dataFree uint64
		wantErr            bool
		wantInErr          string
	}{
		{"enough", 5000, 5000, false, ""},
		{"data short", 5000, 100, true, "/data/models (for RAY_MODEL_PATH /data/models/m.gguf): 100 MiB free, need 1024 MiB"},
		{"root short", 10, 5000, true, "10 MiB free, need 1024 MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := fakeHost(t, tt.rootFree, tt.dataFree)
			c := cfg(t, flags)
			r, err := Check(h, Targets(c, "/work"), c.Deploy.MinFreeStorageMiB)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil && (!errors.Is(err, ErrShortfall) || !strings.Contains(err.Error(), tt.wantInErr)) {
				t.Fatalf("err = %v, want %q", err, tt.wantInErr)
			}
			if len(r.Volumes) != 2 {
				t.Fatalf("got %d volumes, want 2 (deduplicated): %+v", len(r.Volumes), r.Volumes)
			}
			var buf bytes.Buffer
			r.Write(&buf)
			if !strings.Contains(buf.String(), "RAY_MODEL_SOURCE_PATH /work/incoming/m.gguf") {
				t.Errorf("relative source not resolved from the working directory:\n%s", buf.String())
			}
		})
	}
}

func TestInodeShortfall(t *testing.T) {
	if p := Headroom(hostfs.Usage{AvailBytes: 10 << 30, Inodes: 1000, FreeInodes: 10}, 1024); !strings.Contains(p, "10 inodes free") {
		t.Fatalf("Headroom = %q", p)
	}
	if p := Headroom(hostfs.Usage{AvailBytes: 10 << 30}, 1024); p != "" {
		t.Fatalf("filesystem without inode counts flagged: %q", p)
	}
}

func TestRealMachine(t *testing.T) {
	c := cfg(t, nil)
	r, _ := Check(hostfs.New("/"), Targets(c, t.TempDir()), 1)
	if len(r.Volumes) == 0 || r.Volumes[0].Usage.TotalBytes == 0 {
		t.Fatalf("no usable volume measured on this machine: %+v", r)
	}
}
