package server

// deployments.go connects the deployments control plane (internal/deploy):
// its admin API under /api/v1/deployments, the /d/{name}/v1 data routes, and
// the choice of a deployment by model on the top-level /v1 routes. The
// gateway's own model is itself a deployment (built from the RAY_*
// settings); its requests, on /v1 or /d/{its name}/v1, run the full
// pipeline. A request for another deployment runs the same handler with
// that deployment as its backend (routing across its replicas) and the
// engine-specific stages off.

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/raygw/raygw/internal/admission"
	"github.com/raygw/raygw/internal/config"
	"github.com/raygw/raygw/internal/deploy"
	"github.com/raygw/raygw/internal/openai"
)

// target is where one request runs.
type target struct {
	backend Backend
	stages  *Stages
	dep     *deploy.Target // nil: the gateway's own engine
}

// deploymentStages are the stages of a request for another deployment:
// the engine-agnostic ones (prompt compiler, response cache, in-flight
// dedupe) are shared with the gateway's model, their keys scoped to the
// deployment; the slot map and pressure stages describe the gateway's own
// engine, not another deployment's replicas. A deployment whose replicas'
// slots are known gets a scheduler of its own (schedulers).
func deploymentStages(own *Stages) *Stages {
	return &Stages{Compiler: own.Compiler, Cache: own.Cache, Dedupe: own.Dedupe}
}

// schedulers holds one admission scheduler per llama.cpp deployment: its
// concurrency follows the healthy replicas' slots; its queue bound, queue
// timeout, batch window and short-job priority are the RAY_SCHEDULER_*
// settings. The token budgets are left off: they size the gateway's own
// engine's KV cache, not a deployment's.
type schedulers struct {
	opts   admission.Options
	mu     sync.Mutex
	m      map[string]*Stages
	queued map[string]func() int // each scheduler's queue length, for the deployment's metrics
}

func newSchedulers(cfg *config.Config, log *slog.Logger) *schedulers {
	sc := cfg.Scheduler
	return &schedulers{m: map[string]*Stages{}, queued: map[string]func() int{}, opts: admission.Options{
		MaxQueue: sc.MaxQueue, RequestTimeout: config.Duration(sc.RequestTimeoutMS),
		BatchWindow: config.Duration(sc.BatchWindowMS), ShortJobMaxTokens: sc.ShortJobMaxTokens,
		AffinityLookahead: sc.AffinityLookahead, Logger: log}}
}

// stagesFor returns t's stages: shared ones plus its own scheduler sized
// to its capacity now, or the shared ones alone when its capacity is
// unknown.
func (s *Server) stagesFor(t *deploy.Target) *Stages {
	n, known := t.Capacity()
	if !known || n <= 0 {
		return s.depStages
	}
	ss := s.depScheds
	ss.mu.Lock()
	st, ok := ss.m[t.Name()]
	if !ok {
		st = deploymentStages(s.stages)
		o := ss.opts
		o.Concurrency = n
		sched := admission.New(o)
		st.Sched = sched
		ss.m[t.Name()] = st
		ss.queued[t.Name()] = func() int { return sched.Stats().Queued }
	}
	queued := ss.queued[t.Name()]
	ss.mu.Unlock()
	t.ReportQueue(queued) // again each time: a deployment deleted and created anew keeps its name
	st.Sched.SetConcurrency(n)
	return st
}

// scopeModel names the deployment and adapter in the model a cache or
// dedupe key hashes, so two deployments (or adapters) never share answers;
// lora_name, already resolved, is dropped so both ways of naming an adapter
// share one key.
func scopeModel(t target, sp *openai.Sampling, extra map[string]json.RawMessage) {
	if t.dep != nil {
		sp.Model = "deployment:" + t.dep.Name() + "/" + t.dep.ModelName() + ":" + t.dep.Adapter
		delete(extra, "lora_name")
	}
}

func (s *Server) registerDeployments() {
	if s.deps == nil {
		return
	}
	for _, rt := range (deploy.API{M: s.deps}).Routes() {
		s.handle(Route{rt.Pattern, Admin, rt.Name}, rt.Handler)
	}
	s.handle(Route{"POST /d/{name}/v1/chat/completions", Client, "deployment_chat"}, s.errorHandler(s.chat))
	s.handle(Route{"POST /d/{name}/v1/completions", Client, "deployment_completions"}, s.errorHandler(s.completions))
	s.handle(Route{"GET /d/{name}/v1/models", Client, "deployment_models"}, s.errorHandler(s.deploymentModels))
}

// pick resolves the request's target: /d/{name} names a deployment; on /v1
// the gateway's own model wins, then the deployment serving model.
func (s *Server) pick(r *http.Request, model string, extra map[string]json.RawMessage) (target, error) {
	name := r.PathValue("name")
	if name == "" {
		err := s.resolveModel(model)
		if err == nil || s.deps == nil {
			return target{backend: s.backend, stages: s.stages}, err
		}
		t, derr := s.deps.Resolve("", model, extra)
		var oe *openai.Error
		if errors.As(derr, &oe) && oe.Code == "model_not_found" {
			return target{}, openai.NotFound("model_not_found", "the model %q does not exist; served models: %s",
				model, strings.Join(s.servedModels(), ", "))
		}
		if derr != nil {
			return target{}, derr
		}
		return target{backend: t, stages: s.stagesFor(t), dep: t}, nil
	}
	if s.deps == nil {
		return target{}, openai.NotFound("deployment_not_found", "no deployment is named %q", name)
	}
	t, err := s.deps.Resolve(name, model, extra)
	if err != nil {
		return target{}, err
	}
	if t.Builtin() {
		// The gateway's own model under its deployment name: same pipeline.
		return target{backend: s.backend, stages: s.stages}, nil
	}
	return target{backend: t, stages: s.stagesFor(t), dep: t}, nil
}

// servedModels quotes every model name this gateway answers to.
func (s *Server) servedModels() []string {
	out := []string{fmt.Sprintf("%q", s.cfg.Model.ID)}
	if s.deps != nil {
		for _, m := range s.deps.Models() {
			out = append(out, fmt.Sprintf("%q", m))
		}
	}
	return out
}

// prepareTarget rewrites the upstream request for a deployment: its model
// name or LoRA adapter, and no native fields that bypass the caps.
func prepareTarget(t target, sp *openai.Sampling, extra *map[string]json.RawMessage) {
	if *extra == nil {
		*extra = map[string]json.RawMessage{}
	}
	for _, k := range []string{"n_predict", "max_new_tokens", "id_slot"} {
		delete(*extra, k)
	}
	t.dep.ApplyAdapter(&sp.Model, extra)
	if t.dep.Spec().ModelClass == deploy.ClassLlamaCpp {
		if _, set := (*extra)["cache_prompt"]; !set {
			(*extra)["cache_prompt"] = json.RawMessage("true")
		}
	}
}

// deploymentModels lists one deployment's model and its adapters.
func (s *Server) deploymentModels(w http.ResponseWriter, r *http.Request) error {
	t, err := s.deps.ByName(r.PathValue("name"))
	if err != nil {
		return err
	}
	list := []modelEntry{{ID: t.ModelName(), Object: "model", OwnedBy: "raygw"}}
	for _, a := range t.Spec().EngineConfig.LoRAModules {
		list = append(list, modelEntry{ID: t.ModelName() + ":" + a.Name, Object: "model", OwnedBy: "raygw"})
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": list})
	return nil
}
