package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/raygw/raygw/internal/engine/openaicompat"
	"github.com/raygw/raygw/internal/runtime"
	"github.com/raygw/raygw/internal/store"
)

// Sentinel errors of the control plane.
var (
	ErrNotFound = errors.New("deployment not found")
	ErrExists   = errors.New("deployment already exists")
	ErrConflict = errors.New("conflicting deployment")
	errBadSpec  = errors.New("invalid spec")
)

// Store persists deployments; *store.DB implements it.
type Store interface {
	PutDeployment(ctx context.Context, d store.Deployment) error
	DeleteDeployment(ctx context.Context, name string) error
	ListDeployments(ctx context.Context) ([]store.Deployment, error)
}

var _ Store = (*store.DB)(nil)

// Options configure a Manager.
type Options struct {
	Runtimes map[string]runtime.Runtime // by cluster name; "local" at least
	Store    Store                      // nil keeps deployments in memory only
	Defaults Defaults
	Logger   *slog.Logger
	Now      func() time.Time
	// Registerer receives the per-deployment Prometheus metrics (nil: none).
	Registerer prometheus.Registerer
	// Transport reaches replicas (default openaicompat.NewTransport()).
	Transport http.RoundTripper
	// ReconcileEvery is the owner loop's periodic pass (default 1 s).
	ReconcileEvery time.Duration
	// StopTimeout bounds one replica's stop after its drain (default 15 s).
	StopTimeout time.Duration
}

// Manager is the control plane: it owns every deployment.
type Manager struct {
	opt     Options
	log     *slog.Logger
	metrics *promMetrics

	mu   sync.RWMutex
	deps map[string]*deployment
}

