// Package jobs owns raygw's durable async job queue: jobs accepted over
// POST /v1/jobs are stored in their own SQLite database before the 202
// answer, a dispatcher runs them through the gateway's data path (an
// Executor), results are kept for a TTL, and webhook callbacks are delivered
// with persisted retries through the SSRF-safe client of package callback.
// See design.md for the storage decision and the state machine.
package jobs

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// Status is a job's lifecycle state.
type Status string

// Job states. queued -> running -> succeeded | failed, with running ->
// queued on a retryable failure or an interrupted run, and queued ->
// canceled on DELETE.
const (
	StatusQueued    Status = "queued"
	StatusRunning   Status = "running"
	StatusSucceeded Status = "succeeded"
	StatusFailed    Status = "failed"
	StatusCanceled  Status = "canceled"
)

// Done reports whether s is final.
func (s Status) Done() bool {
	return s == StatusSucceeded || s == StatusFailed || s == StatusCanceled
}

// CallbackState is the delivery state of a job's webhook.
type CallbackState string

// Callback states: none (no URL, or the job has not finished), pending
// (due at CallbackNextAt), delivered, failed (attempts exhausted or final).
const (
	CallbackNone      CallbackState = "none"
	CallbackPending   CallbackState = "pending"
	CallbackDelivered CallbackState = "delivered"
	CallbackFailed    CallbackState = "failed"
)

// Endpoints a job may target.
const (
	EndpointChat       = "/v1/chat/completions"
	EndpointCompletion = "/v1/completions"
)

// Sentinel errors, checked with errors.Is.
var (
	ErrNotFound            = errors.New("job not found")
	ErrNotCancelable       = errors.New("job is not queued")
	ErrQueueFull           = errors.New("job queue is full")
	ErrInsufficientStorage = errors.New("not enough free storage")
	ErrLocked              = errors.New("job storage is used by another process")
	ErrClosed              = errors.New("job queue is closed")
)

// Job is one stored job.
type Job struct {
	ID            string
	Tenant        string // fingerprint of the API key that submitted it
	Endpoint      string
	Body          []byte // the request body, as submitted
	Status        Status
	Attempts      int // runs started, not counting runs cut by a restart
	Interruptions int // runs cut by a restart or a shutdown
	NextRunAt     time.Time
	CreatedAt     time.Time
	StartedAt     time.Time // zero until the first run
	FinishedAt    time.Time // zero until done

	ResultStatus int    // HTTP status of the last answer, 0 if none
	ResultBody   []byte // stored answer (JSON) of the last run
	Error        string // client-facing message of a failure
	ErrorCode    string

	CallbackURL       string
	CallbackSecret    string
	CallbackState     CallbackState
	CallbackAttempts  int
	CallbackNextAt    time.Time
	CallbackLastError string
}

// idPrefix starts every job id.
const idPrefix = "job_"

// newID returns a random URL-safe id with 128 bits of entropy.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand panics instead)
	return idPrefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// newSecret returns a random callback signing secret.
func newSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return "whsec_" + base64.RawURLEncoding.EncodeToString(b[:])
}

// validID reports whether s has the shape of a job id, so malformed ids
// answer 404 without touching the database.
func validID(s string) bool {
	rest, ok := strings.CutPrefix(s, idPrefix)
	if !ok || len(rest) != 22 {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(rest)
	return err == nil
}

// View is the JSON form of a job in API answers and callback bodies.
type View struct {
	ID         string          `json:"id"`
	Object     string          `json:"object"` // always "job"
	Status     Status          `json:"status"`
	Endpoint   string          `json:"endpoint"`
	CreatedAt  int64           `json:"created_at"` // Unix seconds
	StartedAt  *int64          `json:"started_at,omitempty"`
	FinishedAt *int64          `json:"finished_at,omitempty"`
	Attempts   int             `json:"attempts"`
	Result     json.RawMessage `json:"result,omitempty"` // the stored response, when succeeded
	// ResultStatus is the HTTP status of the last answer, when there was one.
	ResultStatus int           `json:"result_status,omitempty"`
	Error        *ErrorView    `json:"error,omitempty"`
	Callback     *CallbackView `json:"callback,omitempty"`
	// CallbackSecret is returned once, in the 202 answer.
	CallbackSecret string `json:"callback_secret,omitempty"`
}

// ErrorView says why a job failed.
type ErrorView struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Code    *string `json:"code"`
	Param   *string `json:"param,omitempty"`
}

// CallbackView is the webhook delivery state in GET answers.
type CallbackView struct {
	URL       string        `json:"url"`
	Status    CallbackState `json:"status"`
	Attempts  int           `json:"attempts"`
	LastError string        `json:"last_error,omitempty"`
}

// View renders j; withCallback adds the delivery state (GET answers, not
// callback bodies).
func (j *Job) View(withCallback bool) View {
	v := View{ID: j.ID, Object: "job", Status: j.Status, Endpoint: j.Endpoint,
		CreatedAt: j.CreatedAt.Unix(), Attempts: j.Attempts, ResultStatus: j.ResultStatus}
	if !j.StartedAt.IsZero() {
		v.StartedAt = ptr(j.StartedAt.Unix())
	}
	if !j.FinishedAt.IsZero() {
		v.FinishedAt = ptr(j.FinishedAt.Unix())
	}
	switch j.Status {
	case StatusSucceeded:
		v.Result = json.RawMessage(j.ResultBody)
	case StatusFailed:
		v.Error = j.errorView()
	}
	if withCallback && j.CallbackURL != "" {
		v.Callback = &CallbackView{URL: j.CallbackURL, Status: j.CallbackState,
			Attempts: j.CallbackAttempts, LastError: j.CallbackLastError}
	}
	return v
}

// errorView prefers the error envelope the data path answered with.
func (j *Job) errorView() *ErrorView {
	var env struct {
		Error *ErrorView `json:"error"`
	}
	if len(j.ResultBody) > 0 && json.Unmarshal(j.ResultBody, &env) == nil &&
		env.Error != nil && env.Error.Message != "" {
		return env.Error
	}
	ev := &ErrorView{Message: j.Error, Type: "server_error"}
	if j.ErrorCode != "" {
		ev.Code = ptr(j.ErrorCode)
	}
	if ev.Message == "" {
		ev.Message = "the job failed"
	}
	return ev
}

func ptr[T any](v T) *T { return &v }
