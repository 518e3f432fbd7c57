package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
)

// Source names where a value came from, lowest precedence first.
const (
	SourceProfile     = "profile"
	SourceConfigFile  = "config-file"
	SourceEnvFile     = "env-file"
	SourceEnvironment = "environment"
	SourceFlag        = "flag"
)

// Options says where to read configuration from.
type Options struct {
	ConfigFile string            // JSON object of RAY_* names to values; optional
	EnvFile    string            // KEY=VALUE file read without a shell; optional
	Environ    []string          // process environment (os.Environ()); nil reads none
	Flags      map[string]string // RAY_* overrides from command-line flags
}

// Loaded is a resolved configuration with the provenance of every value.
type Loaded struct {
	*Config
	Sources  map[string]string // RAY_* name -> Source*
	Warnings []string          // unknown RAY_* names seen only in the environment
	lookup   func(string) (string, bool)
}

// Lookup returns a non-registry variable (such as the one RAY_AUTH_API_KEY_ENV
// names) from the environment, else the env file.
func (l *Loaded) Lookup(name string) (string, bool) { return l.lookup(name) }

type layer struct {
	source string
	vals   map[string]string
}

// Load resolves the configuration from opts and validates it.
func Load(opts Options) (*Loaded, error) {
	var fileVals, envFileVals, envVals map[string]string
	var err error
	if opts.ConfigFile != "" {
		if fileVals, err = readJSONConfig(opts.ConfigFile); err != nil {
			return nil, err
		}
	}
	if opts.EnvFile != "" {
		if envFileVals, err = readEnvFile(opts.EnvFile); err != nil {
			return nil, err
		}
	}
	envVals = map[string]string{}
	for _, kv := range opts.Environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			envVals[k] = v
		}
	}
	layers := []layer{
		{SourceConfigFile, fileVals},
		{SourceEnvFile, envFileVals},
		{SourceEnvironment, envVals},
		{SourceFlag, opts.Flags},
	}

	// The profile is chosen first: the highest layer that names one wins.
	profile := "1b"
	for _, l := range layers {
		if p, ok := l.vals["RAY_PROFILE"]; ok && strings.TrimSpace(p) != "" {
			profile = strings.TrimSpace(p)
		}
	}
	defaults, ok := Profiles[profile]
	if !ok {
		return nil, fmt.Errorf("RAY_PROFILE: unknown profile %q (expected one of %s)", profile, strings.Join(ProfileNames(), ", "))
	}

	cfg := &Config{}
	out := &Loaded{Config: cfg, Sources: map[string]string{}}
	for name, raw := range defaults {
		if err := cfg.set(registry[name], raw); err != nil {
			return nil, fmt.Errorf("profile %s: %w", profile, err)
		}
		out.Sources[name] = SourceProfile
	}
	// Variables named by *_API_KEY_ENV settings are secrets, not unknown names.
	indirect := map[string]bool{}
	for _, l := range layers {
		for _, k := range []string{"RAY_AUTH_API_KEY_ENV", "RAY_ADMIN_API_KEY_ENV", "RAY_MODEL_API_KEY_ENV"} {
			if v := strings.TrimSpace(l.vals[k]); v != "" {
				indirect[v] = true
			}
		}
	}
	for _, l := range layers {
		for _, name := range sortedKeys(l.vals) {
			if !strings.HasPrefix(name, "RAY_") {
				continue
			}
			s, known := registry[name]
			if !known {
				if indirect[name] {
					continue
				}
				msg := fmt.Sprintf("%s: unknown setting (from %s)%s", name, l.source, suggest(name))
				if l.source == SourceEnvironment {
					out.Warnings = append(out.Warnings, msg)
					continue
				}
				return nil, fmt.Errorf("%s", msg)
			}
			if err := cfg.set(s, l.vals[name]); err != nil {
				return nil, fmt.Errorf("%s: %w", l.source, err)
			}
			out.Sources[name] = l.source
		}
	}
	cfg.Profile = profile
	out.lookup = func(name string) (string, bool) {
		if v, ok := envVals[name]; ok {
			return v, true
		}
		v, ok := envFileVals[name]
		return v, ok
	}
	if err := out.resolveSecrets(); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return out, nil
}

// resolveSecrets reads key lists from the variables the *_API_KEY_ENV
// settings name, when they name something other than the default variable.
func (l *Loaded) resolveSecrets() error {
	if n := l.Auth.APIKeyEnv; n != "" && n != "RAY_API_KEYS" {
		v, _ := l.lookup(n)
		l.Auth.APIKeys = splitList(v)
	}
	if n := l.Admin.APIKeyEnv; n != "" && n != "RAY_ADMIN_API_KEYS" {
		v, _ := l.lookup(n)
		l.Admin.APIKeys = splitList(v)
	}
	if n := l.Model.APIKeyEnv; n != "" {
		v, ok := l.lookup(n)
		if !ok || strings.TrimSpace(v) == "" {
			return fmt.Errorf("RAY_MODEL_API_KEY_ENV: variable %s is not set", n)
		}
		l.Model.APIKey = strings.TrimSpace(v)
	}
	return nil
}

// ProfileNames lists the built-in profiles.
func ProfileNames() []string { return sortedKeys(Profiles) }

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func readEnvFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("env file: %w", err)
	}
	defer f.Close()
	entries, err := ParseEnvFile(f)
	if err != nil {
		return nil, fmt.Errorf("env file %s: %w", path, err)
	}
	out := map[string]string{}
	for _, e := range entries {
		out[e.Key] = e.Value
	}
	return out, nil
}

func readJSONConfig(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("config file %s: expected a JSON object of RAY_* settings: %v", path, err)
	}
	out := map[string]string{}
	for k, v := range raw {
		if !strings.HasPrefix(k, "RAY_") {
			return nil, fmt.Errorf("config file %s: %q: keys are RAY_* setting names", path, k)
		}
		var s string
		if err := json.Unmarshal(v, &s); err == nil {
			out[k] = s
			continue
		}
		var list []string
		if err := json.Unmarshal(v, &list); err == nil {
			out[k] = strings.Join(list, ",")
			continue
		}
		trimmed := strings.TrimSpace(string(v))
		if trimmed == "null" || strings.HasPrefix(trimmed, "{") || strings.HasPrefix(trimmed, "[") {
			return nil, fmt.Errorf("config file %s: %s: expected a string, number, boolean or list of strings", path, k)
		}
		out[k] = trimmed
	}
	return out, nil
}

// suggest names the closest known setting for a likely typo.
func suggest(name string) string {
	best, bestD := "", 4
	for k := range registry {
		if d := distance(name, k); d < bestD {
			best, bestD = k, d
		}
	}
	if best == "" {
		return ""
	}
	return "; did you mean " + best + "?"
}

func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
