package auth

import (
	"strings"
	"testing"
)

// FuzzBearerToken: any Authorization value either yields a clean token that
// parses back to itself, or a sentinel error; never a panic.
func FuzzBearerToken(f *testing.F) {
	for _, s := range []string{"Bearer abc", "bearer  abc", "Bearer", "Basic eA==", "Bearer a b", "Bearer \x00", ""} {
		f.Add(s)
	}
	a, err := New([]string{"sk-fuzz-key"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, h string) {
		tok, err := BearerToken(h)
		if err != nil {
			if tok != "" {
				t.Fatalf("token %q returned with error %v", tok, err)
			}
			return
		}
		if tok == "" || len(tok) > MaxKeyBytes || strings.ContainsAny(tok, " \t\r\n\x00") {
			t.Fatalf("BearerToken(%q) = %q", h, tok)
		}
		if again, err := BearerToken("Bearer " + tok); err != nil || again != tok {
			t.Fatalf("round trip of %q: %q, %v", tok, again, err)
		}
		if fp, ok := a.Check(tok); ok != (tok == "sk-fuzz-key") || (ok && fp != Fingerprint(tok)) {
			t.Fatalf("Check(%q) = %q, %v", tok, fp, ok)
		}
	})
}
