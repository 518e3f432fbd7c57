package render

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// WriteFiles writes the rendered files into dir, creating it.
func WriteFiles(dir string, files []File) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("render: %w", err)
	}
	for _, f := range files {
		p := filepath.Join(dir, f.Name)
		if err := os.WriteFile(p, []byte(f.Content), f.Mode); err != nil {
			return fmt.Errorf("render: %w", err)
		}
		if err := os.Chmod(p, f.Mode); err != nil {
			return fmt.Errorf("render: %w", err)
		}
	}
	return nil
}

// ValidateTimeout bounds one external validator run.
const ValidateTimeout = 30 * time.Second

// ValidateCaddyfile runs `caddy validate --adapter caddyfile` on text.
func ValidateCaddyfile(caddy, text string) error {
	dir, err := os.MkdirTemp("", "raygw-caddy-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), ValidateTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, caddy, "validate", "--adapter", "caddyfile", "--config", p)
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("caddy validate: %w: %s", err, lastLines(out.String(), 3))
	}
	return nil
}

// VerifyUnits runs `systemd-analyze verify` on unit files; any output is an
// error because verify reports problems as messages with status 0.
func VerifyUnits(systemdAnalyze string, paths ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), ValidateTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, systemdAnalyze, append([]string{"verify"}, paths...)...)
	cmd.Env = append(os.Environ(), "SYSTEMD_LOG_LEVEL=notice")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("systemd-analyze verify: %w: %s", err, lastLines(string(out), 5))
	}
	if s := strings.TrimSpace(string(out)); s != "" {
		return fmt.Errorf("systemd-analyze verify: %s", lastLines(s, 5))
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
