// Command raygw is a self-hostable LLM gateway and model-serving control plane.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/raygw/raygw/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}
