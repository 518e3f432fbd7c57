package promptc

import "strings"

// minGlobalDedupeLen is the shortest line dropped when it repeats a line seen
// anywhere earlier in the text. Shorter lines ("---", "- yes", "}") are only
// dropped when they repeat the line just before them.
const minGlobalDedupeLen = 24

// textState carries what one text pass knows across the parts of a message:
// whether a code fence is open and which lines were already kept.
type textState struct {
	fence    int             // backticks of the open fence; 0 when outside
	seen     map[string]bool // kept lines of minGlobalDedupeLen+ bytes
	prev     string          // last kept line outside fences
	havePrev bool
	// keepTrailing keeps one space of a trailing run on the text's last line:
	// a completion prompt ending in "Answer: " keeps its space.
	keepTrailing bool
}

// compileText applies the enabled rewrites to s. Code blocks fenced with
// ``` are copied byte for byte, fence lines included.
func (c *Compiler) compileText(s string, st *textState) string {
	if !c.opts.CollapseWhitespace && !c.opts.DedupeRepeatedLines {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	lines := strings.Split(s, "\n")
	wrote, blank := false, false
	emit := func(line string) {
		if wrote {
			b.WriteByte('\n')
		}
		b.WriteString(line)
		wrote = true
	}
	for i, line := range lines {
		last := i == len(lines)-1
		if st.fence > 0 {
			emit(line)
			if closesFence(line, st.fence) {
				st.fence, st.havePrev = 0, false
			}
			continue
		}
		if n := opensFence(line); n > 0 {
			emit(line)
			st.fence, st.havePrev, blank = n, false, false
			continue
		}
		if c.opts.CollapseWhitespace {
			line = collapse(line, last && st.keepTrailing)
			if line == "" && !last {
				// Blank lines: drop leading ones, keep one of a run.
				if !wrote || blank {
					continue
				}
				blank = true
				emit("")
				continue
			}
		}
		if c.opts.DedupeRepeatedLines && st.repeated(line) {
			continue
		}
		blank = false
		emit(line)
	}
	return b.String()
}

// repeated reports whether line repeats the previous kept line, or (when
// long enough) any kept line, and records it otherwise. Blank lines never
// repeat.
func (st *textState) repeated(line string) bool {
	key := strings.Trim(line, blanks)
	if key == "" {
		st.havePrev = false
		return false
	}
	if (st.havePrev && st.prev == key) || (len(key) >= minGlobalDedupeLen && st.seen[key]) {
		return true
	}
	st.prev, st.havePrev = key, true
	if len(key) >= minGlobalDedupeLen {
		if st.seen == nil {
			st.seen = map[string]bool{}
		}
		st.seen[key] = true
	}
	return false
}

// collapse keeps a line's leading blanks (indentation), turns every later run of
// spaces, tabs and other ASCII blanks into one space, and drops trailing
// blanks, unless keepOne, when a trailing run becomes one space.
func collapse(line string, keepOne bool) string {
	indent := len(line) - len(strings.TrimLeft(line, blanks))
	var b strings.Builder
	b.Grow(len(line))
	b.WriteString(line[:indent])
	space := false
	for i := indent; i < len(line); i++ {
		ch := line[i]
		if isBlank(ch) {
			space = true
			continue
		}
		if space && b.Len() > indent {
			b.WriteByte(' ')
		}
		space = false
		b.WriteByte(ch)
	}
	if space && keepOne && b.Len() > indent {
		b.WriteByte(' ')
	}
	out := b.String()
	if strings.Trim(out, blanks) == "" {
		return "" // a blank line keeps no indentation
	}
	return out
}

// blanks are the ASCII blanks the compiler collapses (newlines separate lines).
const blanks = " \t\r\f\v"

func isBlank(ch byte) bool { return strings.IndexByte(blanks, ch) >= 0 }

// opensFence returns the backtick count of a fence opener (``` after any
// leading blanks), or 0.
func opensFence(line string) int {
	t := strings.TrimLeft(line, blanks)
	n := 0
	for n < len(t) && t[n] == '`' {
		n++
	}
	if n < 3 {
		return 0
	}
	return n
}

// closesFence reports whether line closes a fence of n backticks: only
// backticks, at least n of them, with optional surrounding blanks.
func closesFence(line string, n int) bool {
	t := strings.Trim(line, blanks)
	return len(t) >= n && strings.Trim(t, "`") == ""
}
