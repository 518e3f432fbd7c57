package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/raygw/raygw/internal/jobs/callback"
)

// maxLastErrorLen bounds the delivery error kept for GET answers.
const maxLastErrorLen = 300

// callbackLease is how long a claimed delivery stays invisible to other
// claims: past every timeout, so only a crash makes it due again early.
func (q *Queue) callbackLease() time.Duration {
	return time.Duration(q.cfg.CallbackTimeoutMS)*time.Millisecond + 30*time.Second
}

// startCallbacks claims due deliveries into free slots.
func (q *Queue) startCallbacks(ctx, work context.Context, slots chan struct{}, wg *sync.WaitGroup) {
	jobs, err := q.st.claimCallbacks(ctx, q.opts.Now(), q.callbackLease(), cap(slots)-len(slots))
	if err != nil {
		q.logErr(ctx, "claim callbacks", err)
		return
	}
	for _, j := range jobs {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots; q.notify() }()
			q.deliver(work, j)
		}()
	}
}

// CallbackBody is the JSON POSTed to a job's callback URL: the job's view
// without the delivery state (id, status, result or error, times).
func CallbackBody(j *Job) ([]byte, error) {
	return json.Marshal(j.View(false))
}

// deliver makes one delivery attempt (already counted by the claim) and
// records the result: delivered on 2xx; pending again with backoff after
// a transport error, 408, 429 or 5xx while attempts remain; failed
// otherwise. The URL is checked again against the current policy.
func (q *Queue) deliver(work context.Context, j *Job) {
	state, lastErr := q.attempt(work, j)
	next := time.Time{}
	if state == CallbackPending {
		if j.CallbackAttempts >= q.cfg.MaxCallbackAttempts {
			state = CallbackFailed
		} else {
			next = q.opts.Now().Add(q.opts.CallbackBackoff(j.CallbackAttempts))
		}
	}
	if len(lastErr) > maxLastErrorLen {
		lastErr = lastErr[:maxLastErrorLen]
	}
	dbCtx, cancel := context.WithTimeout(context.WithoutCancel(work), 10*time.Second)
	defer cancel()
	if err := q.st.recordCallback(dbCtx, j.ID, state, next, lastErr); err != nil {
		q.log.Error("record callback", "job", j.ID, "err", err)
		return
	}
	q.log.Info("callback attempt", "job", j.ID, "attempt", j.CallbackAttempts, "state", state, "err", lastErr)
}

// attempt posts the callback once and classifies the result.
func (q *Queue) attempt(ctx context.Context, j *Job) (CallbackState, string) {
	if _, err := q.policy.CheckURL(j.CallbackURL); err != nil {
		return CallbackFailed, err.Error()
	}
	body, err := CallbackBody(j)
	if err != nil {
		return CallbackFailed, err.Error()
	}
	status, err := q.client.Post(ctx, j.CallbackURL, j.ID, body, j.CallbackSecret)
	switch {
	case errors.Is(err, callback.ErrBlockedAddress), errors.Is(err, callback.ErrRedirect),
		errors.Is(err, callback.ErrInvalidURL):
		return CallbackFailed, err.Error()
	case err != nil:
		return CallbackPending, err.Error()
	case status >= 200 && status < 300:
		return CallbackDelivered, ""
	case status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500:
		return CallbackPending, fmt.Sprintf("the receiver answered %d", status)
	default:
		return CallbackFailed, fmt.Sprintf("the receiver answered %d", status)
	}
}
