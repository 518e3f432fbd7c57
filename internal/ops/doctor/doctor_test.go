package doctor

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/raygw/raygw/internal/config"
	"github.com/raygw/raygw/internal/ops/hostfs"
)

func TestHealthyFakeHost(t *testing.T) {
	f := newFakeHost(t)
	rs := f.run()
	if len(rs) != len(Checks()) {
		t.Fatalf("got %d results for %d checks", len(rs), len(Checks()))
	}
	for _, r := range rs {
		if r.Status != OK {
			t.Errorf("%s: %s %s (fix: %s)", r.Name, r.Status, r.Message, r.Fix)
		}
	}
	if ExitCode(rs) != 0 && !t.Failed() {
		t.Fatal("exit code not 0 on a healthy host")
	}
}

type mutation struct {
	name   string
	change func(f *fakeHost)
	check  string
	status Status
	want   string
}

var mutations = []mutation{
	{"unknown env name", func(f *fakeHost) { f.environ = []string{"RAY_HOTS=1"} }, "config", Warn, "RAY_HOTS"},
	{"auth off", func(f *fakeHost) { f.env = append(f.env, "RAY_AUTH_ENABLED=false") }, "auth", Warn, "RAY_AUTH_ENABLED=false"},
	{"no keys", func(f *fakeHost) { f.env = f.env[1:] }, "auth", Fail, "no client API keys"},
	{"placeholder key", func(f *fakeHost) { f.env[0] = "RAY_API_KEYS=replace-with-comma-separated-client-api-keys" }, "auth", Fail, "placeholder"},
	{"env file readable", func(f *fakeHost) { f.writeEnv(); chmod(f, "/etc/ray/ray.env", 0o644) }, "env-file", Fail, "mode 0644"},
	{"env file not root", func(f *fakeHost) { f.writeEnv(); chown(f, "/etc/ray/ray.env", 1000) }, "env-file", Fail, "owned by uid 1000"},
	{"no systemd", func(f *fakeHost) { f.remove("/run/systemd") }, "systemd", Fail, "not the init system"},
	{"no systemctl", func(f *fakeHost) { f.remove("/usr/bin/systemctl") }, "systemd", Fail, "systemctl not found"},
	{"unit binary missing", func(f *fakeHost) { f.remove("/usr/local/bin/llama-server") }, "systemd-units", Fail, "llama-server is not executable"},
	{"no systemd-analyze", func(f *fakeHost) { f.remove("/usr/bin/systemd-analyze") }, "systemd-units", Warn, "not verified"},
	{"target over RAM", func(f *fakeHost) {
		f.write("/proc/meminfo", "MemTotal: 2000000 kB\nSwapTotal: 1048572 kB\n", 0o444)
	}, "memory-target", Fail, "exceeds detected RAM by more than 25%"},
	{"target under floors", func(f *fakeHost) { f.env = append(f.env, "RAY_DEPLOY_MEMORY_MIB=1600") }, "memory-target", Fail, "cgroup floors"},
	{"no caddy", func(f *fakeHost) { f.remove("/usr/bin/caddy") }, "caddy", Fail, "caddy not found"},
	{"caddy by flag", func(f *fakeHost) {
		f.remove("/usr/bin/caddy")
		f.link("/opt/caddy/bin/caddy", "/usr/bin/caddy")
		f.caddy = "/opt/caddy/bin/caddy"
	}, "caddy", OK, "/opt/caddy/bin/caddy"},
	{"caddy by setting", func(f *fakeHost) {
		f.remove("/usr/bin/caddy")
		f.link("/srv/caddy", "/usr/bin/caddy")
		f.env = append(f.env, "RAY_DEPLOY_CADDY_BINARY=/srv/caddy")
	}, "caddy", OK, "/srv/caddy"},
	{"caddyfile invalid", func(f *fakeHost) {
		f.remove("/usr/bin/caddy")
		f.write("/usr/bin/caddy", "#!/bin/sh\n[ \"$1\" = version ] && echo v2 && exit 0\necho 'Error: adapting config: bad site' >&2; exit 1\n", 0o755)
	}, "caddyfile", Fail, "bad site"},
	{"placeholder site", func(f *fakeHost) { f.env[1] = "RAY_DEPLOY_PUBLIC_SITE=ray.example.com" }, "public-site", Warn, "placeholder"},
	{"localhost site", func(f *fakeHost) { f.env[1] = "RAY_DEPLOY_PUBLIC_SITE=localhost" }, "public-site", Warn, "placeholder"},
	{"http-only site", func(f *fakeHost) { f.env[1] = "RAY_DEPLOY_PUBLIC_SITE=http://api.raygw.dev" }, "public-site", Warn, "HTTP-only"},
	{"ipv6 loopback", func(f *fakeHost) { f.env = append(f.env, "RAY_HOST=::1") }, "caddy-upstream", OK, "[::1]:3000"},
	{"wildcard host", func(f *fakeHost) { f.env = append(f.env, "RAY_HOST=0.0.0.0") }, "caddy-upstream", Warn, "bypass Caddy"},
	{"public host", func(f *fakeHost) { f.env = append(f.env, "RAY_HOST=203.0.113.7") }, "caddy-upstream", Warn, "not loopback"},
	{"caddy state full", func(f *fakeHost) { f.mkdir("/var/lib/caddy"); f.lowFree["/var/lib/caddy"] = 10 }, "caddy-storage", Fail, "10 MiB free"},
	{"no user", func(f *fakeHost) { f.write("/etc/passwd", "root:x:0:0::/root:/bin/sh\n", 0o644) }, "service-user", Fail, "no such account"},
	{"numeric uid unknown", func(f *fakeHost) { f.env = append(f.env, "RAY_DEPLOY_SERVICE_USER=4242") }, "service-user", Fail, "no account has this UID"},
	{"numeric uid known", func(f *fakeHost) { f.env = append(f.env, "RAY_DEPLOY_SERVICE_USER=999") }, "service-user", OK, "uid 999"},
	{"root user", func(f *fakeHost) { f.env = append(f.env, "RAY_DEPLOY_SERVICE_USER=root") }, "service-user", Fail, "is root"},
	{"model unreadable", func(f *fakeHost) { chmod(f, "/var/lib/ray/models/local-1b-q4.gguf", 0o600) }, "service-user-access", Fail, "cannot read"},
	{"model dir closed", func(f *fakeHost) { chmod(f, "/var/lib/ray/models", 0o700) }, "service-user-access", Fail, "cannot enter /var/lib/ray/models"},
	{"gateway missing", func(f *fakeHost) { f.remove("/usr/local/bin/raygw") }, "gateway-binary", Fail, "no such file"},
	{"gateway not executable", func(f *fakeHost) { chmod(f, "/usr/local/bin/raygw", 0o644) }, "gateway-binary", Fail, "not executable"},
	{"gateway not raygw", func(f *fakeHost) { f.write("/usr/local/bin/raygw", "#!/bin/sh\necho bun 1.1\n", 0o755) }, "gateway-binary", Fail, "is not raygw"},
	{"gateway wrong arch", func(f *fakeHost) {
		f.write("/usr/local/bin/raygw", "#!/bin/sh\necho 'raygw 1 go1.26 linux/arm64'\n", 0o755)
	}, "gateway-binary", Fail, "built for linux/arm64"},
	{"gateway version", func(f *fakeHost) {}, "gateway-binary", OK, "raygw 1.2.3"},
	{"workdir outside var lib", func(f *fakeHost) { f.env = append(f.env, "RAY_STATE_DIR=/srv/ray") }, "working-directory", Fail, "will not create it"},
	{"workdir full", func(f *fakeHost) { f.lowFree["/var/lib/ray"] = 100 }, "working-directory", Fail, "100 MiB free, need 1024 MiB"},
	{"llama hangs", func(f *fakeHost) {
		f.write("/usr/local/bin/llama-server", "#!/bin/sh\nexec sleep 60\n", 0o755)
		f.timeout = 300 * time.Millisecond
	}, "llama-server", Fail, "did not finish"},
	{"llama old", func(f *fakeHost) {
		f.write("/usr/local/bin/llama-server", "#!/bin/sh\necho '--model --alias --host --port --ctx-size'\n", 0o755)
	}, "llama-flags", Fail, "does not support --parallel"},
	{"model missing", func(f *fakeHost) { f.remove("/var/lib/ray/models/local-1b-q4.gguf") }, "model", Fail, "is missing"},
	{"model garbage", func(f *fakeHost) { f.write("/var/lib/ray/models/local-1b-q4.gguf", strings.Repeat("x", 64), 0o644) }, "model", Fail, "not a GGUF"},
	{"quantization label", func(f *fakeHost) { f.env[2] = "RAY_MODEL_QUANTIZATION=q4_k_m" }, "model", Warn, "does not match"},
	{"model over memory", func(f *fakeHost) { f.env = append(f.env, "RAY_LLAMA_CPP_CACHE_RAM_MIB=2940") }, "memory-fit", Fail, "killed by its cgroup"},
	{"gateway budget", func(f *fakeHost) { f.env = append(f.env, "RAY_CACHE_MAX_BYTES=1073741824") }, "gateway-budget", Fail, "response cache 1024"},
	{"async full", func(f *fakeHost) { f.lowFree["/var/lib/ray/async-queue"] = 300 }, "async-queue-storage", Fail, "300 MiB free"},
	{"too many threads", func(f *fakeHost) { f.env = append(f.env, "RAY_LLAMA_CPP_THREADS=8") }, "launch-profile", Fail, "exceeds 2 vCPUs"},
	{"concurrency vs slots", func(f *fakeHost) { f.env = append(f.env, "RAY_SCHEDULER_CONCURRENCY=2") }, "launch-profile", Warn, "differs from RAY_LLAMA_CPP_PARALLEL"},
	{"concurrency vs vcpus", func(f *fakeHost) {
		f.env = append(f.env, "RAY_SCHEDULER_CONCURRENCY=3", "RAY_LLAMA_CPP_PARALLEL=3")
	}, "launch-profile", Warn, "RAY_SCHEDULER_CONCURRENCY=3 exceeds 2 vCPUs"},
	{"output vs context", func(f *fakeHost) {
		f.env = append(f.env, "RAY_MODEL_MAX_OUTPUT_TOKENS=4096", "RAY_DEGRADATION_MAX_TOKENS=64")
	}, "launch-profile", Fail, "leaves no prompt room"},
	{"body vs context", func(f *fakeHost) { f.env = append(f.env, "RAY_REQUEST_BODY_LIMIT_BYTES=10000000") }, "launch-profile", Warn, "RAY_REQUEST_BODY_LIMIT_BYTES"},
	{"prompt cache vs memory", func(f *fakeHost) { f.env = append(f.env, "RAY_LLAMA_CPP_CACHE_RAM_MIB=1600") }, "launch-profile", Warn, "over half"},
	{"arch mismatch", func(f *fakeHost) {
		data, err := os.ReadFile("/bin/true")
		if err != nil {
			f.t.Fatal(err)
		}
		f.write("/usr/local/bin/llama-server", string(data), 0o755)
		f.arch = "arm64"
	}, "architecture", Fail, "host is arm64"},
	{"model under home", func(f *fakeHost) { f.env = append(f.env, "RAY_LLAMA_CPP_MODEL_PATH=/home/op/m.gguf") }, "hidden-paths", Fail, "ProtectHome=true hides /home"},
	{"binary under tmp", func(f *fakeHost) { f.env = append(f.env, "RAY_LLAMA_CPP_BINARY_PATH=/tmp/llama-server") }, "hidden-paths", Fail, "PrivateTmp=true"},
	{"state under run user", func(f *fakeHost) { f.env = append(f.env, "RAY_STATE_DIR=/run/user/1000/ray") }, "hidden-paths", Fail, "/run/user"},
	{"no swap", func(f *fakeHost) { f.write("/proc/meminfo", "MemTotal: 4030000 kB\nSwapTotal: 0 kB\n", 0o444) }, "swap", Warn, "needs a swap cushion"},
	{"eager swapping", func(f *fakeHost) { f.write("/proc/sys/vm/swappiness", "60\n", 0o644) }, "swap", Warn, "swaps eagerly"},
	{"8gb without swap", func(f *fakeHost) {
		f.env = append(f.env, "RAY_PROFILE=1b-8gb")
		f.write("/proc/meminfo", "MemTotal: 8100000 kB\nSwapTotal: 0 kB\n", 0o444)
	}, "swap", OK, "not required"},
	{"logs full", func(f *fakeHost) { f.lowFree["/var/log"] = 5 }, "log-storage", Fail, "5 MiB free"},
	{"var tmp full", func(f *fakeHost) { f.lowFree["/var/tmp"] = 7 }, "tmp-storage", Fail, "7 MiB free"},
}

