package degrade

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultInterval is how often the Sampler reads the kernel files.
const DefaultInterval = 500 * time.Millisecond

// SamplerOptions configures a Sampler.
type SamplerOptions struct {
	Sources  []Source
	Interval time.Duration    // minimum time between samples (0: DefaultInterval)
	Now      func() time.Time // nil: time.Now
	Logger   *slog.Logger     // nil: slog.Default()
}

// Sampler owns the disk-backed readings. One goroutine (Run) reads the files;
// request handlers only load the latest snapshot, so the request path never
// touches the disk.
type Sampler struct {
	opts SamplerOptions
	log  *slog.Logger

	mu        sync.Mutex // serialises sampling (sources keep state)
	last      time.Time
	lastAvail string

	snap atomic.Pointer[Readings]
}

// NewSampler returns a Sampler; nothing is read until Refresh or Run.
func NewSampler(opts SamplerOptions) *Sampler {
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Sampler{opts: opts, log: log.With("component", "degrade")}
}

// Snapshot returns the latest readings; before the first sample every
// signal is unavailable. It never blocks on disk.
func (s *Sampler) Snapshot() Readings {
	if r := s.snap.Load(); r != nil {
		return *r
	}
	return Readings{}
}

// Refresh samples every source unless the previous sample is younger than
// the interval; it reports whether it sampled. It reads files: call it from
// a background goroutine (Run does), never from a request handler.
func (s *Sampler) Refresh() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	if !s.last.IsZero() && now.Sub(s.last) < s.opts.Interval {
		return false
	}
	s.sampleLocked(now)
	return true
}

func (s *Sampler) sampleLocked(now time.Time) {
	s.last = now
	r := &Readings{At: now}
	for _, src := range s.opts.Sources {
		src.Sample(r)
	}
	s.snap.Store(r)
	if avail := availability(r); avail != s.lastAvail {
		s.lastAvail = avail
		s.log.Info("pressure signals", "available", avail, "cgroup", r.CgroupDir,
			"memory_psi", r.MemoryPSISource, "cpu_psi", r.CPUPSISource)
	}
}

// Run samples at once, then every interval until ctx ends. A panic in a
// source is logged and ends Run; the last snapshot stays in place.
func (s *Sampler) Run(ctx context.Context) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("pressure sampler panicked", "panic", p)
		}
	}()
	s.sample()
	t := time.NewTicker(s.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.sample()
		}
	}
}

// sample samples unconditionally (the ticker already bounds the rate).
func (s *Sampler) sample() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sampleLocked(s.opts.Now())
}

// availability names the available disk-backed signals, for the log line.
func availability(r *Readings) string {
	var names []string
	for _, c := range checks(Thresholds{}, r, Signal{}) {
		if c.sig.OK {
			names = append(names, c.name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ",")
}
