package pull

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fileServer serves data at /m.gguf; the first request is cut after cut bytes.
type fileServer struct {
	data   []byte
	cut    int
	mu     sync.Mutex
	ranges []string
}

func (s *fileServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.ranges = append(s.ranges, r.Header.Get("Range"))
	first := len(s.ranges) == 1
	s.mu.Unlock()
	if first && s.cut > 0 {
		w.Header().Set("Content-Length", strconv.Itoa(len(s.data)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(s.data[:s.cut])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // drop the connection mid-body
	}
	http.ServeContent(w, r, "m.gguf", time.Unix(0, 0), bytes.NewReader(s.data))
}

func payload() ([]byte, string) {
	data := append([]byte("GGUF\x03\x00\x00\x00"), make([]byte, 16)...)
	data = append(data, bytes.Repeat([]byte{7}, 200_000)...)
	sum := sha256.Sum256(data)
	return data, hex.EncodeToString(sum[:])
}

func TestResumeAfterInterruption(t *testing.T) {
	data, sum := payload()
	fs := &fileServer{data: data, cut: 50_000}
	srv := httptest.NewServer(fs)
	defer srv.Close()
	dest := filepath.Join(t.TempDir(), "models", "m.gguf")
	p := &Puller{Client: srv.Client()}
	err := p.Pull(context.Background(), srv.URL+"/m.gguf", dest, sum)
	if err == nil || !strings.Contains(err.Error(), "rerun to resume") {
		t.Fatalf("first pull: err = %v, want an interruption", err)
	}
	if fi, err := os.Stat(dest + PartSuffix); err != nil || fi.Size() != 50_000 {
		t.Fatalf("part file after interruption: %v %v", fi, err)
	}
	if _, err := os.Stat(dest); !os.IsNotExist(err) {
		t.Fatal("destination exists after an interrupted pull")
	}
	var progress bytes.Buffer
	p.Progress = &progress
	if err := p.Pull(context.Background(), srv.URL+"/m.gguf", dest, sum); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(dest)
	if !bytes.Equal(got, data) {
		t.Fatal("resumed file differs")
	}
	if fs.ranges[1] != "bytes=50000-" {
		t.Fatalf("second request Range = %q, want bytes=50000-", fs.ranges[1])
	}
	if _, err := os.Stat(dest + PartSuffix); !os.IsNotExist(err) {
		t.Fatal("part file left behind")
	}
	if progress.Len() == 0 {
		t.Error("no progress shown")
	}
	if err := p.Pull(context.Background(), srv.URL+"/m.gguf", dest, sum); !errors.Is(err, ErrExists) {
		t.Fatalf("re-pull over an existing file: %v", err)
	}
}

func TestChecksumMismatchRemovesPart(t *testing.T) {
	data, _ := payload()
	srv := httptest.NewServer(&fileServer{data: data})
	defer srv.Close()
	dest := filepath.Join(t.TempDir(), "m.gguf")
	err := (&Puller{Client: srv.Client()}).Pull(context.Background(), srv.URL+"/m.gguf", dest, strings.Repeat("0", 64))
	if !errors.Is(err, ErrChecksum) {
		t.Fatalf("err = %v", err)
	}
	for _, p := range []string{dest, dest + PartSuffix} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s exists after a checksum mismatch", p)
		}
	}
}

func TestHTTPErrorAndNotGGUF(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing.gguf" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte("<html>not a model, just a login page</html>"))
	}))
	defer srv.Close()
	dir := t.TempDir()
	p := &Puller{Client: srv.Client()}
	if err := p.Pull(context.Background(), srv.URL+"/missing.gguf", filepath.Join(dir, "a.gguf"), ""); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("404: %v", err)
	}
	if err := p.Pull(context.Background(), srv.URL+"/page.gguf", filepath.Join(dir, "b.gguf"), ""); err == nil || !strings.Contains(err.Error(), "not a GGUF") {
		t.Fatalf("html: %v", err)
	}
}

func TestResolve(t *testing.T) {
	tests := []struct{ ref, endpoint, url, name string }{
		{"hf:org/repo/model-q4.gguf", "", DefaultHFEndpoint + "/org/repo/resolve/main/model-q4.gguf", "model-q4.gguf"},
		{"hf:org/repo/sub/m.gguf", "http://127.0.0.1:9/", "http://127.0.0.1:9/org/repo/resolve/main/sub/m.gguf", "m.gguf"},
		{"http://127.0.0.1:8/x/y.gguf?download=1", "", "http://127.0.0.1:8/x/y.gguf?download=1", "y.gguf"},
	}
	for _, tt := range tests {
		u, n, err := Resolve(tt.ref, tt.endpoint)
		if err != nil || u != tt.url || n != tt.name {
			t.Errorf("Resolve(%q) = %q %q %v", tt.ref, u, n, err)
		}
	}
	for _, bad := range []string{"hf:org/repo", "hf:org//m.gguf", "hf:org/repo/../m.gguf", "ftp://h/m.gguf", "m.gguf", "http://127.0.0.1/"} {
		if _, _, err := Resolve(bad, ""); err == nil {
			t.Errorf("Resolve(%q) accepted", bad)
		}
	}
}
