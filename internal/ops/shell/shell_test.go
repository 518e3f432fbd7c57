package shell

import (
	"os/exec"
	"strings"
	"testing"
)

func TestQuoteRoundTripsThroughBash(t *testing.T) {
	words := []string{"plain", "with space", "it's", "", "$(touch /x)", "a\nb", `back\slash`, "*"}
	script := "printf '%s\\0' " + Join(words...)
	out, err := exec.Command("bash", "-c", script).Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if len(got) != len(words) {
		t.Fatalf("got %d words, want %d: %q", len(got), len(words), got)
	}
	for i := range words {
		if got[i] != words[i] {
			t.Errorf("word %d: got %q, want %q", i, got[i], words[i])
		}
	}
}
