package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/raygw/raygw/internal/testenv"
)

func statusWithKey(t *testing.T, url, key string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", url+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestSIGHUPRotatesKeysFromTheEnvFile(t *testing.T) {
	envFile := filepath.Join(t.TempDir(), "ray.env")
	if err := os.WriteFile(envFile, []byte("RAY_API_KEYS=old-key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := testenv.GatewayEnv(t)
	env["RAY_AUTH_ENABLED"] = "true"
	g := testenv.StartGateway(t, env, "--ray-env-file", envFile)
	if s := statusWithKey(t, g.URL, "old-key"); s != 200 {
		t.Fatalf("old key before rotation: %d", s)
	}
	if err := os.WriteFile(envFile, []byte("RAY_API_KEYS=new-key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := g.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for statusWithKey(t, g.URL, "new-key") != 200 {
		if time.Now().After(deadline) {
			t.Fatal("new key not accepted after SIGHUP")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if s := statusWithKey(t, g.URL, "old-key"); s != 401 {
		t.Fatalf("old key after rotation: %d", s)
	}
	// A broken env file keeps the current keys.
	_ = os.WriteFile(envFile, []byte("RAY_API_KEYS='unterminated\n"), 0o600)
	_ = g.Signal(syscall.SIGHUP)
	for !strings.Contains(g.Log.String(), "keys not reloaded") {
		if time.Now().After(deadline.Add(10 * time.Second)) {
			t.Fatal("a bad env file was not reported")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if s := statusWithKey(t, g.URL, "new-key"); s != 200 {
		t.Fatalf("after a bad reload the current key gets %d", s)
	}
}
