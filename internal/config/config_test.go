package config

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func write(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestEverySettingHasAProfileDefault(t *testing.T) {
	for _, s := range Settings() {
		if _, ok := Profile1B[s.Name]; !ok {
			t.Errorf("%s has no default in the 1b profile", s.Name)
		}
	}
	for name := range Profile1B {
		if !Known(name) {
			t.Errorf("profile default %s is not a registered setting", name)
		}
	}
	for name := range Profile1B8GB {
		if !Known(name) {
			t.Errorf("1b-8gb default %s is not a registered setting", name)
		}
	}
}

func TestSeedSettingsAreAllRecognised(t *testing.T) {
	seed, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "seeds", "portable-1b-deployment.md"))
	if err != nil {
		t.Skipf("seed document not available: %v", err)
	}
	entries, err := ParseEnvFile(strings.NewReader(onlyAssignments(string(seed))))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) < 100 {
		t.Fatalf("found only %d seed settings", len(entries))
	}
	for _, e := range entries {
		if !Known(e.Key) {
			t.Errorf("seed setting %s is not recognised", e.Key)
		}
		if e.Key == "RAY_API_KEYS" || e.Key == "RAY_GATEWAY_RUNTIME_BINARY" {
			continue // deliberate differences, documented on Profile1B
		}
		if Profile1B[e.Key] != e.Value {
			t.Errorf("%s: 1b default %q, seed %q", e.Key, Profile1B[e.Key], e.Value)
		}
	}
}

func onlyAssignments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if strings.HasPrefix(l, "RAY_") && strings.Contains(l, "=") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

func TestPrecedenceAndProvenance(t *testing.T) {
	cfgFile := write(t, "c.json", `{"RAY_PORT": 4000, "RAY_SCHEDULER_MAX_QUEUE": 7, "RAY_LOG_LEVEL": "warn", "RAY_PROMPT_COMPILER_FAMILY_METADATA_KEYS": ["a","b"]}`)
	envFile := write(t, "ray.env", "# comment\nRAY_PORT=5000\nexport RAY_SCHEDULER_CONCURRENCY='3'\nRAY_MODEL_ID=\"m $(touch /tmp/never)\"\n")
	l, err := Load(Options{ConfigFile: cfgFile, EnvFile: envFile,
		Environ: []string{"RAY_PORT=6000", "RAY_LOG_LEVEL=debug"},
		Flags:   map[string]string{"RAY_PORT": "7000", "RAY_PROFILE": "1b-8gb"}})
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name, got, want, source string
	}{
		{"RAY_PORT", itoa(l.Port), "7000", SourceFlag},
		{"RAY_LOG_LEVEL", l.LogLevel, "debug", SourceEnvironment},
		{"RAY_SCHEDULER_CONCURRENCY", itoa(l.Scheduler.Concurrency), "3", SourceEnvFile},
		{"RAY_SCHEDULER_MAX_QUEUE", itoa(l.Scheduler.MaxQueue), "7", SourceConfigFile},
		{"RAY_LLAMA_CPP_PARALLEL", itoa(l.LlamaCpp.Parallel), "2", SourceProfile},
		{"RAY_MODEL_ID", l.Model.ID, "m $(touch /tmp/never)", SourceEnvFile},
		{"RAY_PROMPT_COMPILER_FAMILY_METADATA_KEYS", strings.Join(l.PromptCompiler.FamilyMetadataKeys, "|"), "a|b", SourceConfigFile},
	}
	for _, c := range checks {
		if c.got != c.want || l.Sources[c.name] != c.source {
			t.Errorf("%s = %q from %s; want %q from %s", c.name, c.got, l.Sources[c.name], c.want, c.source)
		}
	}
	if l.Profile != "1b-8gb" {
		t.Errorf("profile %q", l.Profile)
	}
	if _, err := os.Stat("/tmp/never"); err == nil {
		t.Fatal("a command substitution in the env file ran")
	}
}

