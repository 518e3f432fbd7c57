package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/raygw/raygw/internal/config"
	"github.com/raygw/raygw/internal/jobs/callback"
	"github.com/raygw/raygw/internal/openai"
)

// Executor runs one job's request through the gateway's data path and
// returns the HTTP status and body it would have answered. err is for
// failures before an answer existed (transport, cancellation); an
// *openai.Error is shown to the client, any other error is not.
type Executor interface {
	Execute(ctx context.Context, tenant, endpoint string, body []byte) (status int, respBody []byte, err error)
}

// Options configures a Queue. Config and Executor are required.
type Options struct {
	Config   config.AsyncQueue
	Executor Executor
	// Limits validate submitted bodies, as on the synchronous routes
	// (default openai.DefaultLimits).
	Limits *openai.Limits
	// MaxBodyBytes bounds a POST /v1/jobs body; pass RAY_REQUEST_BODY_LIMIT_BYTES
	// (default 1 MiB). Larger bodies are answered 413.
	MaxBodyBytes int64
	// MaxResultBytes bounds a stored answer (default 8 MiB); a larger one
	// fails the job.
	MaxResultBytes int
	// JobTimeout bounds one run (default 10 minutes).
	JobTimeout time.Duration
	// DrainTimeout is how long Run waits for running jobs after its
	// context ends before cancelling them (default 30 s).
	DrainTimeout time.Duration
	// MaxInterruptions is how many restarts may cut a job's run before
	// it fails instead of being queued again (default 3).
	MaxInterruptions int
	// CallbackConcurrency bounds deliveries in flight (default 2).
	CallbackConcurrency int
	// RetryBackoff and CallbackBackoff give the wait before try n+1
	// after try n failed (defaults: 1 s doubling to 1 min; 5 s times
	// four per try up to 10 min).
	RetryBackoff    func(n int) time.Duration
	CallbackBackoff func(n int) time.Duration

	Now    func() time.Time                 // default time.Now
	Statfs func(dir string) (uint64, error) // free bytes; default statfs(2)
	Logger *slog.Logger                     // default slog.Default()
	// CallbackClient overrides the webhook client (tests).
	CallbackClient *callback.Client
}

// Queue is the durable job queue: store, dispatcher, callback sender and
// HTTP API. Open it, mount Routes, call Run in a goroutine, cancel Run's
// context on shutdown and Close after Run returned.
type Queue struct {
	cfg    config.AsyncQueue
	opts   Options
	st     *store
	lock   *os.File
	policy callback.Policy
	client *callback.Client
	log    *slog.Logger
	wake   chan struct{}
}

// Open locks RAY_ASYNC_QUEUE_STORAGE_DIR, opens its job database (applying
// migrations), re-queues jobs whose run died with the previous process and
// applies the completed-job TTL. A second process on the same directory
// gets ErrLocked.
func Open(ctx context.Context, opts Options) (*Queue, error) {
	cfg := opts.Config
	if cfg.StorageDir == "" {
		return nil, errors.New("RAY_ASYNC_QUEUE_STORAGE_DIR: must be set")
	}
	if opts.Executor == nil {
		return nil, errors.New("jobs: Options.Executor is nil")
	}
	allow, err := callback.NewAllowList(cfg.CallbackAllowedHosts)
	if err != nil {
		return nil, fmt.Errorf("RAY_ASYNC_QUEUE_CALLBACK_ALLOWED_HOSTS: %w", err)
	}
	opts = withDefaults(opts)
	if err := os.MkdirAll(cfg.StorageDir, 0o700); err != nil {
		return nil, fmt.Errorf("RAY_ASYNC_QUEUE_STORAGE_DIR: %w", err)
	}
	lock, err := lockDir(cfg.StorageDir)
	if err != nil {
		return nil, err
	}
	st, err := openStore(ctx, cfg.StorageDir)
	if err != nil {
		lock.Close()
		return nil, err
	}
	q := &Queue{cfg: cfg, opts: opts, st: st, lock: lock,
		policy: callback.Policy{Allow: allow, AllowPrivate: cfg.CallbackAllowPrivateNetwork},
		client: opts.CallbackClient, log: opts.Logger.With("component", "jobs"),
		wake: make(chan struct{}, 1)}
	if q.client == nil {
		q.client = callback.NewClient(time.Duration(cfg.CallbackTimeoutMS)*time.Millisecond, cfg.CallbackAllowPrivateNetwork)
	}
	now := opts.Now()
	requeued, failed, err := st.recoverInterrupted(ctx, now, opts.MaxInterruptions)
	if err == nil {
		_, err = st.deleteExpired(ctx, now.Add(-q.ttl()))
	}
	if err != nil {
		q.Close()
		return nil, err
	}
	if requeued+failed > 0 {
		q.log.Info("recovered interrupted jobs", "requeued", requeued, "failed", failed)
	}
	return q, nil
}

