package deploy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/raygw/raygw/internal/runtime"
	"github.com/raygw/raygw/internal/store"
)

// fakeRuntime records every effect the reconciler asks for; tests drive
// replica health by hand.
type fakeRuntime struct {
	mu      sync.Mutex
	effects []string
	reps    map[string]*fakeReplica
	addr    func(id string) string // default http://fake/<id>
}

type fakeReplica struct {
	rt       *fakeRuntime
	id, addr string
	spec     runtime.ReplicaSpec
	onChange func(runtime.Status)
	mu       sync.Mutex
	st       runtime.Status
}

var _ runtime.Runtime = (*fakeRuntime)(nil)

func newFakeRuntime() *fakeRuntime { return &fakeRuntime{reps: map[string]*fakeReplica{}} }

func (f *fakeRuntime) Name() string { return "fake" }

func (f *fakeRuntime) Start(_ context.Context, spec runtime.ReplicaSpec, onChange func(runtime.Status)) (runtime.Replica, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	addr := "http://fake/" + spec.ID
	if f.addr != nil {
		addr = f.addr(spec.ID)
	}
	r := &fakeReplica{rt: f, id: spec.ID, addr: addr, spec: spec, onChange: onChange,
		st: runtime.Status{State: runtime.Starting, Address: addr, PID: 1000 + len(f.reps)}}
	f.reps[spec.ID] = r
	f.effects = append(f.effects, "start "+spec.ID)
	return r, nil
}

func (f *fakeRuntime) log() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.effects...)
}

func (f *fakeRuntime) replica(id string) *fakeReplica {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reps[id]
}

func (r *fakeReplica) ID() string      { return r.id }
func (r *fakeReplica) Address() string { return r.addr }

func (r *fakeReplica) Status() runtime.Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st
}

// set changes the replica's state and reports it like a runtime does.
func (r *fakeReplica) set(s runtime.State, restarts int) {
	r.mu.Lock()
	r.st.State, r.st.Restarts = s, restarts
	st := r.st
	r.mu.Unlock()
	r.onChange(st)
}

func (r *fakeReplica) Stop(context.Context) error {
	r.rt.mu.Lock()
	r.rt.effects = append(r.rt.effects, "stop "+r.id)
	r.rt.mu.Unlock()
	r.mu.Lock()
	r.st.State = runtime.Stopped
	r.mu.Unlock()
	return nil
}

// memStore is an in-memory Store.
type memStore struct {
	mu   sync.Mutex
	recs map[string]store.Deployment
}

func (m *memStore) PutDeployment(_ context.Context, d store.Deployment) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.recs == nil {
		m.recs = map[string]store.Deployment{}
	}
	m.recs[d.Name] = d
	return nil
}

func (m *memStore) DeleteDeployment(_ context.Context, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.recs[name]; !ok {
		return store.ErrNotFound
	}
	delete(m.recs, name)
	return nil
}

func (m *memStore) ListDeployments(context.Context) ([]store.Deployment, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []store.Deployment
	for _, d := range m.recs {
		out = append(out, d)
	}
	return out, nil
}

func (m *memStore) get(name string) (store.Deployment, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.recs[name]
	return d, ok
}

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newTestManager(t *testing.T, rt *fakeRuntime, st Store) (*Manager, *clock) {
	t.Helper()
	c := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	m, err := NewManager(Options{Runtimes: map[string]runtime.Runtime{"local": rt}, Store: st, Now: c.Now,
		ReconcileEvery: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = m.Close(ctx)
	})
	return m, c
}

// modelFile is a file to use as a llama.cpp model path.
func modelFile(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "m.gguf")
	if err := os.WriteFile(p, []byte("GGUF"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func testSpec(t *testing.T, name string, replicas int) Spec {
	return Spec{Name: name, ModelName: name + "-model", ModelPath: modelFile(t), ModelClass: ClassLlamaCpp, Replicas: replicas}
}

// eventually polls cond (the owner goroutine works asynchronously).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached in 5s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func statusOf(t *testing.T, m *Manager, name string) Status {
	st, err := m.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func replicaIDs(st Status) []string {
	var out []string
	for _, r := range st.ReplicasStatus {
		out = append(out, fmt.Sprintf("%s:%s:g%d", r.ID, r.Status, r.Generation))
	}
	return out
}
