// Package autotune owns `raygw bench autotune`: the search space over the
// scheduler (RAY_SCHEDULER_*) and, in full mode, llama-server launch-profile
// (RAY_LLAMA_CPP_*) settings, the constraints that prune it, the ordering of
// candidates by distance from the current configuration, the runner that
// measures each candidate on a freshly started `raygw serve` (managed mode, so
// the gateway launches llama-server with exactly the rendered launch profile),
// the scoring that picks a winner, and the report.
//
// Generation and scoring are pure functions (Space.Generate, Rank); only
// Runner touches processes. See design.md for the search and its trade-offs.
package autotune

import (
	"errors"
	"fmt"
	"strings"

	"github.com/raygw/raygw/internal/bench/report"
)

// ErrInvalid marks invalid autotune input: an unknown mode or objective, or a
// base configuration the search cannot read.
var ErrInvalid = errors.New("invalid autotune input")

// ErrEnumeration means the search space was too large to enumerate up to the
// requested number of candidates.
var ErrEnumeration = errors.New("autotune search space too large")

// Mode says which settings are searched.
type Mode string

// Modes.
const (
	// ModeScheduler searches the gateway's admission scheduler only; the
	// launch profile stays the current one.
	ModeScheduler Mode = "scheduler"
	// ModeFull also searches llama-server launch-profile settings.
	ModeFull Mode = "full"
)

// ParseMode validates a mode name.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeScheduler, ModeFull:
		return m, nil
	}
	return "", fmt.Errorf("%w: mode %q (expected full or scheduler)", ErrInvalid, s)
}

// Objective is the figure a candidate is ranked by.
type Objective string

// Objectives.
const (
	// Throughput is completion tokens per second over the run's wall time
	// (higher is better).
	Throughput Objective = "throughput"
	// TTFTP95 is the 95th percentile time to first token (lower is better).
	TTFTP95 Objective = "ttft-p95"
	// LatencyP95 is the 95th percentile end-to-end latency (lower is better).
	LatencyP95 Objective = "latency-p95"
)

// Objectives lists the objective names.
func Objectives() []string { return []string{string(Throughput), string(TTFTP95), string(LatencyP95)} }

// ParseObjective validates an objective name.
func ParseObjective(s string) (Objective, error) {
	switch o := Objective(s); o {
	case Throughput, TTFTP95, LatencyP95:
		return o, nil
	}
	return "", fmt.Errorf("%w: objective %q (expected one of %s)", ErrInvalid, s, strings.Join(Objectives(), ", "))
}

// Value is the objective's figure in a summary.
func (o Objective) Value(s report.Summary) float64 {
	switch o {
	case TTFTP95:
		return s.TTFTMS.P95
	case LatencyP95:
		return s.E2EMS.P95
	}
	return s.ThroughputTokensPerSec
}

// HigherIsBetter reports the objective's direction.
func (o Objective) HigherIsBetter() bool { return o == Throughput || o == "" }

// Unit is how the objective's figure is printed.
func (o Objective) Unit() string {
	if o.HigherIsBetter() {
		return "tok/s"
	}
	return "ms"
}
