package llamacpp

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/raygw/raygw/internal/config"
	"github.com/raygw/raygw/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestArgvGolden(t *testing.T) {
	for _, profile := range config.ProfileNames() {
		t.Run(profile, func(t *testing.T) {
			l, err := config.Load(config.Options{Flags: map[string]string{"RAY_PROFILE": profile}})
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(FromConfig(l.Config).Argv(), "\n") + "\n"
			golden := filepath.Join("testdata", "argv-"+profile+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Fatalf("argv differs from %s (run with -update after review):\n%s", golden, got)
			}
		})
	}
}

func TestTogglesAndFallbacks(t *testing.T) {
	l, err := config.Load(config.Options{Flags: map[string]string{
		"RAY_LLAMA_CPP_ENABLE_METRICS": "false", "RAY_LLAMA_CPP_WARMUP": "false",
		"RAY_LLAMA_CPP_MODEL_PATH": "", "RAY_MODEL_PATH": "/m.gguf", "RAY_LLAMA_CPP_HOST": "::1"}})
	if err != nil {
		t.Fatal(err)
	}
	launch := FromConfig(l.Config)
	argv := strings.Join(launch.Argv(), " ")
	for _, want := range []string{"--model /m.gguf", "--no-warmup", "--host ::1"} {
		if !strings.Contains(argv, want) {
			t.Errorf("argv lacks %q: %s", want, argv)
		}
	}
	if strings.Contains(argv, "--metrics") {
		t.Errorf("metrics disabled but rendered: %s", argv)
	}
	if got := launch.BaseURL(); got != "http://[::1]:8081" {
		t.Errorf("BaseURL = %s", got)
	}
	launch.LoRA = []string{"/a.gguf"}
	if a := strings.Join(launch.Argv(), " "); !strings.Contains(a, "--lora /a.gguf --lora-init-without-apply") {
		t.Errorf("lora flags missing: %s", a)
	}
}

// TestEngineSupportsEveryRenderedFlag checks the real llama-server's --help
// mentions every flag the launch profile renders.
func TestEngineSupportsEveryRenderedFlag(t *testing.T) {
	help, err := execHelp(testenv.LlamaServer(t))
	if err != nil {
		t.Fatal(err)
	}
	l, _ := config.Load(config.Options{})
	launch := FromConfig(l.Config)
	launch.LoRA = []string{"x"}
	for _, f := range launch.Flags() {
		if !strings.Contains(help, f) {
			t.Errorf("llama-server --help does not mention %s", f)
		}
	}
}