func TestStrictness(t *testing.T) {
	cases := []struct {
		name string
		opts Options
		want string // substring of the error; "" means no error
	}{
		{"typo in env file is an error", Options{EnvFile: write(t, "a.env", "RAY_SCHEDULER_CONCURENCY=2\n")}, "RAY_SCHEDULER_CONCURENCY: unknown setting (from env-file); did you mean RAY_SCHEDULER_CONCURRENCY?"},
		{"typo in config file is an error", Options{ConfigFile: write(t, "a.json", `{"RAY_PORTT": 1}`)}, "RAY_PORTT: unknown setting"},
		{"unknown in environment is a warning", Options{Environ: []string{"RAY_ADDRESS=auto"}}, ""},
		{"malformed int names the variable", Options{Environ: []string{"RAY_PORT=eighty"}}, `RAY_PORT: expected a whole number, got "eighty"`},
		{"malformed bool", Options{Flags: map[string]string{"RAY_CACHE_ENABLED": "maybe"}}, "RAY_CACHE_ENABLED: expected true or false"},
		{"range check", Options{Flags: map[string]string{"RAY_PORT": "70000"}}, "RAY_PORT: must be a TCP port"},
		{"enum check", Options{Flags: map[string]string{"RAY_RATE_LIMIT_KEY_STRATEGY": "cookie"}}, "RAY_RATE_LIMIT_KEY_STRATEGY: expected one of ip, api-key, ip+api-key"},
		{"unknown profile", Options{Flags: map[string]string{"RAY_PROFILE": "70b"}}, "RAY_PROFILE: unknown profile"},
		{"relation check", Options{Flags: map[string]string{"RAY_LLAMA_CPP_UBATCH_SIZE": "512"}}, "RAY_LLAMA_CPP_UBATCH_SIZE: must not exceed"},
		{"bad env file line", Options{EnvFile: write(t, "b.env", "RAY_PORT 80\n")}, "line 1: expected KEY=VALUE"},
		{"config file must be an object", Options{ConfigFile: write(t, "b.json", `[1]`)}, "expected a JSON object"},
		{"model key variable must exist", Options{Flags: map[string]string{"RAY_MODEL_API_KEY_ENV": "UPSTREAM_TOKEN"}}, "RAY_MODEL_API_KEY_ENV: variable UPSTREAM_TOKEN is not set"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, err := Load(c.opts)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if len(l.Warnings) != 1 || !strings.Contains(l.Warnings[0], "RAY_ADDRESS") {
					t.Fatalf("warnings = %v", l.Warnings)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestKeysFromIndirectVariable(t *testing.T) {
	env := write(t, "k.env", "RAY_AUTH_API_KEY_ENV=MY_KEYS\nMY_KEYS= k1 , k2 \nRAY_MODEL_API_KEY_ENV=RAY_UPSTREAM_TOKEN\nRAY_UPSTREAM_TOKEN=up\n")
	l, err := Load(Options{EnvFile: env})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(l.Auth.APIKeys, ",") != "k1,k2" || l.Model.APIKey != "up" {
		t.Fatalf("keys %v upstream %q", l.Auth.APIKeys, l.Model.APIKey)
	}
	if err := l.CheckStartup(); err != nil {
		t.Fatal(err)
	}
	l2, _ := Load(Options{})
	if err := l2.CheckStartup(); err == nil || !strings.Contains(err.Error(), "no client API keys") {
		t.Fatalf("auth without keys: %v", err)
	}
}

func TestParseEnvFile(t *testing.T) {
	in := "\ufeff# c\n\nA=1\nexport B = two words \nC='it''s'\nD=\"q\\\"\\n$x\"\nE=\nF=a#b\n"
	_, err := ParseEnvFile(strings.NewReader(in))
	if err == nil || !strings.Contains(err.Error(), "line 5") {
		t.Fatalf("stray quote: err = %v", err)
	}
	in = strings.Replace(in, "C='it''s'", "C='$(rm -rf /)'", 1)
	got, err := ParseEnvFile(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"A": "1", "B": "two words", "C": "$(rm -rf /)", "D": "q\"\n$x", "E": "", "F": "a#b"}
	if len(got) != len(want) {
		t.Fatalf("got %d entries", len(got))
	}
	for _, e := range got {
		if want[e.Key] != e.Value {
			t.Errorf("%s = %q, want %q", e.Key, e.Value, want[e.Key])
		}
	}
	for _, bad := range []string{"1A=x", "A=\"open", "A='open", "=x", "A=\"x\"y"} {
		if _, err := ParseEnvFile(strings.NewReader(bad)); err == nil {
			t.Errorf("%q parsed without error", bad)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestPrintMasksSecretsAndNamesSources(t *testing.T) {
	l, err := Load(Options{Environ: []string{"RAY_API_KEYS=sk-live-123,sk-live-456", "RAY_PORT=3100"}})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := l.Print(&b, false); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, "sk-live") {
		t.Fatal("a secret was printed")
	}
	for _, want := range []string{"RAY_API_KEYS", "****", "environment", "RAY_PORT", "3100", "RAY_CACHE_TTL_MS", "120000", "profile"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if n := strings.Count(out, "\n"); n != len(Settings())+1 {
		t.Errorf("%d lines for %d settings", n, len(Settings()))
	}
}