func TestMutations(t *testing.T) {
	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			if (m.check == "env-file" || m.check == "service-user-access") && os.Geteuid() != 0 {
				t.Skip("needs root to set file owners")
			}
			f := newFakeHost(t)
			m.change(f)
			rs := f.run(m.check)
			r, found := find(rs, m.check)
			if !found {
				t.Fatalf("no %s result", m.check)
			}
			if r.Status != m.status || !strings.Contains(r.Message, m.want) {
				t.Fatalf("%s = %s %q (fix: %s), want %s containing %q", m.check, r.Status, r.Message, r.Fix, m.status, m.want)
			}
			if r.Status != OK && r.Fix == "" && m.check != "config" {
				t.Errorf("%s has no fix", m.check)
			}
			if m.status == Fail && ExitCode(rs) != 2 {
				t.Errorf("exit code %d with a failure", ExitCode(rs))
			}
		})
	}
}

func chmod(f *fakeHost, p string, mode os.FileMode) {
	if err := os.Chmod(f.local(p), mode); err != nil {
		f.t.Fatal(err)
	}
}

func chown(f *fakeHost, p string, uid int) {
	if err := os.Chown(f.local(p), uid, uid); err != nil {
		f.t.Fatal(err)
	}
}

func TestOutputFormats(t *testing.T) {
	rs := []Result{{Name: "a", Status: OK, Message: "fine"}, {Name: "b", Status: Warn, Message: "meh", Fix: "do x"}}
	var buf bytes.Buffer
	WriteText(&buf, rs)
	want := "ok    a                    fine\nwarn  b                    meh (fix: do x)\n"
	if buf.String() != want {
		t.Errorf("text:\n%q\nwant\n%q", buf.String(), want)
	}
	buf.Reset()
	if err := WriteJSON(&buf, rs); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Worst   string
		Results []map[string]string
	}
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Worst != "warn" || got.Results[1]["status"] != "warn" || got.Results[1]["fix"] != "do x" {
		t.Errorf("json: %s", buf.String())
	}
	if ExitCode(rs) != 1 || ExitCode(rs[:1]) != 0 || ExitCode(append(rs, Result{Status: Fail})) != 2 {
		t.Error("exit codes are not 0 ok / 1 warn / 2 fail")
	}
}

// TestRealMachine runs every check against this machine: each must produce a
// result with a valid status and a message.
func TestRealMachine(t *testing.T) {
	l, err := config.Load(config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rs := Run(&Env{Host: hostfs.New("/"), Config: l})
	if len(rs) != len(Checks()) {
		t.Fatalf("got %d results for %d checks", len(rs), len(Checks()))
	}
	for i, r := range rs {
		if r.Name != Checks()[i].Name || r.Status < OK || r.Status > Fail || r.Message == "" {
			t.Errorf("bad result %+v", r)
		}
		if strings.Contains(r.Message, "check crashed") {
			t.Errorf("%s crashed: %s", r.Name, r.Message)
		}
	}
	var buf bytes.Buffer
	WriteText(&buf, rs)
	t.Logf("\n%s", buf.String())
}
