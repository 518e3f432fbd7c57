// Package memplan owns the memory split between the two systemd units: how
// the deploy memory target becomes MemoryMax, MemoryLow and MemoryMin for the
// gateway and for llama-server.
//
// The rule, for a target of T MiB:
//
//	OS reserve      R = max(512, T/8)           left outside both units
//	gateway  Max    G = RSS + RSS/4             RSS = RAY_DEGRADATION_MEMORY_RSS_THRESHOLD_MIB, at least 256
//	gateway  Low      G/2,  Min G/4
//	llama    Max    L = T - R - G               must be at least MinLlamaMiB
//	llama    Low      L*3/4, Min L/2
//
// The gateway degrades at RSS, a quarter below its hard limit, so it sheds
// work before the kernel kills it. The floors (Min) of both units always sum
// to less than T - R, so the kernel can honour them.
package memplan

import (
	"errors"
	"fmt"

	"github.com/raygw/raygw/internal/config"
)

// MinLlamaMiB is the smallest llama-server MemoryMax the plan accepts.
const MinLlamaMiB = 1024

// ErrTooSmall means the memory target cannot hold the cgroup floors.
var ErrTooSmall = errors.New("memory target too small for the systemd cgroup floors")

// Limits are one unit's cgroup memory settings in MiB.
type Limits struct {
	MaxMiB int
	LowMiB int
	MinMiB int
}

// Plan is the resolved split.
type Plan struct {
	TotalMiB     int
	Source       string // which setting chose TotalMiB
	OSReserveMiB int
	Gateway      Limits
	Llama        Limits
}

// Target resolves the memory target: override (a --memory-mib flag) when
// positive, else RAY_DEPLOY_MEMORY_MIB, else RAY_MODEL_MEMORY_CLASS_MIB.
func Target(c *config.Config, override int) (int, string) {
	switch {
	case override > 0:
		return override, "--memory-mib"
	case c.Deploy.MemoryMiB > 0:
		return c.Deploy.MemoryMiB, "RAY_DEPLOY_MEMORY_MIB"
	default:
		return c.Model.MemoryClassMiB, "RAY_MODEL_MEMORY_CLASS_MIB"
	}
}

// For computes the plan of a configuration.
func For(c *config.Config, override int) (Plan, error) {
	total, src := Target(c, override)
	return Split(total, src, c.Degradation.MemoryRSSThresholdMiB)
}

// Split applies the rule to a target of total MiB and a gateway RSS threshold.
func Split(total int, source string, rssMiB int) (Plan, error) {
	rss := max(rssMiB, 256)
	p := Plan{TotalMiB: total, Source: source, OSReserveMiB: max(512, total/8)}
	g := rss + rss/4
	p.Gateway = Limits{MaxMiB: g, LowMiB: g / 2, MinMiB: g / 4}
	l := total - p.OSReserveMiB - g
	if l < MinLlamaMiB {
		return p, fmt.Errorf("%s=%d MiB leaves %d MiB for llama-server after the %d MiB OS reserve and the %d MiB gateway limit (need at least %d): %w",
			source, total, l, p.OSReserveMiB, g, MinLlamaMiB, ErrTooSmall)
	}
	p.Llama = Limits{MaxMiB: l, LowMiB: l * 3 / 4, MinMiB: l / 2}
	return p, nil
}
