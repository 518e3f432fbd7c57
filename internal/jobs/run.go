package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/raygw/raygw/internal/openai"
)

// cleanupInterval is how often Run applies the completed-job TTL (Submit
// also applies it when it needs room).
const cleanupInterval = time.Minute

// ErrDrainTimeout is returned by Run when running work did not end in time
// after its context was cancelled; those jobs are re-queued at next start.
var ErrDrainTimeout = errors.New("jobs: running work did not stop in time")

// Run dispatches jobs and delivers callbacks until ctx ends. It claims due
// jobs every RAY_ASYNC_QUEUE_POLL_INTERVAL_MS, at once after a submit and
// whenever a slot frees, runs up to RAY_ASYNC_QUEUE_DISPATCH_CONCURRENCY at
// a time, and applies the TTL. When ctx ends it stops claiming, gives
// running jobs and deliveries DrainTimeout to finish, then cancels them;
// a cancelled job goes back to the queue. Run is the only goroutine that
// claims work; call it once.
func (q *Queue) Run(ctx context.Context) error {
	work, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	var wg sync.WaitGroup
	jobSlots := make(chan struct{}, max(q.cfg.DispatchConcurrency, 1))
	cbSlots := make(chan struct{}, q.opts.CallbackConcurrency)
	poll := time.Duration(max(q.cfg.PollIntervalMS, 1)) * time.Millisecond
	timer := time.NewTimer(0)
	defer timer.Stop()
	var lastCleanup time.Time
	for ctx.Err() == nil {
		now := q.opts.Now()
		if now.Sub(lastCleanup) >= cleanupInterval {
			if n, err := q.st.deleteExpired(ctx, now.Add(-q.ttl())); err != nil {
				q.logErr(ctx, "expire jobs", err)
			} else if n > 0 {
				q.log.Debug("expired finished jobs", "deleted", n)
			}
			lastCleanup = now
		}
		q.startJobs(ctx, work, jobSlots, &wg)
		q.startCallbacks(ctx, work, cbSlots, &wg)
		select {
		case <-ctx.Done():
		case <-q.wake:
		case <-timer.C:
		}
		timer.Reset(poll)
	}
	return q.drain(&wg, cancelWork)
}

// drain waits for running work, cancelling it after DrainTimeout.
func (q *Queue) drain(wg *sync.WaitGroup, cancelWork context.CancelFunc) error {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(q.opts.DrainTimeout)
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-t.C:
	}
	q.log.Warn("running jobs did not finish in time; cancelling them", "drain_timeout", q.opts.DrainTimeout)
	cancelWork()
	t.Reset(q.opts.DrainTimeout)
	select {
	case <-done:
		return nil
	case <-t.C:
		return ErrDrainTimeout
	}
}

func (q *Queue) logErr(ctx context.Context, what string, err error) {
	if ctx.Err() == nil {
		q.log.Error(what, "err", err)
	}
}

// startJobs claims as many due jobs as there are free slots and runs each
// in its own goroutine.
func (q *Queue) startJobs(ctx, work context.Context, slots chan struct{}, wg *sync.WaitGroup) {
	jobs, err := q.st.claim(ctx, q.opts.Now(), cap(slots)-len(slots))
	if err != nil {
		q.logErr(ctx, "claim jobs", err)
		return
	}
	for _, j := range jobs {
		slots <- struct{}{} // never blocks: only this goroutine fills slots
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots; q.notify() }()
			q.runJob(work, j)
		}()
	}
}

// runJob runs one claimed job and records how it ended.
func (q *Queue) runJob(work context.Context, j *Job) {
	ctx, cancel := context.WithTimeout(work, q.opts.JobTimeout)
	status, body, err := q.execute(ctx, j)
	cancel()
	dbCtx, dbCancel := context.WithTimeout(context.WithoutCancel(work), 10*time.Second)
	defer dbCancel()
	now := q.opts.Now()
	if err != nil && work.Err() != nil { // shutdown cut the run: not the job's fault
		if err := q.st.requeue(dbCtx, j.ID, now); err != nil {
			q.log.Error("requeue interrupted job", "job", j.ID, "err", err)
		}
		return
	}
	o := q.decide(j, status, body, err, now)
	if err := q.st.record(dbCtx, j.ID, o); err != nil {
		q.log.Error("record job outcome", "job", j.ID, "err", err)
		return
	}
	q.log.Info("job run ended", "job", j.ID, "tenant", j.Tenant, "attempt", j.Attempts,
		"status", o.status, "result_status", o.resStatus, "err", err)
}

// execute calls the Executor, turning a panic into an error.
func (q *Queue) execute(ctx context.Context, j *Job) (status int, body []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			q.log.Error("executor panicked", "job", j.ID, "panic", r)
			status, body, err = 0, nil, fmt.Errorf("executor panic: %v", r)
		}
	}()
	return q.opts.Executor.Execute(ctx, j.Tenant, j.Endpoint, j.Body)
}

// retryable reports whether an answer with this status may succeed later.
func retryable(status int) bool {
	return status == http.StatusTooManyRequests || status >= 500
}

// decide turns one run's result into the job's next state: succeeded on
// 2xx with a JSON body; queued again with backoff on a transport error,
// 429 or 5xx while attempts remain; failed otherwise.
func (q *Queue) decide(j *Job, status int, body []byte, err error, now time.Time) outcome {
	o := outcome{status: StatusFailed, resStatus: status, finishedAt: now}
	if len(body) <= q.opts.MaxResultBytes {
		o.resBody = body
	}
	retry := false
	switch {
	case err != nil:
		o.resStatus, o.resBody, retry = 0, nil, true
		o.errMsg, o.errCode = "the request failed before an answer was produced", "job_execution_failed"
		var oe *openai.Error
		if errors.As(err, &oe) {
			o.resStatus, o.errMsg, o.errCode, retry = oe.Status, oe.Message, oe.Code, retryable(oe.Status)
		} else if errors.Is(err, context.DeadlineExceeded) {
			o.errMsg, o.errCode = fmt.Sprintf("the run exceeded %s", q.opts.JobTimeout), "timeout"
		}
	case status >= 200 && status < 300:
		switch {
		case len(body) > q.opts.MaxResultBytes:
			o.errMsg, o.errCode = fmt.Sprintf("the answer is larger than %d bytes", q.opts.MaxResultBytes), "result_too_large"
		case !json.Valid(body):
			o.resBody = nil
			o.errMsg, o.errCode = "the answer was not JSON", "invalid_result"
		default:
			o.status = StatusSucceeded
		}
	default:
		retry = retryable(status)
		o.errMsg, o.errCode = fmt.Sprintf("the request was answered with status %d", status), "upstream_error"
	}
	if o.resBody != nil && !json.Valid(o.resBody) {
		o.resBody = nil
	}
	if retry && j.Attempts < q.cfg.MaxAttempts {
		o.status, o.finishedAt = StatusQueued, time.Time{}
		o.nextRunAt = now.Add(q.opts.RetryBackoff(j.Attempts))
	}
	return o
}
