package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/raygw/raygw/internal/engine/openaicompat"
	"github.com/raygw/raygw/internal/routing"
	"github.com/raygw/raygw/internal/runtime"
	"github.com/raygw/raygw/internal/store"
)

// replica is one replica as its deployment's owner goroutine tracks it.
type replica struct {
	id       string
	gen      int
	slot     int
	rt       runtime.Replica
	state    ReplicaState
	since    time.Time
	stopping bool
}

type event struct {
	id      string
	st      runtime.Status
	stopped bool
}

// deployment is one deployment. Its goroutine (run) is the only one that
// starts, stops or changes replicas; other goroutines send it closures on
// cmds and read snapshots under mu.
type deployment struct {
	m      *Manager
	name   string
	log    *slog.Logger
	pool   *routing.Pool
	win    *window
	client *openaicompat.Client
	cmds   chan func()
	events chan event
	done   chan struct{}
	// builtin is set for the gateway's own deployment (not persisted, not
	// changed through the API).
	builtin *Builtin
	// nctx is each healthy llama.cpp replica's per-slot context (from /props).
	nctx sync.Map // replica id -> int
	// queued reports requests waiting in the gateway for this deployment
	// (a func() int, set by the data path).
	queued atomic.Value

	mu         sync.RWMutex
	spec       Spec
	gen        int
	deleting   bool
	closing    bool
	state      State
	stateSince time.Time
	reps       map[string]*replica
	seq        int
}

// affinityPrefixes bounds the prompt prefixes a deployment's router
// remembers (least recently used are forgotten).
const affinityPrefixes = 4096

func newDeployment(m *Manager, s Spec, gen int, b *Builtin) *deployment {
	router := routing.WithAffinity(routing.NewPrefixAffinity(affinityPrefixes), routing.AffinityWeight)
	d := &deployment{m: m, name: s.Name, log: m.log.With("deployment", s.Name), pool: routing.NewPool(router),
		win: newWindow(m.opt.Now), cmds: make(chan func(), 16), events: make(chan event, 256), done: make(chan struct{}),
		spec: s, gen: gen, state: Deploying, stateSince: m.opt.Now(), reps: map[string]*replica{}, builtin: b}
	key := ""
	if s.EngineConfig.APIKeyEnv != "" {
		key = os.Getenv(s.EngineConfig.APIKeyEnv)
	}
	base := replicaTransport(m.opt, s)
	if b != nil {
		key = b.APIKey
		if b.Transport != nil {
			base = b.Transport
		}
	}
	d.client = &openaicompat.Client{BaseURL: "http://" + s.Name + ".deployment.raygw.invalid", APIKey: key,
		HTTP: &http.Client{Transport: &routeTransport{d: d, base: base}}}
	return d
}

// replicaTransport bounds the connections to one llama.cpp replica below
// its HTTP threads: llama-server parks a worker thread on every kept-alive
// connection, so more gateway connections than threads would stall new
// ones (and the health probe) until an idle one times out. One thread is
// left for health checks and token counts.
func replicaTransport(opt Options, s Spec) http.RoundTripper {
	tr, ok := opt.Transport.(*http.Transport)
	if !ok || s.ModelClass != ClassLlamaCpp {
		return opt.Transport
	}
	n := llamaLaunch(s, opt.Defaults).ThreadsHTTP
	if n < 2 {
		return opt.Transport
	}
	c := tr.Clone()
	c.MaxConnsPerHost = n - 1
	return c
}

// run is the owner goroutine.
func (d *deployment) run() {
	defer close(d.done)
	defer func() {
		if v := recover(); v != nil {
			d.log.Error("deployment owner panicked", "panic", fmt.Sprint(v))
		}
	}()
	t := time.NewTicker(d.m.opt.ReconcileEvery)
	defer t.Stop()
	for {
		d.reconcile()
		if d.finished() {
			return
		}
		select {
		case f := <-d.cmds:
			f()
		case ev := <-d.events:
			d.apply(ev)
		case <-t.C:
		}
	}
}

// do runs f on the owner goroutine and waits for it.
func (d *deployment) do(f func()) bool {
	ran := make(chan struct{})
	select {
	case d.cmds <- func() { f(); close(ran) }:
	case <-d.done:
		return false
	}
	select {
	case <-ran:
		return true
	case <-d.done:
		return false
	}
}

func (d *deployment) send(ev event) {
	select {
	case d.events <- ev:
	case <-d.done:
	}
}

