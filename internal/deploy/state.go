package deploy

import (
	"time"

	"github.com/raygw/raygw/internal/runtime"
)

// State is a deployment's state.
type State string

// Deployment states.
const (
	Deploying State = "deploying" // replicas starting, none serving yet (or fewer than wanted, none failed)
	Running   State = "running"   // the wanted number of replicas are healthy
	Degraded  State = "degraded"  // some replicas unhealthy, still serving
	Unhealthy State = "unhealthy" // no healthy replica: the endpoint answers 503
	Deleting  State = "deleting"  // being torn down
)

// ReplicaState is a replica's state.
type ReplicaState string

// Replica states.
const (
	ReplicaStarting  ReplicaState = "starting"  // first start, loading the model
	ReplicaHealthy   ReplicaState = "healthy"   // answering health checks
	ReplicaUnhealthy ReplicaState = "unhealthy" // failed, crashed or hung; being restarted
)

// replicaStateOf maps the runtime's view: a replica that is starting again
// after a failure is unhealthy (being restarted), not merely starting.
func replicaStateOf(st runtime.Status) ReplicaState {
	switch st.State {
	case runtime.Healthy:
		return ReplicaHealthy
	case runtime.Starting:
		if st.Restarts == 0 {
			return ReplicaStarting
		}
	}
	return ReplicaUnhealthy
}

// Status is what the API shows for one deployment: its spec and state.
type Status struct {
	Spec
	Generation      int       `json:"generation"`
	Status          State     `json:"status"`
	StatusChangedAt time.Time `json:"status_changed_at"`
	Endpoint        string    `json:"endpoint"`
	// Source says who owns the spec: "api" or "config" (the gateway's
	// own model, changed only through its RAY_* settings).
	Source         string          `json:"source"`
	ReplicasStatus []ReplicaStatus `json:"replicas_status"`
}

// ReplicaStatus is one replica in a Status.
type ReplicaStatus struct {
	ID              string       `json:"id"`
	Status          ReplicaState `json:"status"`
	StatusChangedAt time.Time    `json:"status_changed_at"`
	PID             int          `json:"pid,omitempty"`
	Address         string       `json:"address"`
	Generation      int          `json:"generation"`
	Draining        bool         `json:"draining,omitempty"`
	InFlight        int          `json:"in_flight"`
	Requests        int64        `json:"requests"`
	Restarts        int          `json:"restarts"`
	LastError       string       `json:"last_error,omitempty"`
	NextRestartAt   *time.Time   `json:"next_restart_at,omitempty"`
}
