package deploy

import (
	"fmt"
	"net/http"
	"time"

	"github.com/raygw/raygw/internal/engine/llamacpp"
	"github.com/raygw/raygw/internal/runtime"
)

// Sources of a deployment's spec.
const (
	SourceAPI    = "api"    // created through the control-plane API
	SourceConfig = "config" // the gateway's own model, built from the RAY_* settings
)

// Builtin is the gateway's own model: the deployment `raygw serve` builds
// from its RAY_* settings at start. It runs on the same machinery as any
// other deployment (runtime, health checks, restarts, routing, metrics) but
// is neither persisted nor changed through the API: its settings own it.
type Builtin struct {
	Spec Spec
	// Launch is the exact llama-server launch for a llama.cpp builtin, its
	// host and port included: the engine listens where the settings say.
	Launch *llamacpp.Launch
	// APIKey is the token sent to the engine (RAY_MODEL_API_KEY_ENV).
	APIKey string
	// Transport reaches the replica (nil: the manager's).
	Transport http.RoundTripper
	// OnReplica is told each replica state change, with the replica's
	// address (engine-up metrics, warm-up). It must not block.
	OnReplica func(state ReplicaState, address string)
}

// errBuiltin refuses API changes to the builtin deployment.
var errBuiltin = fmt.Errorf("%w: this deployment is the gateway's own model, defined by the RAY_MODEL_* and RAY_LLAMA_CPP_* settings; change them and restart raygw", ErrConflict)

// StartBuiltin registers and starts the gateway's own deployment. Its name
// must be free; a stored deployment of the same name is not restored.
func (m *Manager) StartBuiltin(b Builtin) (*Target, error) {
	s := b.Spec
	s.Defaults()
	if s.Name == "" || !dnsLabel.MatchString(s.Name) {
		return nil, fmt.Errorf("deploy: builtin deployment name %q is not a DNS label", s.Name)
	}
	if s.Health.StartTimeoutMS == 0 {
		s.Health.StartTimeoutMS = int((10 * time.Minute).Milliseconds())
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.deps[s.Name]; ok {
		return nil, fmt.Errorf("%w: %s", ErrExists, s.Name)
	}
	d := newDeployment(m, s, 1, &b)
	m.deps[s.Name] = d
	go d.run()
	m.log.Info("gateway model deployment", "name", s.Name, "model", s.ModelName, "class", s.ModelClass)
	return &Target{d: d}, nil
}

// Builtin reports whether the target is the gateway's own deployment.
func (t *Target) Builtin() bool { return t.d.builtin != nil }

// shadowed reports whether a stored deployment name is taken by the
// builtin; m.mu is held.
func (m *Manager) shadowed(name string) bool {
	d, ok := m.deps[name]
	return ok && d.builtin != nil
}

// apply pins a llama.cpp builtin's replica to the configured launch: the
// exact argv of the settings, on their host and port.
func (b *Builtin) apply(rs *runtime.ReplicaSpec) {
	if b.Launch == nil {
		return
	}
	l := *b.Launch
	rs.Host, rs.Port = l.Host, l.Port
	rs.Command = func(host string, port int) ([]string, []string) {
		l.Host, l.Port = host, port
		return l.Argv(), nil
	}
}
