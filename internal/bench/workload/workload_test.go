package workload

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	in := strings.Join([]string{
		`# comment`,
		`{"id":"a","messages":[{"role":"user","content":"hi"}],"max_tokens":8,"metadata":{"promptFamily":"email"}}`,
		``,
		`{"prompt":"Once upon","arrival_ms":250,"expect_contains":"time","params":{"temperature":0}}`,
	}, "\n")
	items, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 2 {
		t.Fatalf("got %d items, want 2", len(items))
	}
	if items[0].ID != "a" || !items[0].Chat() || items[0].Path() != "/v1/chat/completions" {
		t.Errorf("item 0 = %+v", items[0])
	}
	if items[1].ID != "line-4" || items[1].Line != 4 || items[1].Path() != "/v1/completions" {
		t.Errorf("item 1 = %+v", items[1])
	}
	if items[1].ArrivalMS == nil || *items[1].ArrivalMS != 250 {
		t.Errorf("arrival_ms = %v", items[1].ArrivalMS)
	}
	body, err := items[1].Body("m", true)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if got["model"] != "m" || got["stream"] != true || got["prompt"] != "Once upon" || got["temperature"] != 0.0 {
		t.Errorf("body = %s", body)
	}
	if _, ok := got["max_tokens"]; ok {
		t.Errorf("max_tokens should be omitted when 0: %s", body)
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct{ name, line, want string }{
		{"empty object", `{}`, `"messages" or "prompt"`},
		{"both", `{"prompt":"a","messages":[{"role":"user","content":"b"}]}`, "mutually exclusive"},
		{"unknown field", `{"prompt":"a","bogus":1}`, "bogus"},
		{"bad regex", `{"prompt":"a","expect_regex":"("}`, "expect_regex"},
		{"bad schema", `{"prompt":"a","expect_json_schema":{"type":12}}`, "expect_json_schema"},
		{"reserved param", `{"prompt":"a","params":{"stream":false}}`, "params"},
		{"negative tokens", `{"prompt":"a","max_tokens":-1}`, "max_tokens"},
		{"no role", `{"messages":[{"content":"b"}]}`, "role"},
		{"trailing", `{"prompt":"a"} {"prompt":"b"}`, "after the JSON"},
		{"not json", `prompt: a`, "decode"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader("\n" + c.line + "\n"))
			if err == nil {
				t.Fatal("want an error")
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "line 2") {
				t.Errorf("error %q: want ErrInvalid naming line 2 and %q", err, c.want)
			}
		})
	}
	if _, err := Parse(strings.NewReader("# nothing\n")); !errors.Is(err, ErrInvalid) {
		t.Errorf("empty workload: err = %v", err)
	}
}

func TestChecks(t *testing.T) {
	schema := `{"type":"object","required":["subject","body"],"properties":{"subject":{"type":"string"},"body":{"type":"string"}}}`
	line := `{"prompt":"x","expect_regex":"(?i)^subject:","expect_contains":["Dear","Regards"],"expect_json_schema":` + schema + `}`
	it, err := ParseLine([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		text string
		want map[string]bool
	}{
		{"all fail", "hello", map[string]bool{"regex": false, "contains": false, "json_schema": false}},
		{"text passes", "Subject: hi\nDear Bob, Regards", map[string]bool{"regex": true, "contains": true, "json_schema": false}},
		{"json in fence", "subject: x Dear Regards\n```json\n{\"subject\":\"a\",\"body\":\"b\"}\n```", map[string]bool{"regex": true, "contains": true, "json_schema": true}},
		{"json wrong type", `Subject: Dear Regards {"subject":1,"body":"b"}`, map[string]bool{"regex": true, "contains": true, "json_schema": false}},
		{"json missing key", `Subject: Dear Regards {"subject":"a"}`, map[string]bool{"regex": true, "contains": true, "json_schema": false}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := it.Evaluate(c.text)
			if len(res) != 3 {
				t.Fatalf("got %d results", len(res))
			}
			for _, r := range res {
				if r.Passed != c.want[r.Check] {
					t.Errorf("%s passed=%v want %v (%s)", r.Check, r.Passed, c.want[r.Check], r.Reason)
				}
				if !r.Passed && r.Reason == "" {
					t.Errorf("%s failed without a reason", r.Check)
				}
			}
		})
	}
}

func TestCheckedInWorkloadsParse(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "..", "bench", "workloads", "*.jsonl"))
	if len(files) == 0 {
		t.Fatal("no checked-in workloads under bench/workloads")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			fh, err := os.Open(f)
			if err != nil {
				t.Fatal(err)
			}
			defer fh.Close()
			items, err := Parse(fh)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range items {
				if !it.HasChecks() {
					t.Errorf("%s: line %d has no quality check", f, it.Line)
				}
			}
		})
	}
}

func FuzzParseLine(f *testing.F) {
	f.Add([]byte(`{"messages":[{"role":"user","content":"hi"}],"max_tokens":8}`))
	f.Add([]byte(`{"prompt":"a","expect_json_schema":{"type":"object","required":["a"]}}`))
	f.Add([]byte(`{"prompt":"a","expect_regex":"a+b"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		it, err := ParseLine(line)
		if err != nil {
			return
		}
		if _, err := it.Body("m", false); err != nil {
			t.Fatalf("valid item does not render: %v", err)
		}
		_ = it.Evaluate(string(line))
	})
}

func BenchmarkParse(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "bench", "workloads", "email-1b.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEvaluate(b *testing.B) {
	it, err := ParseLine([]byte(`{"prompt":"x","expect_regex":"(?i)subject:","expect_contains":["budget"],"expect_json_schema":{"type":"object","required":["subject","body"],"properties":{"subject":{"type":"string"},"body":{"type":"string"}}}}`))
	if err != nil {
		b.Fatal(err)
	}
	text := "Subject: budget\n```json\n{\"subject\":\"Q3 budget\",\"body\":\"Hi Dana, did you have time to review it?\"}\n```"
	b.ReportAllocs()
	for b.Loop() {
		for _, r := range it.Evaluate(text) {
			if !r.Passed {
				b.Fatal(r.Reason)
			}
		}
	}
}
