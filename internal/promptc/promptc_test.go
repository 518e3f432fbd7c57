package promptc

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/raygw/raygw/internal/config"
	"github.com/raygw/raygw/internal/openai"
)

var update = flag.Bool("update", false, "rewrite golden files")

func all() *Compiler {
	return New(Options{Enabled: true, CollapseWhitespace: true, DedupeRepeatedLines: true,
		FamilyMetadataKeys: []string{"promptFamily", "taskTemplate", "template", "useCase"}})
}

func TestText(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"interior runs", "a   b\t\tc", "a b c"},
		{"trailing blanks dropped", "a  \nb\t\n", "a\nb\n"},
		{"trailing space of the last line dropped", "Answer:   ", "Answer:"},
		{"indentation kept", "list:\n    - a   b\n\t- c", "list:\n    - a b\n\t- c"},
		{"blank line runs", "\n\n\na\n\n\n\nb\n\n", "a\n\nb\n\n"},
		{"crlf", "a \r\nb\r\n", "a\nb\n"},
		{"consecutive duplicates", "ok\nok\nok\nno", "ok\nno"},
		{"short line repeated apart kept", "- yes\nx\n- yes", "- yes\nx\n- yes"},
		{"long line repeated apart dropped", "Always answer in English.\nx\nAlways  answer in English.", "Always answer in English.\nx"},
		{"fence verbatim", "a  b\n```py\nif x:\n    y  =  1\n\n\n    y  =  1\n```\nc   d", "a b\n```py\nif x:\n    y  =  1\n\n\n    y  =  1\n```\nc d"},
		{"unclosed fence protects the rest", "a  a\n```\n  x   y\n\n\n", "a a\n```\n  x   y\n\n\n"},
		{"longer closer needed", "````\n```\n  a  b\n````\nz  z", "````\n```\n  a  b\n````\nz z"},
		{"dedupe does not see into fences", "same line here, long enough\n```\nsame line here, long enough\n```\nsame line here, long enough", "same line here, long enough\n```\nsame line here, long enough\n```"},
		{"only blanks", "   \t ", ""},
		{"unicode untouched", "héllo  wörld\u00a0\u00a0x", "héllo wörld\u00a0\u00a0x"},
	}
	c := all()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := c.Text(tc.in)
			if got != tc.want {
				t.Fatalf("Text(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
			if again := c.Text(got); again != got {
				t.Fatalf("not idempotent: %q -> %q", got, again)
			}
		})
	}
}

func TestOptionsSwitches(t *testing.T) {
	in := "a  b\na  b\n"
	cases := []struct {
		opts Options
		want string
	}{
		{Options{Enabled: false, CollapseWhitespace: true, DedupeRepeatedLines: true}, in},
		{Options{Enabled: true, CollapseWhitespace: true}, "a b\na b\n"},
		{Options{Enabled: true, DedupeRepeatedLines: true}, "a  b\n"},
		{Options{Enabled: true}, in},
	}
	for _, tc := range cases {
		if got := New(tc.opts).Text(in); got != tc.want {
			t.Errorf("%+v: got %q, want %q", tc.opts, got, tc.want)
		}
	}
}

type runeCounter struct{}

func (runeCounter) Count(s string) int { return len(s) / 2 }

func TestChatFamilyAndSavings(t *testing.T) {
	body := `{"model":"m","metadata":{"template":"t1","useCase":"u"},"messages":[
		{"role":"system","content":"You  are   terse."},
		{"role":"user","content":[{"type":"text","text":"hi   there"},{"type":"text","text":"` + "```" + `\n  a   b"},{"type":"text","text":"  c   d\n` + "```" + `\ne   f"}]}]}`
	r, err := openai.DecodeChat([]byte(body), openai.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	c := all()
	c.opts.Tokens = runeCounter{}
	res := c.Chat(r)
	if res.Family != "t1" || res.FamilySource != SourceMetadata {
		t.Fatalf("family = %q from %q, want t1 from metadata (first listed key present)", res.Family, res.FamilySource)
	}
	if got := r.Messages[0].Content.Text; got != "You are terse." {
		t.Fatalf("system = %q", got)
	}
	parts := []string{r.Messages[1].Content.Parts[0].Text, r.Messages[1].Content.Parts[1].Text, r.Messages[1].Content.Parts[2].Text}
	want := []string{"hi there", "```\n  a   b", "  c   d\n```\ne f"}
	if diff := cmp.Diff(want, parts); diff != "" {
		t.Fatalf("parts (fence carried across parts) (-want +got):\n%s", diff)
	}
	if res.CharsSaved() != 7 || res.TokensSaved <= 0 {
		t.Fatalf("saved %d chars, %d tokens", res.CharsSaved(), res.TokensSaved)
	}
	// Without metadata the family comes from the compiled system prompt, so
	// whitespace variants share it.
	a := &openai.ChatRequest{Messages: []openai.Message{{Role: "system", Content: openai.Content{Text: "Be  brief."}}, {Role: "user", Content: openai.Content{Text: "x"}}}}
	b := &openai.ChatRequest{Messages: []openai.Message{{Role: "system", Content: openai.Content{Text: "Be brief.  "}}, {Role: "user", Content: openai.Content{Text: "y"}}}}
	ra, rb := c.Chat(a), c.Chat(b)
	if ra.Family != rb.Family || !strings.HasPrefix(ra.Family, "sys-") || ra.FamilySource != SourceSystem || ra.PrefixKey == 0 || ra.PrefixKey != rb.PrefixKey {
		t.Fatalf("families %+v vs %+v", ra, rb)
	}
	none := c.Chat(&openai.ChatRequest{Messages: []openai.Message{{Role: "user", Content: openai.Content{Text: "x"}}}})
	if none.Family != "" || none.PrefixKey != 0 {
		t.Fatalf("no system prompt: %+v", none)
	}
}

func TestCompletion(t *testing.T) {
	r, err := openai.DecodeCompletion([]byte(`{"model":"m","prompt":["Story  scaffold.\n\nOnce   upon a time: "]}`), openai.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	res := all().Completion(r)
	if r.PromptText != "Story scaffold.\n\nOnce upon a time: " {
		t.Fatalf("PromptText = %q", r.PromptText)
	}
	var s string
	if err := json.Unmarshal(r.Prompt, &s); err != nil || s != r.PromptText {
		t.Fatalf("raw prompt = %s", r.Prompt)
	}
	if res.FamilySource != SourceScaffold || res.PrefixKey == 0 || res.CharsSaved() != 3 {
		t.Fatalf("result = %+v", res)
	}
}

func TestFromConfig(t *testing.T) {
	cfg := &config.Config{PromptCompiler: config.PromptCompiler{Enabled: true, CollapseWhitespace: true, FamilyMetadataKeys: []string{"k"}}}
	c := FromConfig(cfg, nil)
	if got := c.Text("a  a\na  a"); got != "a a\na a" {
		t.Fatalf("got %q", got)
	}
}

// TestGolden compiles testdata/*.txt and compares with *.golden (-update rewrites).
func TestGolden(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if len(files) == 0 {
		t.Fatal("no golden inputs")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			in, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got := all().Text(string(in))
			golden := strings.TrimSuffix(f, ".txt") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}
