// Package degrade owns graceful degradation: the pressure signals (cgroup v2
// memory and CPU throttling, PSI, the gateway's RSS, the scheduler's queue
// depth), the Sampler that reads them off the request path, and the Policy
// that turns them into a Decision per request (RAY_GRACEFUL_DEGRADATION_ENABLED,
// RAY_DEGRADATION_*).
//
// Wiring, once at start:
//
//	srcs, _ := degrade.Discover(os.DirFS("/"))
//	smp := degrade.NewSampler(degrade.SamplerOptions{Sources: srcs})
//	go smp.Run(ctx)
//	pol := degrade.FromConfig(cfg, smp, func() int { return sched.Stats().Queued })
//
// Per request, after the in-flight dedupe and before adaptive caps and
// admission:
//
//	d := pol.Decide()
//	if err := d.Check(utf8.RuneCountInString(prompt)); err != nil {
//		var ref *degrade.Refusal
//		errors.As(err, &ref) // ref.Status: 503 (shed) or 413; ref.RetryAfter
//	}
//	maxTokens = d.ClampMaxTokens(maxTokens)
//	if d.Level != degrade.None { w.Header().Set("X-Ray-Degraded", d.Header()) }
//
// See design.md for the thresholds, the severe levels and why long prompts
// are refused rather than trimmed.
package degrade

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/raygw/raygw/internal/config"
)

// Level is how much the gateway degrades a request.
type Level uint8

// Levels, in rising severity.
const (
	None  Level = iota // serve as asked
	Clamp              // clamp max_tokens, refuse long prompts
	Shed               // refuse new work: 503 + Retry-After
)

var levelNames = [...]string{"none", "clamp", "shed"}

// String returns "none", "clamp" or "shed".
func (l Level) String() string {
	if int(l) < len(levelNames) {
		return levelNames[l]
	}
	return "level(" + strconv.Itoa(int(l)) + ")"
}

// Signal names, used in reasons and stats.
const (
	NameQueueDepth    = "queue_depth"
	NameRSS           = "rss_mib"
	NameMemoryRatio   = "memory_ratio"
	NameCPUThrottled  = "cpu_throttled_ratio"
	NameMemoryPSISome = "memory_psi_some"
	NameMemoryPSIFull = "memory_psi_full"
	NameCPUPSISome    = "cpu_psi_some"
	NameCPUPSIFull    = "cpu_psi_full"
)

// Sentinel errors; every error Decision.Check returns is a *Refusal wrapping
// one of them.
var (
	// ErrShed: the gateway sheds new work under severe pressure (503).
	ErrShed = errors.New("raygw is shedding load")
	// ErrPromptTooLarge: the prompt exceeds the under-pressure limit (413).
	ErrPromptTooLarge = errors.New("prompt exceeds the limit in force under load")
)

// Thresholds are the RAY_DEGRADATION_* pressure thresholds; a value <= 0
// turns its check off.
type Thresholds struct {
	QueueDepth        int     // waiting requests
	RSSMiB            float64 // gateway VmRSS
	MemoryRatio       float64 // cgroup working set / memory.max
	CPUThrottledRatio float64 // throttled / total CFS periods
	MemoryPSISome     float64 // avg10 percent
	MemoryPSIFull     float64
	CPUPSISome        float64
	CPUPSIFull        float64
}

// Snapshotter supplies the latest disk-backed readings without blocking;
// *Sampler implements it.
type Snapshotter interface {
	Snapshot() Readings
}

var _ Snapshotter = (*Sampler)(nil)

// Options configures a Policy.
type Options struct {
	Enabled        bool
	Thresholds     Thresholds
	MaxTokens      int // max_tokens cap under pressure
	MaxPromptChars int // prompt characters allowed under pressure
	// SevereFactor: a signal is severe at threshold*SevereFactor, and for a
	// bounded signal (ratios, PSI percent) no further than halfway from the
	// threshold to the bound (0: 2).
	SevereFactor float64
	RetryAfter   time.Duration // advised wait when refusing (0: 10s, the PSI avg10 window)
	Snapshot     Snapshotter   // nil: no disk-backed signals
	QueueDepth   func() int    // nil: no queue signal
}

// Policy decides per request; safe for concurrent use.
type Policy struct {
	opts      Options
	decisions [3]atomic.Uint64
	refused   atomic.Uint64
	lastLevel atomic.Uint32
	lastQueue atomic.Int64 // -1: unavailable
}

// New returns a Policy.
func New(opts Options) *Policy {
	if opts.SevereFactor <= 1 {
		opts.SevereFactor = 2
	}
	if opts.RetryAfter <= 0 {
		opts.RetryAfter = 10 * time.Second
	}
	p := &Policy{opts: opts}
	p.lastQueue.Store(-1)
	return p
}

