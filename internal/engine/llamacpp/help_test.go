package llamacpp

import (
	"context"
	"os/exec"
	"time"
)

func execHelp(bin string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--help").CombinedOutput()
	return string(out), err
}
