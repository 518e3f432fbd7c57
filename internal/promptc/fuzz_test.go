package promptc

import (
	"strings"
	"testing"
)

// fencedBlocks lists the fenced code blocks of s, fence lines included,
// scanning independently of the compiler.
func fencedBlocks(s string) []string {
	var blocks []string
	var cur []string
	open := 0
	for _, line := range strings.Split(s, "\n") {
		t := strings.TrimLeft(line, " \t\r\f\v")
		if open == 0 {
			n := len(t) - len(strings.TrimLeft(t, "`"))
			if n >= 3 {
				open, cur = n, []string{line}
			}
			continue
		}
		cur = append(cur, line)
		if c := strings.Trim(line, " \t\r\f\v"); len(c) >= open && strings.Trim(c, "`") == "" {
			blocks = append(blocks, strings.Join(cur, "\n"))
			open, cur = 0, nil
		}
	}
	if open > 0 {
		blocks = append(blocks, strings.Join(cur, "\n"))
	}
	return blocks
}

func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		"a  b\n\n\n```go\n  x   y\n```\nc\nc\n",
		"```\nunclosed  \n\n\n",
		"Always answer in English.\nAlways  answer in English.\n- a\n- a\n",
		"\r```\n  a  \n\r```\r\n",
		"x\n\n  \n\t\nLONG LINE LONG LINE LONG LINE\n\nLONG LINE LONG LINE LONG LINE\n\nb",
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	c := all()
	f.Fuzz(func(t *testing.T, in string, completion bool) {
		compile := func(s string) string { return c.compileText(s, &textState{keepTrailing: completion}) }
		once := compile(in)
		if twice := compile(once); twice != once {
			t.Fatalf("not idempotent:\n in   %q\n once %q\n twice %q", in, once, twice)
		}
		if len(once) > len(in)+1 {
			t.Fatalf("output grew: %q -> %q", in, once)
		}
		inBlocks, outBlocks := fencedBlocks(in), fencedBlocks(once)
		if len(inBlocks) != len(outBlocks) {
			t.Fatalf("code blocks %d -> %d:\n in %q\nout %q", len(inBlocks), len(outBlocks), in, once)
		}
		for i := range inBlocks {
			if inBlocks[i] != outBlocks[i] {
				t.Fatalf("code block %d changed:\n in %q\nout %q", i, inBlocks[i], outBlocks[i])
			}
		}
	})
}

func BenchmarkCompileChat(b *testing.B) {
	sys := strings.Repeat("You are a   helpful assistant. Answer briefly.\n\n\n", 8) +
		"```json\n{  \"a\":  1 }\n```\n" + strings.Repeat("Rule:  be   kind.\n", 10)
	c := all()
	b.SetBytes(int64(len(sys)))
	b.ReportAllocs()
	for b.Loop() {
		_ = c.Text(sys)
	}
}
