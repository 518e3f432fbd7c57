package doctor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raygw/raygw/internal/config"
	"github.com/raygw/raygw/internal/ops/hostfs"
	"github.com/raygw/raygw/internal/testenv"
)

// fakeHost is a fabricated, healthy 4 GB host tree under t.TempDir().
type fakeHost struct {
	t       *testing.T
	root    string
	env     []string          // extra lines for /etc/ray/ray.env
	environ []string          // process environment for config.Load
	lowFree map[string]uint64 // host path prefix -> available MiB
	arch    string
	caddy   string // --caddy-binary
	timeout time.Duration
}

const goodKey = "0123456789abcdef0123456789abcdef"

func newFakeHost(t *testing.T) *fakeHost {
	t.Helper()
	f := &fakeHost{t: t, root: t.TempDir(), lowFree: map[string]uint64{}, arch: "amd64", timeout: 10 * time.Second}
	f.write("/etc/passwd", "root:x:0:0:root:/root:/bin/bash\nray:x:999:999::/var/lib/ray:/usr/sbin/nologin\n", 0o644)
	f.write("/etc/group", "root:x:0:\nray:x:999:\n", 0o644)
	f.write("/proc/meminfo", "MemTotal:        4030000 kB\nMemFree:         3000000 kB\nSwapTotal:       1048572 kB\n", 0o444)
	f.write("/proc/sys/vm/swappiness", "10\n", 0o644)
	f.write("/sys/devices/system/cpu/online", "0-1\n", 0o444)
	f.mkdir("/run/systemd/system")
	f.mkdir("/var/log")
	f.mkdir("/tmp")
	f.mkdir("/var/tmp")
	for _, d := range []string{"/var/lib/ray/state", "/var/lib/ray/async-queue"} {
		f.mkdir(d)
		if os.Geteuid() == 0 {
			if err := os.Chown(f.local(d), 999, 999); err != nil {
				t.Fatal(err)
			}
		}
	}
	f.write("/usr/bin/systemctl", "#!/bin/sh\nexit 0\n", 0o755)
	f.link("/usr/bin/systemd-analyze", "/usr/bin/systemd-analyze")
	f.link("/usr/bin/caddy", "/usr/bin/caddy")
	f.write("/usr/local/bin/raygw", "#!/bin/sh\necho 'raygw 1.2.3 go1.26.8 linux/amd64'\n", 0o755)
	f.write("/usr/local/bin/llama-server", "#!/bin/sh\nexec "+testenv.LlamaServer(t)+" \"$@\"\n", 0o755)
	model, err := os.ReadFile(testenv.Model(t))
	if err != nil {
		t.Fatal(err)
	}
	f.write("/var/lib/ray/models/local-1b-q4.gguf", string(model), 0o644)
	f.env = []string{"RAY_API_KEYS=" + goodKey, "RAY_DEPLOY_PUBLIC_SITE=api.raygw.dev", "RAY_MODEL_QUANTIZATION=f32"}
	return f
}

func (f *fakeHost) local(p string) string { return filepath.Join(f.root, p) }

func (f *fakeHost) mkdir(p string) {
	if err := os.MkdirAll(f.local(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fakeHost) write(p, content string, mode os.FileMode) {
	f.mkdir(filepath.Dir(p))
	if err := os.WriteFile(f.local(p), []byte(content), mode); err != nil {
		f.t.Fatal(err)
	}
	if err := os.Chmod(f.local(p), mode); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fakeHost) link(p, target string) {
	f.mkdir(filepath.Dir(p))
	if err := os.Symlink(target, f.local(p)); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fakeHost) remove(p string) {
	if err := os.RemoveAll(f.local(p)); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fakeHost) statfs(p string) (hostfs.Usage, error) {
	rel := "/" + strings.TrimPrefix(strings.TrimPrefix(p, f.root), "/")
	for pre, free := range f.lowFree {
		if rel == pre || strings.HasPrefix(rel, pre+"/") {
			return hostfs.Usage{Device: 2, TotalBytes: 10 << 30, AvailBytes: free << 20, Inodes: 1e6, FreeInodes: 1e5}, nil
		}
	}
	return hostfs.Usage{Device: 1, TotalBytes: 40 << 30, AvailBytes: 20 << 30, Inodes: 1e6, FreeInodes: 1e5}, nil
}

// writeEnv writes /etc/ray/ray.env from f.env (mode 0600).
func (f *fakeHost) writeEnv() { f.write("/etc/ray/ray.env", strings.Join(f.env, "\n")+"\n", 0o600) }

// run writes the env file, loads the configuration and runs the named
// checks (every check when none is named).
func (f *fakeHost) run(only ...string) []Result {
	f.t.Helper()
	if _, err := os.Stat(f.local("/etc/ray/ray.env")); os.IsNotExist(err) {
		f.writeEnv()
	}
	l, err := config.Load(config.Options{EnvFile: f.local("/etc/ray/ray.env"), Environ: f.environ})
	if err != nil {
		f.t.Fatal(err)
	}
	h := hostfs.New(f.root)
	h.Statfs = f.statfs
	return Run(&Env{Host: h, Config: l, EnvFile: "/etc/ray/ray.env", CaddyBinary: f.caddy, Arch: f.arch, Timeout: f.timeout}, only...)
}

func find(rs []Result, name string) (Result, bool) {
	for _, r := range rs {
		if r.Name == name {
			return r, true
		}
	}
	return Result{}, false
}