// FromConfig builds the Policy of the RAY_GRACEFUL_DEGRADATION_ENABLED and
// RAY_DEGRADATION_* settings. snap and queueDepth may be nil.
func FromConfig(cfg *config.Config, snap Snapshotter, queueDepth func() int) *Policy {
	d := cfg.Degradation
	return New(Options{
		Enabled: d.Enabled, MaxTokens: d.MaxTokens, MaxPromptChars: d.MaxPromptChars,
		Thresholds: Thresholds{
			QueueDepth: d.QueueDepthThreshold, RSSMiB: float64(d.MemoryRSSThresholdMiB),
			MemoryRatio: d.MemoryCgroupPressureRatioThreshold, CPUThrottledRatio: d.CPUThrottledRatioThreshold,
			MemoryPSISome: d.MemoryPSISomeAvg10Threshold, MemoryPSIFull: d.MemoryPSIFullAvg10Threshold,
			CPUPSISome: d.CPUPSISomeAvg10Threshold, CPUPSIFull: d.CPUPSIFullAvg10Threshold,
		},
		Snapshot: snap, QueueDepth: queueDepth,
	})
}

// Decision is the policy's answer for one request.
type Decision struct {
	Level          Level
	MaxTokens      int           // max_tokens cap in force (0: none)
	MaxPromptChars int           // prompt limit in force (0: none)
	Reasons        []string      // crossed thresholds, e.g. "queue_depth=12>=10"
	RetryAfter     time.Duration // advised wait for refused requests (0 at None)

	refused *atomic.Uint64
}

// Decide reads the latest snapshot and the live queue depth; it does no I/O
// and allocates only when degraded.
func (p *Policy) Decide() Decision {
	queue := p.queueSignal()
	if !p.opts.Enabled {
		p.record(None)
		return Decision{}
	}
	var r Readings
	if p.opts.Snapshot != nil {
		r = p.opts.Snapshot.Snapshot()
	}
	level, reasons := evaluate(p.opts.Thresholds, p.opts.SevereFactor, &r, queue)
	p.record(level)
	if level == None {
		return Decision{}
	}
	return Decision{Level: level, MaxTokens: p.opts.MaxTokens, MaxPromptChars: p.opts.MaxPromptChars,
		Reasons: reasons, RetryAfter: p.opts.RetryAfter, refused: &p.refused}
}

func (p *Policy) queueSignal() Signal {
	if p.opts.QueueDepth == nil {
		p.lastQueue.Store(-1)
		return Signal{}
	}
	q := p.opts.QueueDepth()
	p.lastQueue.Store(int64(q))
	return ok(float64(q))
}

func (p *Policy) record(l Level) {
	p.decisions[l].Add(1)
	p.lastLevel.Store(uint32(l))
}

// ClampMaxTokens returns the max_tokens to use: requested, lowered to the
// cap in force; requested <= 0 (unset) becomes the cap.
func (d Decision) ClampMaxTokens(requested int) int {
	if d.Level == None || d.MaxTokens <= 0 {
		return requested
	}
	if requested <= 0 || requested > d.MaxTokens {
		return d.MaxTokens
	}
	return requested
}

// Check refuses the request when the gateway sheds (503) or when the prompt,
// promptChars characters long, exceeds the limit in force (413). It returns
// nil when the request may go on. Prompts are refused, never trimmed.
func (d Decision) Check(promptChars int) error {
	var ref *Refusal
	switch {
	case d.Level == Shed:
		ref = &Refusal{Status: http.StatusServiceUnavailable, RetryAfter: d.RetryAfter, Err: ErrShed,
			Message: fmt.Sprintf("raygw is overloaded (%s) and is not accepting new requests; retry in %d s",
				strings.Join(d.Reasons, ", "), retrySeconds(d.RetryAfter))}
	case d.Level == Clamp && d.MaxPromptChars > 0 && promptChars > d.MaxPromptChars:
		ref = &Refusal{Status: http.StatusRequestEntityTooLarge, RetryAfter: d.RetryAfter, Err: ErrPromptTooLarge,
			Message: fmt.Sprintf("raygw is under load and accepts prompts of at most %d characters right now; "+
				"this prompt has %d. Shorten it or retry in %d s", d.MaxPromptChars, promptChars, retrySeconds(d.RetryAfter))}
	default:
		return nil
	}
	if d.refused != nil {
		d.refused.Add(1)
	}
	return ref
}

// Header is the value for an X-Ray-Degraded response header:
// "clamp; queue_depth=12>=10".
func (d Decision) Header() string {
	if len(d.Reasons) == 0 {
		return d.Level.String()
	}
	return d.Level.String() + "; " + strings.Join(d.Reasons, ", ")
}

// Refusal is a request the policy turns away. Status is the HTTP status,
// Message the client-facing text (it names the limit), RetryAfter the value
// for the Retry-After header; Err is ErrShed or ErrPromptTooLarge.
type Refusal struct {
	Status     int
	Message    string
	RetryAfter time.Duration
	Err        error
}

func (r *Refusal) Error() string { return r.Message }
func (r *Refusal) Unwrap() error { return r.Err }

// RetryAfterSeconds is the Retry-After header value (whole seconds, >= 1).
func (r *Refusal) RetryAfterSeconds() int { return retrySeconds(r.RetryAfter) }

func retrySeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}