func withDefaults(o Options) Options {
	if o.Limits == nil {
		o.Limits = &openai.DefaultLimits
	}
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.MaxResultBytes, 8<<20)
	def(&o.MaxInterruptions, 3)
	def(&o.CallbackConcurrency, 2)
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 1 << 20
	}
	if o.JobTimeout <= 0 {
		o.JobTimeout = 10 * time.Minute
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = 30 * time.Second
	}
	if o.RetryBackoff == nil {
		o.RetryBackoff = expBackoff(time.Second, 2, time.Minute)
	}
	if o.CallbackBackoff == nil {
		o.CallbackBackoff = expBackoff(5*time.Second, 4, 10*time.Minute)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Statfs == nil {
		o.Statfs = freeBytes
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// expBackoff waits base after the first failure, times factor per further
// failure, at most max.
func expBackoff(base time.Duration, factor int, max time.Duration) func(int) time.Duration {
	return func(n int) time.Duration {
		d := base
		for i := 1; i < n && d < max; i++ {
			d *= time.Duration(factor)
		}
		return min(d, max)
	}
}

func (q *Queue) ttl() time.Duration {
	return time.Duration(q.cfg.CompletedTTLMS) * time.Millisecond
}

// Close closes the database and releases the directory lock. Call it after
// Run has returned.
func (q *Queue) Close() error {
	err := q.st.close()
	if q.lock != nil {
		q.lock.Close()
	}
	return err
}

// notify wakes the Run loop without blocking.
func (q *Queue) notify() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Submission is a validated job request.
type Submission struct {
	Endpoint    string
	Body        []byte
	CallbackURL string
}

// Submit stores a job for tenant and returns it (with its callback secret)
// once it is committed. It fails with ErrInsufficientStorage when the
// storage filesystem has less than RAY_ASYNC_QUEUE_MIN_FREE_STORAGE_MIB
// free and with ErrQueueFull at RAY_ASYNC_QUEUE_MAX_JOBS stored jobs.
func (q *Queue) Submit(ctx context.Context, tenant string, s Submission) (*Job, error) {
	free, err := q.opts.Statfs(q.cfg.StorageDir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInsufficientStorage, err)
	}
	if need := uint64(q.cfg.MinFreeStorageMiB) << 20; free < need {
		return nil, fmt.Errorf("%d MiB free, %d MiB required: %w", free>>20, q.cfg.MinFreeStorageMiB, ErrInsufficientStorage)
	}
	now := q.opts.Now().UTC().Truncate(time.Millisecond)
	j := &Job{ID: newID(), Tenant: tenant, Endpoint: s.Endpoint, Body: s.Body, Status: StatusQueued,
		NextRunAt: now, CreatedAt: now, CallbackURL: s.CallbackURL, CallbackState: CallbackNone}
	if s.CallbackURL != "" {
		j.CallbackSecret = newSecret()
	}
	if err := q.st.insert(ctx, j, q.cfg.MaxJobs, now.Add(-q.ttl())); err != nil {
		return nil, err
	}
	q.notify()
	return j, nil
}

// Get returns tenant's job id; any other tenant's job is ErrNotFound.
func (q *Queue) Get(ctx context.Context, tenant, id string) (*Job, error) {
	if !validID(id) {
		return nil, fmt.Errorf("%q: %w", id, ErrNotFound)
	}
	return q.st.get(ctx, tenant, id)
}

// Cancel cancels tenant's queued job; a running or finished one is
// returned with ErrNotCancelable.
func (q *Queue) Cancel(ctx context.Context, tenant, id string) (*Job, error) {
	if !validID(id) {
		return nil, fmt.Errorf("%q: %w", id, ErrNotFound)
	}
	return q.st.cancel(ctx, tenant, id, q.opts.Now())
}

// Counts returns the number of stored jobs per status (for metrics).
func (q *Queue) Counts(ctx context.Context) (map[Status]int, error) {
	return q.st.count(ctx)
}
