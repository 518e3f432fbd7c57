package engineprobe

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raygw/raygw/internal/config"
	"github.com/raygw/raygw/internal/engine/llamacpp"
	"github.com/raygw/raygw/internal/testenv"
)

func TestRealLlamaServerSupportsEveryProfileFlag(t *testing.T) {
	bin := testenv.LlamaServer(t)
	help, err := Help(context.Background(), DefaultTimeout, nil, bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, profile := range []string{"1b", "1b-8gb"} {
		l, err := config.Load(config.Options{Flags: map[string]string{"RAY_PROFILE": profile}})
		if err != nil {
			t.Fatal(err)
		}
		if m := Missing(help, llamacpp.FromConfig(l.Config).Flags()); len(m) > 0 {
			t.Errorf("%s: llama-server lacks %v", profile, m)
		}
	}
	if m := Missing(help, []string{"--no-such-flag-raygw"}); len(m) != 1 {
		t.Errorf("made-up flag reported as supported")
	}
}

func TestMissing(t *testing.T) {
	help := "-c,    --ctx-size N   size\n-cb,   --cont-batching, -nocb, --no-cont-batching\n--metrics\n"
	got := Missing(help, []string{"--ctx-size", "--cont-batching", "--no-cont-batching", "--metrics", "--ctx", "--slots"})
	if strings.Join(got, " ") != "--ctx --slots" {
		t.Fatalf("Missing = %v", got)
	}
}

func TestHelpBounded(t *testing.T) {
	p := filepath.Join(t.TempDir(), "hang")
	if err := os.WriteFile(p, []byte("#!/bin/sh\nexec sleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Help(context.Background(), 300*time.Millisecond, nil, p)
	if err == nil || !strings.Contains(err.Error(), "did not finish") {
		t.Fatalf("err = %v, want a timeout", err)
	}
	bad := filepath.Join(t.TempDir(), "fail")
	if err := os.WriteFile(bad, []byte("#!/bin/sh\necho broken >&2; exit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Help(context.Background(), time.Second, nil, bad); err == nil || !strings.Contains(err.Error(), "broken") {
		t.Fatalf("err = %v, want the failure output", err)
	}
}
