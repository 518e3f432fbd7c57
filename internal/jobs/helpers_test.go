package jobs

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/raygw/raygw/internal/config"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// clock is an injected clock that moves only when told.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// reply is one scripted Executor answer.
type reply struct {
	status int
	body   string
	err    error
}

// fakeExec answers from a script (the last entry repeats) and records calls.
type fakeExec struct {
	mu     sync.Mutex
	script []reply
	calls  []string // tenant + " " + endpoint
	block  chan struct{}
}

var _ Executor = (*fakeExec)(nil)

func (f *fakeExec) Execute(ctx context.Context, tenant, endpoint string, body []byte) (int, []byte, error) {
	f.mu.Lock()
	f.calls = append(f.calls, tenant+" "+endpoint)
	r := reply{status: 200, body: `{"object":"chat.completion","choices":[]}`}
	if len(f.script) > 0 {
		r = f.script[0]
		if len(f.script) > 1 {
			f.script = f.script[1:]
		}
	}
	block := f.block
	f.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return 0, nil, ctx.Err()
		}
	}
	return r.status, []byte(r.body), r.err
}

func (f *fakeExec) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

func testConfig(dir string) config.AsyncQueue {
	return config.AsyncQueue{Enabled: true, StorageDir: dir, MaxJobs: 16, MinFreeStorageMiB: 1,
		CompletedTTLMS: 3600_000, PollIntervalMS: 10, DispatchConcurrency: 2, MaxAttempts: 3,
		CallbackTimeoutMS: 5000, MaxCallbackAttempts: 3, CallbackAllowPrivateNetwork: true,
		CallbackAllowedHosts: []string{"127.0.0.1"}}
}

// env is a queue under test with its clock and executor.
type env struct {
	q    *Queue
	clk  *clock
	exec *fakeExec
	opts Options
}

func newEnv(t *testing.T, mut func(*Options)) *env {
	t.Helper()
	e := &env{clk: newClock(), exec: &fakeExec{}}
	e.opts = Options{Config: testConfig(t.TempDir()), Executor: e.exec, Now: e.clk.Now,
		Statfs: func(string) (uint64, error) { return 1 << 40, nil }}
	if mut != nil {
		mut(&e.opts)
	}
	e.open(t)
	t.Cleanup(func() { e.q.Close() })
	return e
}

// open (re)opens the queue on the same directory.
func (e *env) open(t *testing.T) {
	t.Helper()
	q, err := Open(context.Background(), e.opts)
	if err != nil {
		t.Fatal(err)
	}
	e.q = q
}

// reopen simulates a restart: close, then open the same storage.
func (e *env) reopen(t *testing.T) {
	t.Helper()
	if err := e.q.Close(); err != nil {
		t.Fatal(err)
	}
	e.open(t)
}

func (e *env) submit(t *testing.T, tenant string, s Submission) *Job {
	t.Helper()
	if s.Endpoint == "" {
		s.Endpoint = EndpointChat
	}
	if s.Body == nil {
		s.Body = []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	}
	j, err := e.q.Submit(context.Background(), tenant, s)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func (e *env) get(t *testing.T, tenant, id string) *Job {
	t.Helper()
	j, err := e.q.Get(context.Background(), tenant, id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// runDue runs one dispatch round synchronously: claim due jobs, run them,
// wait for their outcomes to be recorded.
func (e *env) runDue(t *testing.T) int {
	t.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	slots := make(chan struct{}, max(e.q.cfg.DispatchConcurrency, 1))
	jobs, err := e.q.st.claim(ctx, e.clk.Now(), cap(slots))
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		wg.Add(1)
		go func() { defer wg.Done(); e.q.runJob(ctx, j) }()
	}
	wg.Wait()
	return len(jobs)
}

// deliverDue runs one callback round synchronously.
func (e *env) deliverDue(t *testing.T) int {
	t.Helper()
	ctx := context.Background()
	jobs, err := e.q.st.claimCallbacks(ctx, e.clk.Now(), e.q.callbackLease(), e.q.opts.CallbackConcurrency)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		e.q.deliver(ctx, j)
	}
	return len(jobs)
}

// waitFor polls cond until it holds or 10 s pass (a bound, not a timing
// assertion).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
