package stage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raygw/raygw/internal/config"
	"github.com/raygw/raygw/internal/ops/hostfs"
	"github.com/raygw/raygw/internal/testenv"
)

// setup returns a plan that stages the real llama-server and model into a
// world-searchable temp tree, run as the account "nobody" when root.
func setup(t *testing.T, extra map[string]string) (Plan, string, hostfs.User) {
	t.Helper()
	dir := t.TempDir()
	// t.TempDir and its parent are 0700; the service user must get in.
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	flags := map[string]string{
		"RAY_LLAMA_CPP_BINARY_PATH": filepath.Join(dir, "bin", "llama-server"),
		"RAY_LLAMA_CPP_MODEL_PATH":  filepath.Join(dir, "models", "m.gguf"),
		"RAY_DEPLOY_SERVICE_USER":   "nobody",
	}
	for k, v := range extra {
		flags[k] = v
	}
	l, err := config.Load(config.Options{Flags: flags})
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(l.Config, Inputs{BinarySource: testenv.LlamaServer(t), ModelSource: testenv.Model(t), WorkDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	u, err := hostfs.New("/").LookupUser("nobody")
	if err != nil {
		t.Skipf("no nobody account: %v", err)
	}
	return p, dir, u
}

func stager(t *testing.T) (*Stager, *bytes.Buffer) {
	log := &bytes.Buffer{}
	return &Stager{Host: hostfs.New("/"), Log: log, Progress: io.Discard, Timeout: 20 * time.Second}, log
}

func TestApplyRealArtifacts(t *testing.T) {
	p, dir, u := setup(t, nil)
	s, log := stager(t)
	if err := s.CheckSources(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(context.Background(), p, u); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	for _, a := range p.Artifacts {
		if sum(t, a.Target) != sum(t, a.Source) {
			t.Errorf("%s differs from its source", a.Target)
		}
		fi, _ := os.Stat(a.Target)
		want := os.FileMode(0o755)
		if a.Kind == Model {
			want = 0o640
		}
		if os.Geteuid() == 0 && fi.Mode().Perm() != want {
			t.Errorf("%s mode %s, want %s", a.Target, fi.Mode().Perm(), want)
		}
	}
	if os.Geteuid() == 0 && strings.Contains(log.String(), "skipped") {
		t.Errorf("service-user checks skipped as root:\n%s", log)
	}
	assertNoTemp(t, dir)
	// The staged binary still answers --help and is what the model check ran.
	if out, err := exec.Command(filepath.Join(dir, "bin", "llama-server"), "--help").CombinedOutput(); err != nil || !bytes.Contains(out, []byte("--ctx-size")) {
		t.Fatalf("staged binary: %v", err)
	}
}

func TestApplyFailuresKeepLastGoodFile(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(t *testing.T, p *Plan, s *Stager)
		want   error
		inErr  string
	}{
		{"model checksum", func(t *testing.T, p *Plan, s *Stager) {
			p.Artifacts = p.Artifacts[1:]
			p.Artifacts[0].SHA256 = strings.Repeat("0", 64)
		}, ErrChecksum, "want 0000"},
		{"headroom", func(t *testing.T, p *Plan, s *Stager) {
			s.Host.Statfs = func(string) (hostfs.Usage, error) { return hostfs.Usage{AvailBytes: 200 << 20}, nil }
			p.Artifacts = p.Artifacts[1:]
			p.MinFreeMiB = 0
		}, ErrHeadroom, "200 MiB free, the 2 MiB copy must leave 256 MiB"},
		{"interrupted copy", func(t *testing.T, p *Plan, s *Stager) {
			p.Artifacts = p.Artifacts[1:]
			s.Open = func(path string) (io.ReadCloser, error) {
				f, err := os.Open(path)
				return struct {
					io.Reader
					io.Closer
				}{io.MultiReader(io.LimitReader(f, 4096), errReader{}), f}, err
			}
		}, nil, "interrupted after 4096"},
		{"unsupported flag", func(t *testing.T, p *Plan, s *Stager) {
			p.Artifacts = p.Artifacts[:1]
			p.Flags = append(p.Flags, "--raygw-made-up")
		}, ErrFlags, "--raygw-made-up"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, dir, u := setup(t, nil)
			s, _ := stager(t)
			for _, a := range p.Artifacts {
				if err := os.MkdirAll(filepath.Dir(a.Target), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(a.Target, []byte("last good"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			tt.mutate(t, &p, s)
			err := s.Apply(context.Background(), p, u)
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) || !strings.Contains(err.Error(), tt.inErr) {
				t.Fatalf("err = %v, want %v containing %q", err, tt.want, tt.inErr)
			}
			for _, a := range p.Artifacts {
				if b, _ := os.ReadFile(a.Target); string(b) != "last good" {
					t.Errorf("%s was replaced after a failed stage", a.Target)
				}
			}
			assertNoTemp(t, dir)
		})
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("disk went away") }

func TestNewPlan(t *testing.T) {
	l, err := config.Load(config.Options{Flags: map[string]string{
		"RAY_MODEL_SOURCE_PATH": "env.gguf", "RAY_MODEL_SHA256": strings.Repeat("a", 64),
	}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(l.Config, Inputs{WorkDir: "/srv"})
	if err != nil || len(p.Artifacts) != 1 || p.Artifacts[0].Source != "/srv/env.gguf" || p.Artifacts[0].SHA256 != strings.Repeat("a", 64) {
		t.Fatalf("env sources: %+v %v", p, err)
	}
	p, err = NewPlan(l.Config, Inputs{WorkDir: "/srv", ModelSource: "/flag.gguf", ModelSHA256: strings.Repeat("B", 64)})
	if err != nil || p.Artifacts[0].Source != "/flag.gguf" || p.Artifacts[0].SHA256 != strings.Repeat("b", 64) {
		t.Fatalf("flags must win: %+v %v", p, err)
	}
	if _, err := NewPlan(l.Config, Inputs{ModelSHA256: "xyz"}); err == nil {
		t.Fatal("bad digest accepted")
	}
	l2, _ := config.Load(config.Options{})
	if _, err := NewPlan(l2.Config, Inputs{}); !errors.Is(err, ErrNothingToStage) {
		t.Fatalf("err = %v", err)
	}
}

func TestCommandsParse(t *testing.T) {
	p, _, _ := setup(t, nil)
	p.Artifacts[0].SHA256 = strings.Repeat("c", 64)
	cmd := exec.Command("bash", "-n")
	cmd.Stdin = strings.NewReader(p.Commands())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v %s", err, out)
	}
	for _, want := range []string{".ray-stage-llama-server.", "sha256sum -c", "runuser -u nobody", "mv -f --", "--kv-unified"} {
		if !strings.Contains(p.Commands(), want) {
			t.Errorf("commands lack %q", want)
		}
	}
}

func sum(t *testing.T, p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func assertNoTemp(t *testing.T, dir string) {
	t.Helper()
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && strings.HasPrefix(fi.Name(), TempPrefix) {
			t.Errorf("temp file left behind: %s", p)
		}
		return nil
	})
}
