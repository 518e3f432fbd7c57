package config

import (
	"strings"
	"testing"
)

// FuzzParseEnvFile: arbitrary env files never panic; accepted entries have
// valid names and increasing line numbers.
func FuzzParseEnvFile(f *testing.F) {
	for _, s := range []string{
		"RAY_PORT=3000\n",
		"# comment\n\nexport RAY_HOST=127.0.0.1\n",
		"A='single $(quoted)'\nB=\"dq \\\" \\n \\$HOME\"\n",
		"\ufeffRAY_X=1\r\n",
		"A=\"unterminated\n",
		"=novalue\n",
		"1A=bad\n",
		"A='x'y'\n",
		"A=\"x\" trailing\n",
		"A=" + strings.Repeat("v", 70000) + "\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := ParseEnvFile(strings.NewReader(string(data)))
		if err != nil {
			if entries != nil {
				t.Fatalf("entries %v returned with error %v", entries, err)
			}
			return
		}
		last := 0
		for _, e := range entries {
			if !validKey(e.Key) || e.Line <= last {
				t.Fatalf("bad entry %+v after line %d", e, last)
			}
			last = e.Line
		}
	})
}

// FuzzEnvRoundTrip: KEY=VALUE written plainly (when the value is simple) or
// double-quoted with escapes (always) reads back as exactly KEY and VALUE.
func FuzzEnvRoundTrip(f *testing.F) {
	f.Add("RAY_PORT", "3000")
	f.Add("K", "a b # not a comment")
	f.Add("_k9", "$(rm -rf /) `x` \\ \" '")
	f.Add("K", "line\nbreak\ttab")
	f.Fuzz(func(t *testing.T, key, value string) {
		if !validKey(key) || key == "export" {
			return
		}
		check := func(line string) {
			t.Helper()
			entries, err := ParseEnvFile(strings.NewReader(line))
			if err != nil {
				t.Fatalf("ParseEnvFile(%q): %v", line, err)
			}
			if len(entries) != 1 || entries[0].Key != key || entries[0].Value != value {
				t.Fatalf("ParseEnvFile(%q) = %+v, want %s=%q", line, entries, key, value)
			}
		}
		if simpleValue(value) {
			check(key + "=" + value + "\n")
		}
		check(key + "=" + doubleQuote(value) + "\n")
	})
}

// simpleValue is a value that needs no quoting: no line breaks, no
// surrounding space, and not starting with a quote.
func simpleValue(v string) bool {
	return v != "" && !strings.ContainsAny(v, "\r\n") && strings.TrimSpace(v) == v &&
		v[0] != '\'' && v[0] != '"'
}

func doubleQuote(v string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", `\$`, "`", "\\`", "\n", `\n`, "\t", `\t`)
	return `"` + r.Replace(v) + `"`
}
