package server

import (
	"context"
	"net/http"
	"os"

	"github.com/raygw/raygw/internal/adaptive"
	"github.com/raygw/raygw/internal/degrade"

	"github.com/raygw/raygw/internal/admission"
	"github.com/raygw/raygw/internal/config"
	"github.com/raygw/raygw/internal/dedupe"
	"github.com/raygw/raygw/internal/promptc"
	"github.com/raygw/raygw/internal/respcache"
	"github.com/raygw/raygw/internal/slots"
	"github.com/raygw/raygw/internal/tokenest"
)

// Stages are the request-shaping stages of one engine, in the order the
// handler calls them. A nil stage is switched off.
type Stages struct {
	Compiler *promptc.Compiler
	Tokens   *tokenest.Estimator
	Cache    *respcache.Cache
	Dedupe   *dedupe.Group[*answer]
	Sched    *admission.Scheduler
	Slots    *slots.Tracker // llama.cpp slot affinity; nil for other engines
	Degrade  *degrade.Policy
	Adaptive *adaptive.Tuner

	sampler *degrade.Sampler
}

// Run keeps the pressure readings fresh until ctx is done; the request path
// only reads their latest snapshot.
func (st *Stages) Run(ctx context.Context) {
	if st.sampler != nil {
		st.sampler.Run(ctx)
	}
}

// NewStages builds the stages of the RAY_* settings for the llama.cpp engine
// at engineURL ("" for an engine without llama.cpp's native endpoints).
func NewStages(cfg *config.Config, engineURL string, client *http.Client) (*Stages, error) {
	c := *cfg
	c.LlamaCpp.BaseURL = engineURL
	st := &Stages{Tokens: tokenest.FromConfig(&c, client), Dedupe: dedupe.FromConfig[*answer](&c)}
	// The compiler also names the prompt family and prefix when its
	// rewriting is switched off.
	st.Compiler = promptc.FromConfig(&c, st.Tokens)
	var err error
	if st.Cache, err = respcache.FromConfig(&c); err != nil {
		return nil, err
	}
	var aff admission.Affinity
	if engineURL != "" && cfg.Scheduler.SlotAffinity {
		if st.Slots, err = slots.FromConfig(&c, client); err != nil {
			return nil, err
		}
		aff = st.Slots
	}
	sc := c
	if aff == nil {
		sc.LlamaCpp.Parallel = 0 // no slot assignment: the engine chooses its slot
	}
	st.Sched = admission.FromConfig(&sc, aff)
	if cfg.Degradation.Enabled {
		sources, _ := degrade.Discover(os.DirFS("/"))
		st.sampler = degrade.NewSampler(degrade.SamplerOptions{Sources: sources})
		st.Degrade = degrade.FromConfig(&c, st.sampler, func() int { return st.Sched.Stats().Queued })
	}
	st.Adaptive = adaptive.FromConfig(&c)
	return st, nil
}
