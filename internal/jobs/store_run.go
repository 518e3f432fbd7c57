package jobs

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"
)

// claim moves up to n due queued jobs to running, counting an attempt, and
// returns them oldest first.
func (s *store) claim(ctx context.Context, now time.Time, n int) ([]*Job, error) {
	if n <= 0 {
		return nil, nil
	}
	jobs, err := scanJobs(s.db.QueryContext(ctx, `UPDATE jobs SET status = 'running', attempts = attempts + 1, started_at = ?
WHERE id IN (SELECT id FROM jobs WHERE status = 'queued' AND next_run_at <= ? ORDER BY next_run_at, created_at LIMIT ?)
RETURNING `+jobColumns, now.UnixMilli(), now.UnixMilli(), n))
	if err != nil {
		return nil, fmt.Errorf("claim jobs: %w", err)
	}
	// RETURNING has no defined order.
	slices.SortFunc(jobs, func(a, b *Job) int {
		return cmp.Or(a.NextRunAt.Compare(b.NextRunAt), a.CreatedAt.Compare(b.CreatedAt))
	})
	return jobs, nil
}

// outcome is how one run of a job ended.
type outcome struct {
	status     Status // succeeded, failed or queued (retry)
	resStatus  int
	resBody    []byte
	errMsg     string
	errCode    string
	nextRunAt  time.Time // for a retry
	finishedAt time.Time // for a final state
}

// record stores the outcome of a running job. A final state with a
// callback URL makes the callback pending, due at once.
func (s *store) record(ctx context.Context, id string, o outcome) error {
	var err error
	if o.status == StatusQueued {
		_, err = s.db.ExecContext(ctx, `UPDATE jobs SET status = 'queued', next_run_at = ?, result_status = ?,
 result_body = ?, error = ?, error_code = ? WHERE id = ? AND status = 'running'`,
			o.nextRunAt.UnixMilli(), nullInt(o.resStatus), o.resBody, nullStr(o.errMsg), nullStr(o.errCode), id)
	} else {
		_, err = s.db.ExecContext(ctx, `UPDATE jobs SET status = ?, finished_at = ?, result_status = ?,
 result_body = ?, error = ?, error_code = ?,
 callback_state = CASE WHEN callback_url IS NULL THEN 'none' ELSE 'pending' END,
 callback_next_at = CASE WHEN callback_url IS NULL THEN NULL ELSE ? END
 WHERE id = ? AND status = 'running'`,
			string(o.status), o.finishedAt.UnixMilli(), nullInt(o.resStatus), o.resBody,
			nullStr(o.errMsg), nullStr(o.errCode), o.finishedAt.UnixMilli(), id)
	}
	if err != nil {
		return fmt.Errorf("record job %s: %w", id, err)
	}
	return nil
}

func nullInt(n int) any {
	if n == 0 {
		return nil
	}
	return n
}

// requeue puts a running job whose run was cut short (shutdown) back in
// the queue without counting the attempt.
func (s *store) requeue(ctx context.Context, id string, now time.Time) error {
	_, err := s.db.ExecContext(ctx, `UPDATE jobs SET status = 'queued', attempts = MAX(attempts - 1, 0),
 interruptions = interruptions + 1, next_run_at = ? WHERE id = ? AND status = 'running'`, now.UnixMilli(), id)
	if err != nil {
		return fmt.Errorf("requeue job %s: %w", id, err)
	}
	return nil
}

// recoverInterrupted runs at open: every job still marked running lost its
// run with the previous process. It is queued again without counting that
// attempt, unless it has been interrupted maxInterruptions times already
// (a job that keeps killing the gateway), in which case it fails. Callback
// deliveries that were in flight are made due again; those waiting out a
// backoff keep their time.
func (s *store) recoverInterrupted(ctx context.Context, now time.Time, maxInterruptions int) (requeued, failed int, err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, 0, fmt.Errorf("recover jobs: %w", err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `UPDATE jobs SET status = 'failed', finished_at = ?, error = ?, error_code = 'job_interrupted',
 callback_state = CASE WHEN callback_url IS NULL THEN 'none' ELSE 'pending' END,
 callback_next_at = CASE WHEN callback_url IS NULL THEN NULL ELSE ? END
 WHERE status = 'running' AND interruptions >= ?`, now.UnixMilli(),
		"the job was interrupted by gateway restarts too many times", now.UnixMilli(), maxInterruptions)
	if err != nil {
		return 0, 0, fmt.Errorf("recover jobs: %w", err)
	}
	f, _ := res.RowsAffected()
	res, err = tx.ExecContext(ctx, `UPDATE jobs SET status = 'queued', attempts = MAX(attempts - 1, 0),
 interruptions = interruptions + 1, next_run_at = ? WHERE status = 'running'`, now.UnixMilli())
	if err != nil {
		return 0, 0, fmt.Errorf("recover jobs: %w", err)
	}
	r, _ := res.RowsAffected()
	if _, err := tx.ExecContext(ctx, `UPDATE jobs SET callback_next_at = ?, callback_in_flight = 0
 WHERE callback_state = 'pending' AND callback_in_flight = 1`, now.UnixMilli()); err != nil {
		return 0, 0, fmt.Errorf("recover callbacks: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, 0, fmt.Errorf("recover jobs: %w", err)
	}
	return int(r), int(f), nil
}

// claimCallbacks leases up to n due callbacks: their attempt is counted and
// they are not due again until lease has passed, so a delivery cut by a
// crash is retried after a restart.
func (s *store) claimCallbacks(ctx context.Context, now time.Time, lease time.Duration, n int) ([]*Job, error) {
	if n <= 0 {
		return nil, nil
	}
	jobs, err := scanJobs(s.db.QueryContext(ctx, `UPDATE jobs SET callback_attempts = callback_attempts + 1,
 callback_next_at = ?, callback_in_flight = 1 WHERE id IN (SELECT id FROM jobs WHERE callback_state = 'pending' AND callback_next_at <= ? ORDER BY callback_next_at LIMIT ?)
RETURNING `+jobColumns, now.Add(lease).UnixMilli(), now.UnixMilli(), n))
	if err != nil {
		return nil, fmt.Errorf("claim callbacks: %w", err)
	}
	return jobs, nil
}

// recordCallback stores a delivery result: state delivered or failed, or
// pending again at next.
func (s *store) recordCallback(ctx context.Context, id string, state CallbackState, next time.Time, lastErr string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE jobs SET callback_state = ?, callback_next_at = ?, callback_last_error = ?,
 callback_in_flight = 0 WHERE id = ? AND callback_state = 'pending'`, string(state), ms(next), nullStr(lastErr), id)
	if err != nil {
		return fmt.Errorf("record callback %s: %w", id, err)
	}
	return nil
}