func (d *deployment) views() []view {
	out := make([]view, 0, len(d.reps))
	for _, r := range d.reps {
		out = append(out, view{ID: r.id, Generation: r.gen, Slot: r.slot, State: r.state, Stopping: r.stopping})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Slot < out[j].Slot })
	return out
}

// reconcile carries out decide's actions and refreshes the state.
func (d *deployment) reconcile() {
	d.mu.RLock()
	acts := decide(d.gen, d.spec.Replicas, d.deleting || d.closing, d.views())
	d.mu.RUnlock()
	for _, a := range acts {
		switch a.Kind {
		case actStart:
			d.startReplica(a.Slot)
		case actStop:
			d.stopReplica(a.ID)
		}
	}
	d.mu.Lock()
	st := stateOf(d.spec.Replicas, d.deleting, d.views())
	changed := st != d.state
	if changed {
		d.log.Info("deployment state", "from", d.state, "to", st)
		d.state, d.stateSince = st, d.m.opt.Now()
	}
	d.mu.Unlock()
	if changed && !d.closing {
		_ = d.persist(context.Background())
	}
}

func (d *deployment) startReplica(slot int) {
	d.mu.Lock()
	d.seq++
	id := fmt.Sprintf("%s-%d", d.name, d.seq)
	spec, gen := d.spec, d.gen
	d.mu.Unlock()
	rt := d.m.opt.Runtimes[spec.Cluster]
	rs, err := replicaSpec(spec, d.m.opt.Defaults, id, slot)
	if err == nil && d.builtin != nil {
		d.builtin.apply(&rs)
	}
	var rep runtime.Replica
	if err == nil {
		rep, err = rt.Start(context.Background(), rs, func(st runtime.Status) { d.send(event{id: id, st: st}) })
	}
	if err != nil {
		d.log.Error("replica did not start", "replica", id, "err", err)
		return
	}
	d.mu.Lock()
	d.reps[id] = &replica{id: id, gen: gen, slot: slot, rt: rep, state: ReplicaStarting, since: d.m.opt.Now()}
	d.mu.Unlock()
	d.pool.Upsert(id, rep.Address(), false, slotsOf(spec, d.m.opt.Defaults))
	d.log.Info("replica started", "replica", id, "generation", gen, "slot", slot, "address", rep.Address())
}

// stopReplica takes id out of routing at once, then drains and stops it in
// the background; a stopped event removes it.
func (d *deployment) stopReplica(id string) {
	d.mu.Lock()
	r, ok := d.reps[id]
	if !ok || r.stopping {
		d.mu.Unlock()
		return
	}
	r.stopping = true
	drain := ms(d.spec.DrainTimeoutMS, 30_000)
	d.mu.Unlock()
	d.pool.SetDraining(id)
	d.log.Info("draining replica", "replica", id, "in_flight", d.pool.InFlight(id))
	go func() {
		deadline := time.Now().Add(drain)
		tick := time.NewTicker(20 * time.Millisecond)
		for d.pool.InFlight(id) > 0 && time.Now().Before(deadline) {
			<-tick.C
		}
		tick.Stop()
		ctx, cancel := context.WithTimeout(context.Background(), d.m.opt.StopTimeout)
		err := r.rt.Stop(ctx)
		cancel()
		d.log.Info("replica stopped", "replica", id, "err", err)
		d.send(event{id: id, stopped: true})
	}()
}

func (d *deployment) apply(ev event) {
	d.mu.Lock()
	r, ok := d.reps[ev.id]
	if !ok {
		d.mu.Unlock()
		return
	}
	if ev.stopped {
		delete(d.reps, ev.id)
		d.mu.Unlock()
		d.pool.Remove(ev.id)
		d.nctx.Delete(ev.id)
		return
	}
	st := replicaStateOf(ev.st)
	changed := st != r.state
	if changed {
		d.log.Info("replica state", "replica", r.id, "from", r.state, "to", st, "pid", ev.st.PID, "restarts", ev.st.Restarts, "last_error", ev.st.LastError)
		r.state, r.since = st, d.m.opt.Now()
	}
	spec := d.spec
	d.mu.Unlock()
	if changed && st == ReplicaHealthy {
		// llama-server (managed, or external behind the gateway's own model)
		// reports its per-slot context; other engines answer 404, ignored.
		d.readContext(r.id, r.rt.Address())
	} else if st != ReplicaHealthy {
		d.nctx.Delete(r.id)
	}
	d.pool.Upsert(r.id, r.rt.Address(), st == ReplicaHealthy, slotsOf(spec, d.m.opt.Defaults))
	if changed && d.builtin != nil && d.builtin.OnReplica != nil {
		d.builtin.OnReplica(st, r.rt.Address())
	}
}

