// Package adaptive owns the adaptive output caps: a global reduction of
// max_tokens while the engine is slow or the queue is long
// (RAY_ADAPTIVE_TUNING_ENABLED) and learned per-family caps from the lengths
// of recent answers (RAY_ADAPTIVE_LEARNED_FAMILY_CAP_ENABLED).
//
// The handler calls Cap after the degradation policy has clamped max_tokens
// and before admission (a lower cap weighs less against the token budgets and
// may make the job short), and Observe after the answer:
//
//	tuner := adaptive.FromConfig(cfg) // once, at start
//	outCap, why := tuner.Cap(compiled.Family, maxTokens) // maxTokens: after degrade, never <= 0
//	// ... admission, engine ...
//	tuner.Observe(adaptive.Sample{Family: compiled.Family, Requested: outCap,
//		CompletionTokens: usage.CompletionTokens, FinishReason: finish,
//		QueueDelay: ticket.QueueDelay, TokensPerSecond: timings.PredictedPerSecond})
//
// Observe only answers the engine produced (not cache hits or dedupe
// followers, which would report no queue delay and teach nothing). See
// design.md for the percentile rules and censoring.
package adaptive

import (
	"math"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/raygw/raygw/internal/config"
)

// Reasons Cap returns, for logs and metrics.
const (
	ReasonRequested      = "requested"       // the cap asked for, unchanged
	ReasonLearned        = "learned"         // the family's learned cap
	ReasonReduced        = "reduced"         // the global reduction under pressure
	ReasonLearnedReduced = "learned+reduced" // both
)

// FinishLength is the finish reason of an answer cut by its cap.
const FinishLength = "length"

// Defaults of the Options that have no RAY_* setting.
const (
	DefaultMaxFamilies  = 1024
	DefaultMaxSampleAge = 5 * time.Minute
	// MaxFamilyBytes: longer family names are not learned (they come from
	// client metadata; the LRU bounds their number, this their size).
	MaxFamilyBytes = 256
)

// Options configures a Tuner; FromConfig fills it from RAY_ADAPTIVE_*.
type Options struct {
	TuningEnabled                bool
	SampleSize                   int           // global window (min 1)
	QueueLatencyThreshold        time.Duration // p50 queue delay that starts reduction (<= 0: off)
	MinCompletionTokensPerSecond float64       // p50 decode speed below which caps shrink (<= 0: off)
	MaxOutputReductionRatio      float64       // largest cut, 0..1
	MinOutputTokens              int           // floor of an adapted cap (min 1)

	LearnedFamilyCapEnabled bool
	FamilyHistorySize       int     // lengths kept per family (min 1)
	LearnedCapMinSamples    int     // samples before a family's cap applies (min 1)
	ShortPercentile         float64 // percentile for short families
	DraftPercentile         float64 // percentile for draft-length families
	HeadroomTokens          int     // added above the percentile
	ShortJobMaxTokens       int     // a family whose median is <= this is short (RAY_SCHEDULER_SHORT_JOB_MAX_TOKENS)

	MaxFamilies  int              // families remembered, least recently observed evicted (0: DefaultMaxFamilies)
	MaxSampleAge time.Duration    // global samples older than this are ignored (0: DefaultMaxSampleAge)
	Now          func() time.Time // nil: time.Now
}

// FromConfig builds the Tuner of the RAY_ADAPTIVE_* settings.
func FromConfig(cfg *config.Config) *Tuner {
	a := cfg.Adaptive
	return New(Options{
		TuningEnabled: a.Enabled, SampleSize: a.SampleSize,
		QueueLatencyThreshold:        config.Duration(a.QueueLatencyThresholdMS),
		MinCompletionTokensPerSecond: a.MinCompletionTokensPerSecond,
		MaxOutputReductionRatio:      a.MaxOutputReductionRatio, MinOutputTokens: a.MinOutputTokens,
		LearnedFamilyCapEnabled: a.LearnedFamilyCapEnabled, FamilyHistorySize: a.FamilyHistorySize,
		LearnedCapMinSamples: a.LearnedCapMinSamples, ShortPercentile: a.ShortPercentile,
		DraftPercentile: a.DraftPercentile, HeadroomTokens: a.LearnedCapHeadroomTokens,
		ShortJobMaxTokens: cfg.Scheduler.ShortJobMaxTokens,
	})
}

// Sample is one finished request.
type Sample struct {
	Family           string        // prompt family ("" : global adaptation only)
	Requested        int           // max_tokens sent to the engine
	CompletionTokens int           // tokens generated
	FinishReason     string        // "stop", "length", ...
	QueueDelay       time.Duration // time spent in the admission queue
	TokensPerSecond  float64       // completion decode speed (<= 0: unknown)
}

