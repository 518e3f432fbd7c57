package config

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// EnvEntry is one KEY=VALUE line of an env file.
type EnvEntry struct {
	Key   string
	Value string
	Line  int
}

// ParseEnvFile reads KEY=VALUE lines the way a service manager does, without
// a shell: blank lines and lines starting with # are skipped, an optional
// leading "export " is dropped, single-quoted values are literal, and
// double-quoted values understand \" \\ \n \t and \$. Nothing is ever
// expanded or executed: "$(cmd)" is just text.
func ParseEnvFile(r io.Reader) ([]EnvEntry, error) {
	var out []EnvEntry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(strings.TrimPrefix(sc.Text(), "\ufeff"))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		eq := strings.IndexByte(line, '=')
		if eq <= 0 {
			return nil, fmt.Errorf("line %d: expected KEY=VALUE", n)
		}
		key := strings.TrimSpace(line[:eq])
		if !validKey(key) {
			return nil, fmt.Errorf("line %d: %q is not a valid variable name", n, key)
		}
		val, err := unquote(strings.TrimSpace(line[eq+1:]))
		if err != nil {
			return nil, fmt.Errorf("line %d (%s): %v", n, key, err)
		}
		out = append(out, EnvEntry{Key: key, Value: val, Line: n})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", n+1, err)
	}
	return out, nil
}

func validKey(k string) bool {
	for i, c := range k {
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return k != ""
}

func unquote(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	switch v[0] {
	case '\'':
		if len(v) < 2 || v[len(v)-1] != '\'' {
			return "", fmt.Errorf("unterminated single quote")
		}
		inner := v[1 : len(v)-1]
		if strings.ContainsRune(inner, '\'') {
			return "", fmt.Errorf("stray single quote inside value")
		}
		return inner, nil
	case '"':
		var b strings.Builder
		for i := 1; i < len(v); i++ {
			c := v[i]
			switch {
			case c == '\\' && i+1 < len(v):
				i++
				switch v[i] {
				case 'n':
					b.WriteByte('\n')
				case 't':
					b.WriteByte('\t')
				case '"', '\\', '$', '`':
					b.WriteByte(v[i])
				default:
					b.WriteByte('\\')
					b.WriteByte(v[i])
				}
			case c == '"':
				if i != len(v)-1 {
					return "", fmt.Errorf("text after closing double quote")
				}
				return b.String(), nil
			default:
				b.WriteByte(c)
			}
		}
		return "", fmt.Errorf("unterminated double quote")
	}
	return v, nil
}
