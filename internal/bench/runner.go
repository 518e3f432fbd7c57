// Package bench owns `raygw bench`: it replays a workload against one or two
// OpenAI-compatible targets over SSE, closed-loop (fixed concurrency) or
// open-loop (fixed rate or recorded arrivals), and measures every request.
// Workload parsing lives in bench/workload, results in bench/report and the
// fixed-latency test upstream in bench/upstream.
package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/raygw/raygw/internal/bench/report"
	"github.com/raygw/raygw/internal/bench/workload"
)

// ErrOptions marks invalid runner options.
var ErrOptions = errors.New("invalid bench options")

// Target is one server under test.
type Target struct {
	Label  string // "a", "b", or a name
	URL    string // base URL, e.g. http://127.0.0.1:3000
	APIKey string
	Model  string
}

// Schedule says when requests are sent.
type Schedule string

// Schedules.
const (
	// Closed keeps Concurrency requests in flight.
	Closed Schedule = "concurrency"
	// Rate sends Rate requests per second whatever the responses do.
	Rate Schedule = "rate"
	// Arrivals sends each request at its arrival_ms offset.
	Arrivals Schedule = "arrivals"
)

// Options configure one run.
type Options struct {
	Targets      []Target // one, or two for a comparison
	Items        []workload.Item
	WorkloadName string
	Schedule     Schedule
	Concurrency  int
	Rate         float64 // requests per second for the Rate schedule
	Repeat       int     // times the workload is replayed (default 1)
	// NoStream sends non-streaming requests; TTFT then equals e2e.
	NoStream bool
	// MaxInFlight bounds open-loop requests in flight (default 1024).
	MaxInFlight int
	// Timeout bounds one request (default 2 minutes).
	Timeout time.Duration
	// KeepOutput is how many bytes of each output to keep in the rows
	// (default 512; negative keeps none).
	KeepOutput int
	Client     *http.Client
	Now        func() time.Time
	// OnDone is called after each request, from the request's goroutine.
	OnDone func(report.Row)
	Logger *slog.Logger
}

type job struct {
	seq    int
	item   *workload.Item
	target int
	at     time.Duration // open-loop send offset
	body   []byte
}

