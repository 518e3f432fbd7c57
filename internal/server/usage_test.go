package server

import "testing"

func TestTokenCounts(t *testing.T) {
	cases := []struct {
		in   string
		p, c int
		ok   bool
	}{
		{`{"choices":[{"text":"say \"usage\": {\"prompt_tokens\": 99}"}],"usage":{"completion_tokens":7,"prompt_tokens":3},"timings":{"prompt_n":1}}`, 3, 7, true},
		{`{"choices":[],"timings":{"prompt_n":5,"predicted_n":2}}`, 5, 2, true},
		{`{"choices":[{"delta":{"content":"x"}}]}`, 0, 0, false},
		{`{"usage":`, 0, 0, false},
	}
	for _, c := range cases {
		p, n, ok := tokenCounts([]byte(c.in))
		if p != c.p || n != c.c || ok != c.ok {
			t.Errorf("%s: %d %d %v", c.in, p, n, ok)
		}
	}
}