func (d *deployment) finished() bool {
	d.mu.RLock()
	end := (d.deleting || d.closing) && len(d.reps) == 0
	deleting := d.deleting
	d.mu.RUnlock()
	if !end {
		return false
	}
	if deleting && d.m.opt.Store != nil {
		if err := d.m.opt.Store.DeleteDeployment(context.Background(), d.name); err != nil {
			d.log.Warn("could not remove the deployment from the store", "err", err)
		}
	}
	d.m.forget(d)
	d.log.Info("deployment gone", "deleted", deleting)
	return true
}

// update swaps the spec; anything but a replica count (or drain timeout)
// change starts a new generation, rolled out one replica at a time.
func (d *deployment) update(ctx context.Context, next Spec) error {
	var err error
	ok := d.do(func() {
		if d.deleting {
			err = fmt.Errorf("%w: %s is being deleted", ErrConflict, d.name)
			return
		}
		d.mu.Lock()
		if needsRollout(d.spec, next) {
			d.gen++
		}
		d.spec = next
		d.mu.Unlock()
		err = d.persist(ctx)
	})
	if !ok {
		return fmt.Errorf("%w: %s", ErrNotFound, d.name)
	}
	return err
}

func needsRollout(a, b Spec) bool {
	a.Replicas, b.Replicas, a.DrainTimeoutMS, b.DrainTimeoutMS = 0, 0, 0, 0
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) != string(jb)
}

func (d *deployment) delete() {
	d.do(func() {
		d.mu.Lock()
		d.deleting = true
		if d.state != Deleting {
			d.state, d.stateSince = Deleting, d.m.opt.Now()
		}
		d.mu.Unlock()
		d.log.Info("deleting deployment: routing stopped, draining replicas")
		_ = d.persist(context.Background())
		d.reconcile() // the answer already shows the replicas draining
	})
}

func (d *deployment) shutdown() {
	d.do(func() {
		d.mu.Lock()
		d.closing = true
		d.mu.Unlock()
	})
}

func (d *deployment) persist(ctx context.Context) error {
	if d.m.opt.Store == nil || d.builtin != nil {
		return nil
	}
	d.mu.RLock()
	spec, _ := json.Marshal(d.spec)
	rec := store.Deployment{Name: d.name, Spec: spec, Generation: int64(d.gen), Status: string(d.state),
		StatusChangedAt: d.stateSince, Deleting: d.deleting}
	d.mu.RUnlock()
	if err := d.m.opt.Store.PutDeployment(ctx, rec); err != nil {
		d.log.Error("could not persist the deployment", "err", err)
		return err
	}
	return nil
}

func (d *deployment) specSnapshot() Spec {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.spec
}

func (d *deployment) isDeleting() bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.deleting || d.closing
}

// status is the API snapshot.
func (d *deployment) status() Status {
	eps := map[string]routing.Endpoint{}
	for _, e := range d.pool.Snapshot() {
		eps[e.ID] = e
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	s := Status{Spec: d.spec.Clone(), Generation: d.gen, Status: d.state, StatusChangedAt: d.stateSince,
		Source: SourceAPI, ReplicasStatus: []ReplicaStatus{}}
	if d.builtin != nil {
		s.Source = SourceConfig
	}
	if d.state == Running || d.state == Degraded {
		s.Endpoint = "/d/" + d.name + "/v1"
	}
	reps := make([]*replica, 0, len(d.reps))
	for _, r := range d.reps {
		reps = append(reps, r)
	}
	sort.Slice(reps, func(i, j int) bool { return reps[i].id < reps[j].id })
	for _, r := range reps {
		rt := r.rt.Status()
		e := eps[r.id]
		rs := ReplicaStatus{ID: r.id, Status: r.state, StatusChangedAt: r.since, PID: rt.PID, Address: r.rt.Address(),
			Generation: r.gen, Draining: r.stopping, InFlight: e.InFlight, Requests: e.Requests, Restarts: rt.Restarts,
			LastError: rt.LastError}
		if !rt.NextStart.IsZero() {
			t := rt.NextStart
			rs.NextRestartAt = &t
		}
		s.ReplicasStatus = append(s.ReplicasStatus, rs)
	}
	return s
}
