// Package runtime owns the small contract between the deployments reconciler
// and whatever runs replicas: the reconciler asks a Runtime to start a
// replica from a ReplicaSpec and later to stop it; the runtime keeps the
// replica alive (restarts with backoff) and reports its state. The `local`
// runtime runs child processes on this machine; a cluster runtime can sit
// behind the same interface.
package runtime

import (
	"context"
	"time"
)

// State is a replica's lifecycle state as the runtime sees it.
type State string

// Replica states reported by runtimes.
const (
	Starting  State = "starting"
	Healthy   State = "healthy"
	Unhealthy State = "unhealthy"
	Stopped   State = "stopped"
)

// Command renders the replica's process for the address it will listen on.
type Command func(host string, port int) (argv, env []string)

// ReplicaSpec is everything a runtime needs to start one replica.
type ReplicaSpec struct {
	ID         string
	Deployment string
	// Command renders argv/env for a process replica; nil with ExternalURL.
	Command Command
	// ExternalURL is an already-running OpenAI-compatible endpoint (model
	// class openai): nothing is started, it is only health-checked.
	ExternalURL string
	// Host and Port, when set, are where a process replica must listen
	// (a replica whose address others rely on); zero: the runtime picks a
	// free loopback port.
	Host string
	Port int
	// HealthPath is probed with GET; 200 means healthy ("/health").
	HealthPath    string
	StartTimeout  time.Duration
	ProbeInterval time.Duration
	ProbeTimeout  time.Duration
	FailureLimit  int
	BackoffBase   time.Duration
	BackoffMax    time.Duration
	StopTimeout   time.Duration
	// CPUs pins the process to these CPU numbers (empty: no pinning).
	CPUs []int
	// GPUs sets CUDA_VISIBLE_DEVICES (empty: not set).
	GPUs []int
}

// Status is a snapshot of one replica.
type Status struct {
	State     State
	PID       int
	Address   string // base URL, e.g. http://127.0.0.1:41234
	Restarts  int
	Since     time.Time
	LastError string
	NextStart time.Time
}

// Replica is one running replica.
type Replica interface {
	ID() string
	// Address is the replica's base URL.
	Address() string
	Status() Status
	// Stop stops the replica and waits until it is gone or ctx ends.
	Stop(ctx context.Context) error
}

// Runtime starts replicas. onChange is called (from the runtime's own
// goroutine) each time the replica's state changes.
type Runtime interface {
	Name() string
	Start(ctx context.Context, spec ReplicaSpec, onChange func(Status)) (Replica, error)
}