// Truncated reports whether the answer was cut by its cap: its true length
// is unknown, only bounded below (censored).
func (s Sample) Truncated() bool { return s.FinishReason == FinishLength }

// Tuner adapts output caps. Safe for concurrent use; Cap takes no lock of
// its own (an LRU read lock and atomics) and does not allocate.
type Tuner struct {
	opts     Options
	global   window
	families *lru.Cache[string, *family]

	reductionBits atomic.Uint64 // float64 bits of the current reduction ratio
	reductionTill atomic.Int64  // unix nanos after which the reduction lapses

	caps     [4]atomic.Uint64 // by reason index
	observed atomic.Uint64
}

// New returns a Tuner; out-of-range options are clamped to usable values.
func New(opts Options) *Tuner {
	opts.SampleSize = max(opts.SampleSize, 1)
	opts.MinOutputTokens = max(opts.MinOutputTokens, 1)
	opts.MaxOutputReductionRatio = min(max(opts.MaxOutputReductionRatio, 0), 1)
	opts.FamilyHistorySize = max(opts.FamilyHistorySize, 1)
	opts.LearnedCapMinSamples = max(opts.LearnedCapMinSamples, 1)
	opts.HeadroomTokens = max(opts.HeadroomTokens, 0)
	if opts.MaxFamilies <= 0 {
		opts.MaxFamilies = DefaultMaxFamilies
	}
	if opts.MaxSampleAge <= 0 {
		opts.MaxSampleAge = DefaultMaxSampleAge
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	fams, err := lru.New[string, *family](opts.MaxFamilies)
	if err != nil { // only for a size <= 0, excluded above
		panic(err)
	}
	t := &Tuner{opts: opts, families: fams}
	t.global.init(opts.SampleSize)
	return t
}

// Cap returns the output cap for a request of family that asked for
// requested tokens, and why. It never exceeds requested, and never lowers a
// cap below MinOutputTokens (nor raises one to it). requested <= 0 is
// returned unchanged: resolve the default max_tokens first.
func (t *Tuner) Cap(family string, requested int) (int, string) {
	if requested <= 0 {
		t.caps[0].Add(1)
		return requested, ReasonRequested
	}
	c, learned, reduced := requested, false, false
	if t.opts.LearnedFamilyCapEnabled && family != "" && len(family) <= MaxFamilyBytes {
		if f, ok := t.families.Peek(family); ok {
			if l := int(f.learned.Load()); l > 0 {
				if v := max(l, t.opts.MinOutputTokens); v < c {
					c, learned = v, true
				}
			}
		}
	}
	if t.opts.TuningEnabled {
		if r := math.Float64frombits(t.reductionBits.Load()); r > 0 && t.opts.Now().UnixNano() < t.reductionTill.Load() {
			if v := max(int(float64(c)*(1-r)), t.opts.MinOutputTokens); v < c {
				c, reduced = v, true
			}
		}
	}
	switch {
	case learned && reduced:
		t.caps[3].Add(1)
		return c, ReasonLearnedReduced
	case reduced:
		t.caps[2].Add(1)
		return c, ReasonReduced
	case learned:
		t.caps[1].Add(1)
		return c, ReasonLearned
	}
	t.caps[0].Add(1)
	return c, ReasonRequested
}

// Observe records one finished request: its queue delay and speed feed the
// global reduction, its length (censored when truncated) its family's cap.
func (t *Tuner) Observe(s Sample) {
	t.observed.Add(1)
	now := t.opts.Now()
	if t.opts.TuningEnabled {
		r := t.global.observe(now, s, t.opts)
		t.reductionBits.Store(math.Float64bits(r))
		t.reductionTill.Store(now.Add(t.opts.MaxSampleAge).UnixNano())
	}
	if t.opts.LearnedFamilyCapEnabled && s.Family != "" && len(s.Family) <= MaxFamilyBytes && s.CompletionTokens >= 0 {
		t.family(s.Family).observe(s, t.opts)
	}
}

// family returns the family's history, creating it (and possibly evicting
// the least recently observed family) on first sight.
func (t *Tuner) family(name string) *family {
	if f, ok := t.families.Get(name); ok {
		return f
	}
	nf := newFamily(t.opts.FamilyHistorySize)
	if prev, found, _ := t.families.PeekOrAdd(name, nf); found {
		return prev
	}
	return nf
}
