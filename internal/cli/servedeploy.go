package cli

// servedeploy.go gives `raygw serve` its deployments manager and turns the
// gateway's own model (the RAY_MODEL_* and RAY_LLAMA_CPP_* settings) into
// the builtin deployment, so both run on the same machinery.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	goruntime "runtime"
	"sync"
	"time"

	"github.com/raygw/raygw/internal/config"
	"github.com/raygw/raygw/internal/deploy"
	"github.com/raygw/raygw/internal/engine/llamacpp"
	"github.com/raygw/raygw/internal/engine/openaicompat"
	"github.com/raygw/raygw/internal/runtime"
	"github.com/raygw/raygw/internal/runtime/local"
	"github.com/raygw/raygw/internal/store"
	"github.com/raygw/raygw/internal/telemetry"
)

// builtinName is the deployment name of the gateway's own model
// (/d/default/v1, `raygw deploy get default`).
const builtinName = "default"

// startDeployments opens the deployments database under RAY_STATE_DIR.
// Without a usable state directory deployments live in memory only and a
// warning names the variable. Stored deployments are restored by restore,
// after the builtin has taken its name.
func startDeployments(cfg *config.Loaded, metrics *telemetry.Metrics, log *slog.Logger) (*deploy.Manager, func(), error) {
	var db *store.DB
	if cfg.StateDir == "" {
		log.Warn("RAY_STATE_DIR is empty: deployments created through the API will not survive a restart")
	} else if d, err := store.Open(context.Background(), cfg.StateDir); err != nil {
		log.Warn("deployments will not survive a restart: cannot open their database", "variable", "RAY_STATE_DIR", "err", err)
	} else {
		db = d
	}
	opt := deploy.Options{
		Runtimes: map[string]runtime.Runtime{"local": &local.Runtime{Logger: log, LogOutput: true}},
		Defaults: deploy.Defaults{Llama: llamacpp.FromConfig(cfg.Config), VLLMBinary: "vllm", CPUs: goruntime.NumCPU()},
		Logger:   log, Registerer: metrics.Registry,
	}
	if db != nil {
		opt.Store = db
	}
	m, err := deploy.NewManager(opt)
	if err != nil {
		if db != nil {
			db.Close()
		}
		return nil, func() {}, err
	}
	return m, sync.OnceFunc(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			log.Warn("deployments did not stop in time", "err", err)
		}
		if db != nil {
			db.Close()
		}
	}), nil
}

// builtinSpec is the gateway's own model as a deployment: in managed mode
// one llama.cpp replica launched exactly as the RAY_LLAMA_CPP_* settings
// say, on their port; in external mode the endpoint at RAY_MODEL_BASE_URL,
// health-checked at /health.
func builtinSpec(cfg *config.Loaded) (deploy.Builtin, error) {
	window := cfg.Model.ContextWindow
	s := deploy.Spec{Name: builtinName, ModelName: cfg.Model.ID, Replicas: 1, DrainTimeoutMS: cfg.Engine.ShutdownDrainMS}
	if window > 0 {
		s.EngineConfig.MaxModelLen = &window
	}
	b := deploy.Builtin{APIKey: cfg.Model.APIKey}
	if cfg.Engine.Mode != "managed" {
		if cfg.Model.BaseURL == "" {
			return b, errors.New("RAY_MODEL_BASE_URL: external mode needs the engine's base URL")
		}
		s.ModelClass = deploy.ClassOpenAI
		s.EngineConfig.BaseURL = cfg.Model.BaseURL
		s.Health = deploy.Health{Path: "/health", IntervalMS: 2000}
		b.Spec = s
		return b, nil
	}
	launch := llamacpp.FromConfig(cfg.Config)
	if launch.Binary == "" {
		return b, errors.New("RAY_LLAMA_CPP_BINARY_PATH: managed mode needs the llama-server executable")
	}
	if _, err := os.Stat(launch.ModelPath); err != nil {
		return b, fmt.Errorf("RAY_LLAMA_CPP_MODEL_PATH: %w", err)
	}
	s.ModelClass, s.ModelPath = deploy.ClassLlamaCpp, launch.ModelPath
	if sec := cfg.Deploy.ReadyTimeoutSeconds; sec > 0 {
		s.Health.StartTimeoutMS = sec * 1000
	}
	b.Spec, b.Launch = s, &launch
	return b, nil
}

// startBuiltin starts the gateway's own deployment. tr carries generation
// requests; aux (no keep-alive) the warm-up call.
func startBuiltin(ctx context.Context, cfg *config.Loaded, m *deploy.Manager, metrics *telemetry.Metrics,
	log *slog.Logger, tr, aux http.RoundTripper) (*deploy.Target, error) {
	b, err := builtinSpec(cfg)
	if err != nil {
		return nil, err
	}
	b.Transport = tr
	b.OnReplica = func(st deploy.ReplicaState, address string) {
		switch st {
		case deploy.ReplicaHealthy:
			metrics.EngineUp.Set(1)
			if cfg.Model.WarmOnBoot {
				go warmEngine(ctx, openaicompat.New(address, cfg.Model.APIKey, aux), cfg.Model.Ref, log)
			}
		case deploy.ReplicaUnhealthy:
			metrics.EngineUp.Set(0)
			if cfg.Engine.Mode == "managed" { // an external engine is not restarted by raygw
				metrics.Restarts.Inc()
			}
		default:
			metrics.EngineUp.Set(0)
		}
	}
	return m.StartBuiltin(b)
}

// warmEngine sends one tiny completion so the first real request does not
// pay for cold caches.
func warmEngine(ctx context.Context, c *openaicompat.Client, model string, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	body, _ := json.Marshal(map[string]any{"model": model, "prompt": "Hello", "max_tokens": 1, "temperature": 0})
	resp, err := c.Post(ctx, "/v1/completions", body)
	if err != nil {
		log.Warn("engine warm-up failed", "err", err)
		return
	}
	resp.Body.Close()
	log.Info("engine warmed")
}
