package jobs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// DBFileName is the job database inside RAY_ASYNC_QUEUE_STORAGE_DIR.
const DBFileName = "jobs.db"

// store is the jobs table. One connection: SQLite serialises writers
// anyway, and a single connection makes each transaction below atomic
// with respect to every other store call.
type store struct {
	db *sql.DB
}

// openStore opens (creating) dir/jobs.db in WAL mode with synchronous=FULL,
// so a committed job survives a power loss, and applies migrations.
func openStore(ctx context.Context, dir string) (*store, error) {
	dsn := "file:" + filepath.Join(dir, DBFileName) +
		"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open job database: %w", err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	if err := migrate(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	_ = os.Chmod(filepath.Join(dir, DBFileName), 0o600)
	return &store{db: db}, nil
}

func (s *store) close() error { return s.db.Close() }

// ms converts a time to the stored Unix milliseconds; the zero time is NULL.
func ms(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMilli()
}

func fromMS(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return time.UnixMilli(v.Int64).UTC()
}

func nullStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// isFull reports whether err is SQLite's "database or disk is full".
func isFull(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_FULL
}

// insert stores j unless the table already holds maxJobs jobs after
// deleting finished jobs older than horizon.
func (s *store) insert(ctx context.Context, j *Job, maxJobs int, horizon time.Time) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("insert job: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, deleteExpiredSQL, horizon.UnixMilli()); err != nil {
		return fmt.Errorf("insert job: expire: %w", err)
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM jobs`).Scan(&n); err != nil {
		return fmt.Errorf("insert job: count: %w", err)
	}
	if n >= maxJobs {
		return fmt.Errorf("%d of %d jobs stored: %w", n, maxJobs, ErrQueueFull)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO jobs (id, tenant, endpoint, body, status, next_run_at, created_at, callback_url, callback_secret)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, j.ID, j.Tenant, j.Endpoint, j.Body, string(j.Status),
		j.NextRunAt.UnixMilli(), j.CreatedAt.UnixMilli(), nullStr(j.CallbackURL), nullStr(j.CallbackSecret))
	if err == nil {
		err = tx.Commit()
	}
	if err != nil {
		if isFull(err) {
			return fmt.Errorf("insert job: %w: %w", ErrInsufficientStorage, err)
		}
		return fmt.Errorf("insert job: %w", err)
	}
	return nil
}

const jobColumns = `id, tenant, endpoint, body, status, attempts, interruptions, next_run_at, created_at,
 started_at, finished_at, result_status, result_body, error, error_code, callback_url, callback_secret,
 callback_state, callback_attempts, callback_next_at, callback_last_error`

type scanner interface{ Scan(dest ...any) error }

func scanJob(row scanner) (*Job, error) {
	var (
		j                                   Job
		status, cbState                     string
		next, created                       int64
		started, finished, cbNext, resCode  sql.NullInt64
		errMsg, errCode, cbURL, cbSec, cbEr sql.NullString
	)
	err := row.Scan(&j.ID, &j.Tenant, &j.Endpoint, &j.Body, &status, &j.Attempts, &j.Interruptions,
		&next, &created, &started, &finished, &resCode, &j.ResultBody, &errMsg, &errCode,
		&cbURL, &cbSec, &cbState, &j.CallbackAttempts, &cbNext, &cbEr)
	if err != nil {
		return nil, err
	}
	j.Status, j.CallbackState = Status(status), CallbackState(cbState)
	j.NextRunAt, j.CreatedAt = time.UnixMilli(next).UTC(), time.UnixMilli(created).UTC()
	j.StartedAt, j.FinishedAt, j.CallbackNextAt = fromMS(started), fromMS(finished), fromMS(cbNext)
	j.ResultStatus = int(resCode.Int64)
	j.Error, j.ErrorCode = errMsg.String, errCode.String
	j.CallbackURL, j.CallbackSecret, j.CallbackLastError = cbURL.String, cbSec.String, cbEr.String
	return &j, nil
}

func scanJobs(rows *sql.Rows, err error) ([]*Job, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// get returns the tenant's job; another tenant's job is ErrNotFound.
func (s *store) get(ctx context.Context, tenant, id string) (*Job, error) {
	j, err := scanJob(s.db.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = ? AND tenant = ?`, id, tenant))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get job: %w", err)
	}
	return j, nil
}

// cancel moves the tenant's queued job to canceled and returns it; a job in
// another state is returned with ErrNotCancelable.
func (s *store) cancel(ctx context.Context, tenant, id string, now time.Time) (*Job, error) {
	j, err := scanJob(s.db.QueryRowContext(ctx, `UPDATE jobs SET status = 'canceled', finished_at = ?
WHERE id = ? AND tenant = ? AND status = 'queued' RETURNING `+jobColumns, now.UnixMilli(), id, tenant))
	if err == nil {
		return j, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("cancel job: %w", err)
	}
	j, err = s.get(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	return j, fmt.Errorf("%s is %s: %w", id, j.Status, ErrNotCancelable)
}

// count is the number of stored jobs in each state.
func (s *store) count(ctx context.Context) (map[Status]int, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT status, COUNT(*) FROM jobs GROUP BY status`)
	if err != nil {
		return nil, fmt.Errorf("count jobs: %w", err)
	}
	defer rows.Close()
	out := map[Status]int{}
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return nil, fmt.Errorf("count jobs: %w", err)
		}
		out[Status(st)] = n
	}
	return out, rows.Err()
}

// deleteExpiredSQL removes finished jobs older than the horizon whose
// callback is not still pending (a pending one has bounded attempts left).
const deleteExpiredSQL = `DELETE FROM jobs WHERE finished_at IS NOT NULL AND finished_at < ?
 AND status IN ('succeeded', 'failed', 'canceled') AND callback_state <> 'pending'`

// deleteExpired applies the completed-job TTL.
func (s *store) deleteExpired(ctx context.Context, horizon time.Time) (int, error) {
	res, err := s.db.ExecContext(ctx, deleteExpiredSQL, horizon.UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("delete expired jobs: %w", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}
