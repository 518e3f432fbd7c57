package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/raygw/raygw/internal/testenv"
)

// TestNodeSDKAgainstRealEngine runs test/node/sdk.mjs, which uses the
// official openai npm package (installed by scripts/test-deps.sh).
func TestNodeSDKAgainstRealEngine(t *testing.T) {
	dir := filepath.Join(testenv.RepoRoot(), "test", "node")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai")); err != nil {
		t.Fatalf("the openai npm package is not installed; run scripts/test-deps.sh (%v)", err)
	}
	env := testenv.GatewayEnv(t)
	env["RAY_AUTH_ENABLED"] = "true"
	env["RAY_API_KEYS"] = "node-test-key"
	g := testenv.StartGateway(t, env)
	cmd := exec.Command("node", "sdk.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "RAYGW_URL="+g.URL, "RAYGW_API_KEY=node-test-key")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node sdk.mjs: %v\n%s", err, out)
	}
	var got struct {
		ChatText, ChatModel, StreamText, CompletionText string
		StreamChunks                                    int
		NotFound                                        struct {
			Status int
			Code   string
		}
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &got); err != nil {
		t.Fatalf("output %s: %v", out, err)
	}
	if got.ChatText == "" || got.ChatModel != "stories" || got.StreamChunks < 3 || got.StreamText == "" || got.CompletionText == "" {
		t.Fatalf("node client saw %+v", got)
	}
	if got.NotFound.Status != 404 || got.NotFound.Code != "model_not_found" {
		t.Fatalf("unknown model: %+v", got.NotFound)
	}
}
