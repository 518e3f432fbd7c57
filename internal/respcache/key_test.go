package respcache

import (
	"testing"

	"github.com/raygw/raygw/internal/openai"
)

func chat(t testing.TB, body string) *openai.ChatRequest {
	t.Helper()
	r, err := openai.DecodeChat([]byte(body), openai.DefaultLimits)
	if err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return r
}

func completion(t testing.TB, body string) *openai.CompletionRequest {
	t.Helper()
	r, err := openai.DecodeCompletion([]byte(body), openai.DefaultLimits)
	if err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return r
}

const baseChat = `{"model":"m","temperature":0,"max_tokens":32,"messages":[{"role":"user","content":"hi"}]}`

func TestChatKeyCacheable(t *testing.T) {
	cases := []struct {
		body string
		want bool
	}{
		{baseChat, true},
		{`{"model":"m","seed":7,"messages":[{"role":"user","content":"hi"}]}`, true},
		{`{"model":"m","temperature":0.7,"messages":[{"role":"user","content":"hi"}]}`, false},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}]}`, false},
	}
	for _, tc := range cases {
		t.Run(tc.body, func(t *testing.T) {
			if _, ok := ChatKey(InputParams, "", chat(t, tc.body)); ok != tc.want {
				t.Fatalf("cacheable = %v, want %v", ok, tc.want)
			}
		})
	}
}

// Each variant is compared with baseChat under both strategies.
func TestChatKeyFields(t *testing.T) {
	cases := []struct {
		name, body            string
		sameParams, sameInput bool
	}{
		{"identical", baseChat, true, true},
		{"whitespace and key order", `{ "messages":[{"content":"hi","role":"user"}], "max_tokens":32, "temperature":0.0, "model":"m" }`, true, true},
		{"max_completion_tokens same cap", `{"model":"m","temperature":0,"max_completion_tokens":32,"messages":[{"role":"user","content":"hi"}]}`, true, true},
		{"metadata and user ignored", `{"model":"m","temperature":0,"max_tokens":32,"user":"u","metadata":{"a":"b"},"messages":[{"role":"user","content":"hi"}]}`, true, true},
		{"content parts equal text", `{"model":"m","temperature":0,"max_tokens":32,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`, true, true},
		{"other model", `{"model":"n","temperature":0,"max_tokens":32,"messages":[{"role":"user","content":"hi"}]}`, false, false},
		{"other content", `{"model":"m","temperature":0,"max_tokens":32,"messages":[{"role":"user","content":"ho"}]}`, false, false},
		{"other role", `{"model":"m","temperature":0,"max_tokens":32,"messages":[{"role":"system","content":"hi"}]}`, false, false},
		{"stream shape", `{"model":"m","temperature":0,"max_tokens":32,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, false, false},
		{"max_tokens", `{"model":"m","temperature":0,"max_tokens":33,"messages":[{"role":"user","content":"hi"}]}`, false, true},
		{"seed", `{"model":"m","temperature":0,"seed":1,"max_tokens":32,"messages":[{"role":"user","content":"hi"}]}`, false, true},
		{"stop", `{"model":"m","temperature":0,"stop":"x","max_tokens":32,"messages":[{"role":"user","content":"hi"}]}`, false, true},
		{"top_p", `{"model":"m","temperature":0,"top_p":0.5,"max_tokens":32,"messages":[{"role":"user","content":"hi"}]}`, false, true},
		{"logit_bias", `{"model":"m","temperature":0,"logit_bias":{"1":2},"max_tokens":32,"messages":[{"role":"user","content":"hi"}]}`, false, true},
		{"response_format", `{"model":"m","temperature":0,"response_format":{"type":"json_object"},"max_tokens":32,"messages":[{"role":"user","content":"hi"}]}`, false, true},
		{"engine extra top_k", `{"model":"m","temperature":0,"top_k":1,"max_tokens":32,"messages":[{"role":"user","content":"hi"}]}`, false, true},
	}
	base := chat(t, baseChat)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := chat(t, tc.body)
			for _, s := range []struct {
				strategy Strategy
				want     bool
			}{{InputParams, tc.sameParams}, {Input, tc.sameInput}} {
				a, _ := ChatKey(s.strategy, "t", base)
				b, ok := ChatKey(s.strategy, "t", r)
				if !ok {
					t.Fatal("not cacheable")
				}
				if (a == b) != s.want {
					t.Errorf("%s: same key = %v, want %v", s.strategy, a == b, s.want)
				}
			}
		})
	}
}

func TestKeysScopedByTenantAndKind(t *testing.T) {
	a, _ := ChatKey(InputParams, "tenant-a", chat(t, baseChat))
	b, _ := ChatKey(InputParams, "tenant-b", chat(t, baseChat))
	if a == b {
		t.Fatal("two tenants share a key")
	}
	c, _ := CompletionKey(InputParams, "tenant-a", completion(t, `{"model":"m","temperature":0,"max_tokens":32,"prompt":"hi"}`))
	if c == a {
		t.Fatal("chat and text completion share a key")
	}
	d, _ := CompletionKey(InputParams, "tenant-a", completion(t, `{"model":"m","temperature":0,"max_tokens":32,"prompt":["hi"]}`))
	if c != d {
		t.Fatal("string prompt and one-element list differ")
	}
	e, _ := CompletionKey(InputParams, "tenant-a", completion(t, `{"model":"m","temperature":0,"max_tokens":32,"prompt":"hi","echo":true}`))
	if c == e {
		t.Fatal("echo ignored")
	}
}

func TestParseStrategy(t *testing.T) {
	for in, want := range map[string]Strategy{"input+params": InputParams, "input": Input, "": InputParams} {
		if got, err := ParseStrategy(in); err != nil || got != want {
			t.Errorf("ParseStrategy(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseStrategy("prompt"); err == nil {
		t.Error("accepted an unknown strategy")
	}
}