// NewManager returns a manager; call Restore to load persisted deployments.
func NewManager(opt Options) (*Manager, error) {
	if len(opt.Runtimes) == 0 {
		return nil, errors.New("deploy: no runtime configured")
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Transport == nil {
		opt.Transport = openaicompat.NewTransport()
	}
	if opt.ReconcileEvery <= 0 {
		opt.ReconcileEvery = time.Second
	}
	if opt.StopTimeout <= 0 {
		opt.StopTimeout = 15 * time.Second
	}
	m := &Manager{opt: opt, log: opt.Logger.With("component", "deploy"), deps: map[string]*deployment{}}
	pm, err := newPromMetrics(opt.Registerer, m)
	if err != nil {
		return nil, err
	}
	m.metrics = pm
	return m, nil
}

// Clusters lists the runtime names, sorted.
func (m *Manager) Clusters() []string {
	out := make([]string, 0, len(m.opt.Runtimes))
	for k := range m.opt.Runtimes {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Restore starts every deployment found in the store (after a restart).
func (m *Manager) Restore(ctx context.Context) error {
	if m.opt.Store == nil {
		return nil
	}
	recs, err := m.opt.Store.ListDeployments(ctx)
	if err != nil {
		return err
	}
	for _, r := range recs {
		var s Spec
		if err := json.Unmarshal(r.Spec, &s); err != nil {
			m.log.Error("stored deployment has an unreadable spec; skipped", "name", r.Name, "err", err)
			continue
		}
		if r.Deleting {
			// Its replicas died with the previous process; finish the delete.
			_ = m.opt.Store.DeleteDeployment(ctx, r.Name)
			continue
		}
		m.mu.Lock()
		if m.shadowed(r.Name) {
			m.mu.Unlock()
			m.log.Error("a stored deployment has the name of the gateway's own model; not restored (recreate it under another name)",
				"name", r.Name)
			continue
		}
		m.start(s, int(r.Generation))
		m.mu.Unlock()
		m.log.Info("deployment restored", "name", s.Name, "generation", r.Generation, "replicas", s.Replicas)
	}
	return nil
}

// Create validates and starts a new deployment.
func (m *Manager) Create(ctx context.Context, s Spec) (Status, error) {
	s.Defaults()
	if err := s.Validate(m.Clusters()); err != nil {
		return Status{}, err
	}
	m.mu.Lock()
	if _, ok := m.deps[s.Name]; ok {
		m.mu.Unlock()
		return Status{}, fmt.Errorf("%w: %s", ErrExists, s.Name)
	}
	if other := m.servingModel(s.ModelName); other != "" {
		m.mu.Unlock()
		return Status{}, ValidationError{{Field: "model_name", Message: fmt.Sprintf("%q is already served by deployment %s", s.ModelName, other)}}
	}
	d := m.start(s, 1)
	m.mu.Unlock()
	if err := d.persist(ctx); err != nil {
		return Status{}, err
	}
	m.log.Info("deployment created", "name", s.Name, "model", s.ModelName, "class", s.ModelClass, "replicas", s.Replicas)
	return d.status(), nil
}

// start registers and launches the owner goroutine; m.mu is held.
func (m *Manager) start(s Spec, gen int) *deployment {
	d := newDeployment(m, s, gen, nil)
	m.deps[s.Name] = d
	go d.run()
	return d
}

// servingModel names the live deployment serving model ("" when none); m.mu is held.
func (m *Manager) servingModel(model string) string {
	for name, d := range m.deps {
		if !d.isDeleting() && d.specSnapshot().ModelName == model {
			return name
		}
	}
	return ""
}

// Update applies a JSON merge patch (top-level keys) to a deployment's spec.
// Changing only replicas scales; any other change rolls a new generation.
func (m *Manager) Update(ctx context.Context, name string, patch []byte) (Status, error) {
	d, err := m.get(name)
	if err != nil {
		return Status{}, err
	}
	if d.builtin != nil {
		return Status{}, errBuiltin
	}
	cur := d.specSnapshot()
	next, err := applyPatch(cur, patch)
	if err != nil {
		return Status{}, err
	}
	if err := next.Validate(m.Clusters()); err != nil {
		return Status{}, err
	}
	if next.ModelName != cur.ModelName {
		m.mu.RLock()
		other := m.servingModel(next.ModelName)
		m.mu.RUnlock()
		if other != "" && other != name {
			return Status{}, ValidationError{{Field: "model_name", Message: fmt.Sprintf("%q is already served by deployment %s", next.ModelName, other)}}
		}
	}
	if err := d.update(ctx, next); err != nil {
		return Status{}, err
	}
	return d.status(), nil
}

// applyPatch replaces the top-level fields present in patch; name, cluster
// and model_class cannot change.
func applyPatch(cur Spec, patch []byte) (Spec, error) {
	var p map[string]json.RawMessage
	if err := json.Unmarshal(patch, &p); err != nil {
		return cur, ValidationError{{Field: "body", Message: "must be a JSON object: " + err.Error()}}
	}
	for _, k := range []string{"name", "cluster", "model_class"} {
		if raw, ok := p[k]; ok {
			var v string
			_ = json.Unmarshal(raw, &v)
			if (k == "name" && v != cur.Name) || (k == "cluster" && v != cur.Cluster) || (k == "model_class" && v != cur.ModelClass) {
				return cur, ValidationError{{Field: k, Message: "cannot be changed; create a new deployment"}}
			}
		}
	}
	base, _ := json.Marshal(cur)
	var merged map[string]json.RawMessage
	_ = json.Unmarshal(base, &merged)
	for k, v := range p {
		merged[k] = v
	}
	b, _ := json.Marshal(merged)
	return DecodeSpec(b)
}

// Delete stops routing to the deployment, drains and stops its replicas,
// then forgets it. It returns at once with status deleting.
func (m *Manager) Delete(ctx context.Context, name string) (Status, error) {
	d, err := m.get(name)
	if err != nil {
		return Status{}, err
	}
	if d.builtin != nil {
		return Status{}, errBuiltin
	}
	d.delete()
	return d.status(), nil
}

// Get returns one deployment's status.
func (m *Manager) Get(name string) (Status, error) {
	d, err := m.get(name)
	if err != nil {
		return Status{}, err
	}
	return d.status(), nil
}

// List returns every deployment's status by name.
func (m *Manager) List() []Status {
	m.mu.RLock()
	ds := make([]*deployment, 0, len(m.deps))
	for _, d := range m.deps {
		ds = append(ds, d)
	}
	m.mu.RUnlock()
	out := make([]Status, 0, len(ds))
	for _, d := range ds {
		out = append(out, d.status())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Done returns a channel closed when the deployment name is gone (deleted
// or shut down); nil when it does not exist.
func (m *Manager) Done(name string) <-chan struct{} {
	d, err := m.get(name)
	if err != nil {
		return nil
	}
	return d.done
}

func (m *Manager) get(name string) (*deployment, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	d, ok := m.deps[name]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	return d, nil
}

func (m *Manager) forget(d *deployment) {
	m.mu.Lock()
	if m.deps[d.name] == d {
		delete(m.deps, d.name)
	}
	m.mu.Unlock()
	m.metrics.forget(d.name)
}

// Close stops every replica (draining first) without deleting any
// deployment from the store, and waits until they are gone or ctx ends.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.RLock()
	ds := make([]*deployment, 0, len(m.deps))
	for _, d := range m.deps {
		ds = append(ds, d)
	}
	m.mu.RUnlock()
	for _, d := range ds {
		d.shutdown()
	}
	for _, d := range ds {
		select {
		case <-d.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
