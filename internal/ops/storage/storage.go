// Package storage owns the storage preflight: which host paths raygw needs
// room on, their filesystems (deduplicated), and whether each keeps
// RAY_DEPLOY_MIN_FREE_STORAGE_MIB of space and enough free inodes.
package storage

import (
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/raygw/raygw/internal/config"
	"github.com/raygw/raygw/internal/ops/hostfs"
)

// MinFreeInodes is the free-inode floor of every checked filesystem.
const MinFreeInodes = 4096

// ErrShortfall means at least one filesystem lacks headroom.
var ErrShortfall = errors.New("storage shortfall")

// Target is one path raygw needs room on.
type Target struct {
	Label string // what it is, e.g. "RAY_MODEL_PATH"
	Path  string // host path (absolute)
}

// Targets lists the paths of the preflight for c. Relative source paths
// resolve from workDir (a host path).
func Targets(c *config.Config, workDir string) []Target {
	ts := []Target{
		{"root filesystem", "/"},
		{"APT cache", "/var/cache/apt"},
		{"APT state", "/var/lib/apt"},
		{"raygw install dir", path.Dir(c.Deploy.GatewayRuntimeBinary)},
		{"Ray state", "/var/lib/ray"},
		{"RAY_STATE_DIR", c.StateDir},
		{"system logs", "/var/log"},
		{"temporary files", "/tmp"},
		{"temporary files", "/var/tmp"},
	}
	for _, o := range []struct{ label, p string }{
		{"RAY_MODEL_PATH", c.Model.Path},
		{"RAY_LLAMA_CPP_MODEL_PATH", c.LlamaCpp.ModelPath},
		{"RAY_LLAMA_CPP_BINARY_PATH", c.LlamaCpp.BinaryPath},
		{"RAY_ASYNC_QUEUE_STORAGE_DIR", c.AsyncQueue.StorageDir},
		{"RAY_LLAMA_CPP_BINARY_SOURCE_PATH", c.LlamaCpp.BinarySourcePath},
		{"RAY_MODEL_SOURCE_PATH", c.Model.SourcePath},
	} {
		if o.p == "" {
			continue
		}
		p := o.p
		if !filepath.IsAbs(p) {
			p = filepath.Join(workDir, p)
		}
		ts = append(ts, Target{o.label, filepath.Clean(p)})
	}
	return ts
}

// Volume is one filesystem and every target on it.
type Volume struct {
	Measured string   // the existing path that was measured
	Targets  []string // "label path" of each target on it
	Usage    hostfs.Usage
	Problem  string // empty when the headroom is enough
}

// Report is the preflight result.
type Report struct {
	MinFreeMiB int
	Volumes    []Volume
}

// Check measures every target's filesystem against minFreeMiB.
func Check(h *hostfs.Host, targets []Target, minFreeMiB int) (Report, error) {
	r := Report{MinFreeMiB: minFreeMiB}
	byDev := map[string]int{}
	for _, t := range targets {
		u, measured, err := h.Usage(t.Path)
		if err != nil {
			return r, fmt.Errorf("%s (%s): %w", t.Label, t.Path, err)
		}
		key := fmt.Sprint(u.Device)
		if u.Device == 0 {
			key = "path:" + measured
		}
		name := t.Label + " " + t.Path
		if i, ok := byDev[key]; ok {
			r.Volumes[i].Targets = appendUnique(r.Volumes[i].Targets, name)
			continue
		}
		byDev[key] = len(r.Volumes)
		r.Volumes = append(r.Volumes, Volume{Measured: measured, Targets: []string{name}, Usage: u})
	}
	var short []string
	for i := range r.Volumes {
		v := &r.Volumes[i]
		v.Problem = Headroom(v.Usage, minFreeMiB)
		if v.Problem != "" {
			short = append(short, fmt.Sprintf("%s (for %s): %s", v.Measured, strings.Join(v.Targets, ", "), v.Problem))
		}
	}
	if len(short) > 0 {
		return r, fmt.Errorf("%w: %s", ErrShortfall, strings.Join(short, "; "))
	}
	return r, nil
}

// Headroom describes what a filesystem lacks, or returns "".
func Headroom(u hostfs.Usage, minFreeMiB int) string {
	var p []string
	if u.AvailMiB() < uint64(minFreeMiB) {
		p = append(p, fmt.Sprintf("%d MiB free, need %d MiB (RAY_DEPLOY_MIN_FREE_STORAGE_MIB)", u.AvailMiB(), minFreeMiB))
	}
	if u.Inodes > 0 && u.FreeInodes < MinFreeInodes {
		p = append(p, fmt.Sprintf("%d inodes free, need %d", u.FreeInodes, MinFreeInodes))
	}
	return strings.Join(p, "; ")
}

func appendUnique(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

// Write prints the report, one filesystem per block.
func (r Report) Write(w io.Writer) {
	vols := append([]Volume{}, r.Volumes...)
	sort.SliceStable(vols, func(i, j int) bool { return vols[i].Problem != "" && vols[j].Problem == "" })
	for _, v := range vols {
		status := "ok  "
		if v.Problem != "" {
			status = "fail"
		}
		fmt.Fprintf(w, "%s  %s  %d MiB free of %d MiB, %d inodes free (need %d MiB)\n", status, v.Measured,
			v.Usage.AvailMiB(), v.Usage.TotalBytes>>20, v.Usage.FreeInodes, r.MinFreeMiB)
		for _, t := range v.Targets {
			fmt.Fprintf(w, "        %s\n", t)
		}
		if v.Problem != "" {
			fmt.Fprintf(w, "        problem: %s\n", v.Problem)
		}
	}
}
