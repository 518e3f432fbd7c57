package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/raygw/raygw/internal/config"
	"github.com/raygw/raygw/internal/engine/llamacpp"
	"github.com/raygw/raygw/internal/engine/openaicompat"
	"github.com/raygw/raygw/internal/jobs"
	"github.com/raygw/raygw/internal/server"
	"github.com/raygw/raygw/internal/telemetry"
)

func init() { register(newServeCmd) }

func newServeCmd(g *Globals) *cobra.Command {
	var mode, host string
	var port int
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the OpenAI-compatible gateway (and, in managed mode, llama-server)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			flags := map[string]string{}
			if mode != "" {
				flags["RAY_ENGINE_MODE"] = mode
			}
			if host != "" {
				flags["RAY_HOST"] = host
			}
			if port != 0 {
				flags["RAY_PORT"] = strconv.Itoa(port)
			}
			cfg, err := g.Load(flags)
			if err != nil {
				return err
			}
			return serve(cmd.Context(), cfg, func() (*config.Loaded, error) { return g.Load(flags) })
		},
	}
	cmd.Flags().StringVar(&mode, "engine-mode", "", "managed (start llama-server) or external (use RAY_MODEL_BASE_URL)")
	cmd.Flags().StringVar(&host, "host", "", "listen address (RAY_HOST)")
	cmd.Flags().IntVar(&port, "port", 0, "listen port (RAY_PORT)")
	return cmd
}

// serve runs the gateway until ctx is cancelled (SIGINT/SIGTERM), then stops
// accepting, drains in-flight requests and finally stops the engine.
func serve(ctx context.Context, cfg *config.Loaded, reload func() (*config.Loaded, error)) error {
	log := telemetry.NewLogger(os.Stderr, cfg.LogLevel, cfg.Telemetry.ServiceName)
	slog.SetDefault(log) // components built without a logger write the same JSON lines
	for _, w := range cfg.Warnings {
		log.Warn("configuration", "warning", w)
	}
	if err := cfg.CheckStartup(); err != nil {
		return err
	}
	metrics := telemetry.NewMetrics()
	deployments, stopDeployments, err := startDeployments(cfg, metrics, log)
	if err != nil {
		return err
	}
	defer stopDeployments() // after the drain: stops every replica, the gateway's engine included

	engineCtx, stopEngine := context.WithCancel(context.Background())
	defer stopEngine()
	// llama-server holds one HTTP thread per kept-alive connection. Idle
	// generation connections are capped below its thread count, and the short
	// calls (health, /props, /tokenize, /slots) use connections that close at
	// once, so neither can starve the other.
	tr := openaicompat.NewTransport()
	if n := cfg.LlamaCpp.ThreadsHTTP; n >= 2 {
		tr.MaxIdleConnsPerHost = n - 1
	}
	aux := openaicompat.NewTransport()
	aux.DisableKeepAlives = true
	// The gateway's own model is a deployment like the others; it takes its
	// name before stored deployments are restored.
	own, err := startBuiltin(engineCtx, cfg, deployments, metrics, log, tr, aux)
	if err != nil {
		return err
	}
	if err := deployments.Restore(context.Background()); err != nil {
		log.Error("deployments not restored", "err", err)
	}

	engineURL := cfg.Model.BaseURL
	if cfg.Engine.Mode == "managed" {
		engineURL = llamacpp.FromConfig(cfg.Config).BaseURL()
	}
	stages, err := server.NewStages(cfg.Config, engineURL, &http.Client{Transport: aux})
	if err != nil {
		return err
	}
	go stages.Run(engineCtx)
	srv, err := server.New(server.Deps{Config: cfg, Backend: own, Stages: stages, Metrics: metrics, Logger: log,
		Deployments: deployments})
	if err != nil {
		return err
	}
	stopJobs, err := startJobs(cfg, srv, log)
	if err != nil {
		return err
	}
	hs := &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	ln, err := net.Listen("tcp", cfg.ListenAddr())
	if err != nil {
		return fmt.Errorf("RAY_HOST/RAY_PORT: %w", err)
	}
	log.Info("raygw listening", "addr", ln.Addr().String(), "profile", cfg.Profile, "engine_mode", cfg.Engine.Mode,
		"model", cfg.Model.ID, "auth", cfg.Auth.Enabled)
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

wait:
	for {
		select {
		case err := <-serveErr:
			return err
		case <-hup:
			reloadKeys(srv, reload, log)
		case <-ctx.Done():
			break wait
		}
	}
	drain := time.Duration(cfg.Engine.ShutdownDrainMS) * time.Millisecond
	log.Info("shutting down: draining in-flight requests", "timeout", drain.String())
	srv.SetDraining()
	sctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		log.Warn("drain timed out; closing remaining connections", "err", err)
		_ = hs.Close()
	}
	stopJobs() // running jobs finish (or return to the queue) while the engine is still up
	stopEngine()
	stopDeployments()
	log.Info("stopped")
	return nil
}

// startJobs opens the durable job queue (RAY_ASYNC_QUEUE_*), mounts its API
// and starts its dispatcher. The returned function stops the dispatcher,
// letting running jobs finish, and closes the queue.
func startJobs(cfg *config.Loaded, srv *server.Server, log *slog.Logger) (func(), error) {
	if !cfg.AsyncQueue.Enabled {
		return func() {}, nil
	}
	q, err := jobs.Open(context.Background(), jobs.Options{Config: cfg.AsyncQueue, Executor: srv.JobExecutor(),
		MaxBodyBytes: cfg.Request.BodyLimitBytes, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("RAY_ASYNC_QUEUE_STORAGE_DIR %s: %w (set RAY_ASYNC_QUEUE_ENABLED=false to run without jobs)",
			cfg.AsyncQueue.StorageDir, err)
	}
	srv.MountJobs(q.Routes())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- q.Run(ctx) }()
	log.Info("async job queue", "dir", cfg.AsyncQueue.StorageDir)
	return func() {
		cancel()
		if err := <-done; err != nil {
			log.Warn("job dispatcher stopped", "err", err)
		}
		_ = q.Close()
	}, nil
}

// reloadKeys re-reads the configuration on SIGHUP and swaps the client and
// admin keys; other changes need a restart. On any error the old keys stay.
func reloadKeys(srv *server.Server, reload func() (*config.Loaded, error), log *slog.Logger) {
	cfg, err := reload()
	if err == nil {
		err = srv.ReloadKeys(cfg.Config)
	}
	if err != nil {
		log.Error("SIGHUP: keys not reloaded", "err", err)
	}
}
