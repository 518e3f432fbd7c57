package render

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/raygw/raygw/internal/config"
)

var update = flag.Bool("update", false, "rewrite golden files")

func load(t *testing.T, flags map[string]string) *config.Config {
	t.Helper()
	l, err := config.Load(config.Options{Flags: flags})
	if err != nil {
		t.Fatal(err)
	}
	return l.Config
}

func TestGolden(t *testing.T) {
	for _, profile := range []string{"1b", "1b-8gb"} {
		t.Run(profile, func(t *testing.T) {
			files, err := All(load(t, map[string]string{"RAY_PROFILE": profile}), Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range files {
				golden := filepath.Join("testdata", profile, f.Name)
				if *update {
					if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(golden, []byte(f.Content), 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run with -update)", err)
				}
				if d := cmp.Diff(string(want), f.Content); d != "" {
					t.Errorf("%s differs from golden (-want +got):\n%s", f.Name, d)
				}
			}
		})
	}
}

func TestEnvExampleListsEverySettingAndLoads(t *testing.T) {
	for _, profile := range []string{"1b", "1b-8gb"} {
		text := EnvExample(profile)
		entries, err := config.ParseEnvFile(strings.NewReader(text))
		if err != nil {
			t.Fatalf("%s: example does not parse: %v", profile, err)
		}
		seen := map[string]int{}
		for _, e := range entries {
			seen[e.Key]++
		}
		for _, s := range config.Settings() {
			if seen[s.Name] != 1 {
				t.Errorf("%s: %s listed %d times, want once", profile, s.Name, seen[s.Name])
			}
			if s.Secret && strings.Contains(text, "\n"+s.Name+"=") && !strings.Contains(text, "\n"+s.Name+"=\n") {
				t.Errorf("%s: secret %s has a value", profile, s.Name)
			}
		}
		path := filepath.Join(t.TempDir(), "ray.env")
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		l, err := config.Load(config.Options{EnvFile: path})
		if err != nil {
			t.Fatalf("%s: example does not load: %v", profile, err)
		}
		if l.Profile != profile {
			t.Errorf("example selects profile %q, want %q", l.Profile, profile)
		}
	}
}

func TestQuoteArg(t *testing.T) {
	tests := map[string]string{
		"/usr/bin/x":     "/usr/bin/x",
		"a b":            `"a b"`,
		"":               `""`,
		`say "hi"`:       `"say \"hi\""`,
		"100%":           "100%%",
		"$HOME":          `"$$HOME"`,
		`back\slash`:     `"back\\slash"`,
		"line\nbreak":    `"line\nbreak"`,
		"local-1b-q4":    "local-1b-q4",
		"--cache-ram=1%": "--cache-ram=1%%",
	}
	for in, want := range tests {
		t.Run(in, func(t *testing.T) {
			if got := QuoteArg(in); got != want {
				t.Errorf("QuoteArg(%q) = %s, want %s", in, got, want)
			}
		})
	}
}

func TestUpstreamAddr(t *testing.T) {
	tests := map[string]string{
		"127.0.0.1": "127.0.0.1:3000", "::1": "[::1]:3000", "[::1]": "[::1]:3000",
		"0.0.0.0": "127.0.0.1:3000", "::": "[::1]:3000", "localhost": "localhost:3000",
	}
	for host, want := range tests {
		c := &config.Config{Host: host, Port: 3000}
		if got := UpstreamAddr(c); got != want {
			t.Errorf("UpstreamAddr(%q) = %s, want %s", host, got, want)
		}
	}
}

func TestRenderErrors(t *testing.T) {
	tests := []struct {
		name  string
		flags map[string]string
		want  string
	}{
		{"tiny memory", map[string]string{"RAY_DEPLOY_MEMORY_MIB": "1500"}, "memory target too small"},
		{"relative runtime", map[string]string{"RAY_GATEWAY_RUNTIME_BINARY": "raygw"}, "RAY_GATEWAY_RUNTIME_BINARY"},
		{"no site", map[string]string{"RAY_DEPLOY_PUBLIC_SITE": ""}, "RAY_DEPLOY_PUBLIC_SITE"},
		{"no user", map[string]string{"RAY_DEPLOY_SERVICE_USER": ""}, "RAY_DEPLOY_SERVICE_USER"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := All(load(t, tt.flags), Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want mention of %s", err, tt.want)
			}
		})
	}
}

// TestSystemdAnalyzeVerify runs the real systemd-analyze on both units, with
// ExecStart binaries that exist.
func TestSystemdAnalyzeVerify(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatalf("systemd-analyze is required (Debian package systemd): %v", err)
	}
	for _, profile := range []string{"1b", "1b-8gb"} {
		t.Run(profile, func(t *testing.T) {
			dir := t.TempDir()
			bin := filepath.Join(dir, "bin")
			for _, name := range []string{"raygw", "llama-server"} {
				writeExec(t, filepath.Join(bin, name))
			}
			c := load(t, map[string]string{"RAY_PROFILE": profile,
				"RAY_GATEWAY_RUNTIME_BINARY": filepath.Join(bin, "raygw"),
				"RAY_LLAMA_CPP_BINARY_PATH":  filepath.Join(bin, "llama-server")})
			files, err := All(c, Options{})
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "units")
			if err := WriteFiles(out, files); err != nil {
				t.Fatal(err)
			}
			if err := VerifyUnits(sa, filepath.Join(out, GatewayUnitName), filepath.Join(out, LlamaUnitName)); err != nil {
				t.Fatal(err)
			}
			// The same check must fail when a binary is missing.
			if err := os.Remove(filepath.Join(bin, "llama-server")); err != nil {
				t.Fatal(err)
			}
			if err := VerifyUnits(sa, filepath.Join(out, LlamaUnitName)); err == nil {
				t.Fatal("verify accepted a unit whose ExecStart binary is missing")
			}
		})
	}
}

// TestCaddyValidate runs the real caddy validate on the Caddyfile.
func TestCaddyValidate(t *testing.T) {
	caddy, err := exec.LookPath("caddy")
	if err != nil {
		t.Fatalf("caddy is required (Debian package caddy): %v", err)
	}
	for _, host := range []string{"127.0.0.1", "::1", "0.0.0.0"} {
		t.Run(host, func(t *testing.T) {
			c := load(t, map[string]string{"RAY_HOST": host, "RAY_DEPLOY_PUBLIC_SITE": "api.raygw.test"})
			text, err := Caddyfile(c)
			if err != nil {
				t.Fatal(err)
			}
			if err := ValidateCaddyfile(caddy, text); err != nil {
				t.Fatal(err)
			}
		})
	}
	if err := ValidateCaddyfile(caddy, "site {\n reverse_proxy {\n"); err == nil {
		t.Fatal("caddy accepted a broken Caddyfile")
	}
}

func writeExec(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}
