package render

import "strings"

// QuoteArg quotes one word for a systemd Exec*= line: plain words stay as they
// are, anything else is double-quoted with C escapes; '%' becomes "%%" and
// '$' becomes "$$" so systemd expands neither specifiers nor variables.
func QuoteArg(s string) string {
	if s != "" && plainWord(s) {
		return strings.ReplaceAll(s, "%", "%%")
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '%':
			b.WriteString("%%")
		case '$':
			b.WriteString("$$")
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// QuoteArgv quotes a whole command line for ExecStart=.
func QuoteArgv(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = QuoteArg(a)
	}
	return strings.Join(out, " ")
}

func plainWord(s string) bool {
	for _, c := range []byte(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("_@%+=:,./-", c) >= 0:
		default:
			return false
		}
	}
	return true
}