func (o *Options) setDefaults() error {
	switch {
	case len(o.Targets) == 0 || len(o.Targets) > 2:
		return fmt.Errorf("%w: need one or two targets, got %d", ErrOptions, len(o.Targets))
	case len(o.Items) == 0:
		return fmt.Errorf("%w: the workload is empty", ErrOptions)
	}
	for i := range o.Targets {
		t := &o.Targets[i]
		if !strings.HasPrefix(t.URL, "http://") && !strings.HasPrefix(t.URL, "https://") {
			return fmt.Errorf("%w: target URL %q must start with http:// or https://", ErrOptions, t.URL)
		}
		t.URL = strings.TrimRight(t.URL, "/")
		if t.Label == "" {
			t.Label = string(rune('a' + i))
		}
	}
	if o.Schedule == "" {
		o.Schedule = Closed
	}
	switch o.Schedule {
	case Closed:
		if o.Concurrency <= 0 {
			o.Concurrency = 1
		}
	case Rate:
		if o.Rate <= 0 {
			return fmt.Errorf("%w: --rate must be above 0", ErrOptions)
		}
	case Arrivals:
	default:
		return fmt.Errorf("%w: unknown schedule %q", ErrOptions, o.Schedule)
	}
	if o.Repeat <= 0 {
		o.Repeat = 1
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 1024
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Minute
	}
	if o.KeepOutput == 0 {
		o.KeepOutput = 512
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.Logger = o.Logger.With("component", "bench")
	if o.Client == nil {
		n := max(o.Concurrency, 64)
		if o.Schedule != Closed {
			n = o.MaxInFlight
		}
		o.Client = &http.Client{Transport: &http.Transport{MaxIdleConns: n * 2, MaxIdleConnsPerHost: n,
			IdleConnTimeout: 90 * time.Second, DisableCompression: true}}
	}
	return nil
}

// Plan returns the number of requests a run of opts sends.
func Plan(opts Options) int { return len(opts.Items) * max(opts.Repeat, 1) * max(len(opts.Targets), 1) }

// jobs lays out every request. With two targets each item goes to both, and
// the order alternates so neither target always goes first.
func (o *Options) jobs() ([]job, error) {
	bodies := make([][][]byte, len(o.Targets))
	for t := range o.Targets {
		bodies[t] = make([][]byte, len(o.Items))
		for i := range o.Items {
			b, err := o.Items[i].Body(o.Targets[t].Model, !o.NoStream)
			if err != nil {
				return nil, fmt.Errorf("render %s: %w", o.Items[i].ID, err)
			}
			bodies[t][i] = b
		}
	}
	var span float64
	for i := range o.Items {
		if a := o.Items[i].ArrivalMS; a != nil && *a > span {
			span = *a
		}
	}
	var js []job
	for rep := 0; rep < o.Repeat; rep++ {
		for i := range o.Items {
			order := []int{0}
			if len(o.Targets) == 2 {
				order = []int{0, 1}
				if (rep*len(o.Items)+i)%2 == 1 {
					order = []int{1, 0}
				}
			}
			for _, t := range order {
				j := job{seq: len(js), item: &o.Items[i], target: t, body: bodies[t][i]}
				switch o.Schedule {
				case Rate:
					j.at = time.Duration(float64(len(js)) / o.Rate * float64(time.Second))
				case Arrivals:
					a := 0.0
					if o.Items[i].ArrivalMS != nil {
						a = *o.Items[i].ArrivalMS
					}
					j.at = time.Duration((a + float64(rep)*(span+1)) * float64(time.Millisecond))
				}
				js = append(js, j)
			}
		}
	}
	return js, nil
}

// Run replays the workload and returns the report. Cancelling ctx stops
// sending; requests in flight are cancelled and recorded as errors.
func Run(ctx context.Context, opts Options) (*report.Report, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	js, err := opts.jobs()
	if err != nil {
		return nil, err
	}
	start := opts.Now()
	rows := make([]report.Row, len(js))
	c := &caller{opts: &opts, start: start}
	record := func(j job) {
		rows[j.seq] = c.do(ctx, j)
		if opts.OnDone != nil {
			opts.OnDone(rows[j.seq])
		}
	}
	if opts.Schedule == Closed {
		runClosed(ctx, js, opts.Concurrency, record)
	} else {
		runOpen(ctx, js, opts.MaxInFlight, record)
	}
	sent := rows[:0]
	for _, r := range rows {
		if r.Target != "" { // requests never sent (cancelled run) leave no row
			sent = append(sent, r)
		}
	}
	rows = sent
	rep := &report.Report{Tool: "raygw bench", StartedAt: start.UTC(), Rows: rows,
		DurationMS: msSince(opts.Now, start)}
	rep.Config = report.Config{Workload: opts.WorkloadName, Schedule: string(opts.Schedule),
		Concurrency: opts.Concurrency, RatePerSec: opts.Rate, Repeat: opts.Repeat, Model: opts.Targets[0].Model,
		Stream: !opts.NoStream}
	for _, t := range opts.Targets {
		rep.Config.Targets = append(rep.Config.Targets, report.TargetRef{Label: t.Label, URL: t.URL})
		rep.Summaries = append(rep.Summaries, report.Summarize(t.Label, t.URL, rows))
	}
	if len(rep.Summaries) == 2 {
		rep.Ratios = report.CompareRatios(rep.Summaries[0], rep.Summaries[1])
		rep.DeltasMS = report.CompareDeltas(rep.Summaries[0], rep.Summaries[1])
	}
	return rep, ctx.Err()
}

func runClosed(ctx context.Context, js []job, n int, record func(job)) {
	ch := make(chan job)
	var wg sync.WaitGroup
	for range min(n, len(js)) {
		wg.Go(func() {
			for j := range ch {
				record(j)
			}
		})
	}
	for _, j := range js {
		if ctx.Err() != nil {
			break
		}
		ch <- j
	}
	close(ch)
	wg.Wait()
}

func runOpen(ctx context.Context, js []job, maxInFlight int, record func(job)) {
	sem := make(chan struct{}, maxInFlight)
	var wg sync.WaitGroup
	t0 := time.Now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for _, j := range js {
		if d := j.at - time.Since(t0); d > 0 {
			timer.Reset(d)
			select {
			case <-ctx.Done():
			case <-timer.C:
			}
		}
		if ctx.Err() != nil {
			break
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			record(j)
		})
	}
	wg.Wait()
}

func msSince(now func() time.Time, t time.Time) float64 { return ms(now().Sub(t)) }
