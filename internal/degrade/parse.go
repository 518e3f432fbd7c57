package degrade

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Parser errors. A file that fails to parse makes its signal unavailable; it
// never counts as pressure.
var (
	// ErrMalformed: a kernel file did not have the expected shape.
	ErrMalformed = errors.New("malformed kernel file")
	// ErrMissingKey: a keyed file (cpu.stat, memory.stat) lacks the key.
	ErrMissingKey = errors.New("key not present")
	// ErrNoCgroupV2: /proc/self/cgroup has no cgroup v2 ("0::") entry.
	ErrNoCgroupV2 = errors.New("no cgroup v2 entry")
)

// PSI is one pressure-stall file's avg10 values, in percent (0-100).
type PSI struct {
	SomeAvg10 float64
	FullAvg10 float64
	HasFull   bool // kernels before 5.13 have no "full" line in cpu files
}

// parsePSI reads a /proc/pressure/* or <cgroup>/*.pressure file:
//
//	some avg10=0.00 avg60=0.00 avg300=0.00 total=0
//	full avg10=0.00 avg60=0.00 avg300=0.00 total=0
//
// The "some" line is required; "full" is optional.
func parsePSI(data []byte) (PSI, error) {
	var p PSI
	hasSome := false
	for line := range bytes.Lines(data) {
		fields := strings.Fields(string(line))
		if len(fields) == 0 {
			continue
		}
		kind := fields[0]
		if kind != "some" && kind != "full" {
			continue
		}
		v, err := psiAvg10(fields[1:])
		if err != nil {
			return PSI{}, fmt.Errorf("psi %s line: %w", kind, err)
		}
		if kind == "some" {
			p.SomeAvg10, hasSome = v, true
		} else {
			p.FullAvg10, p.HasFull = v, true
		}
	}
	if !hasSome {
		return PSI{}, fmt.Errorf("psi: no some line: %w", ErrMalformed)
	}
	return p, nil
}

func psiAvg10(fields []string) (float64, error) {
	for _, f := range fields {
		val, ok := strings.CutPrefix(f, "avg10=")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(val, 64)
		if err != nil || math.IsNaN(v) || v < 0 || v > 100 {
			return 0, fmt.Errorf("avg10=%.20q: %w", val, ErrMalformed)
		}
		return v, nil
	}
	return 0, fmt.Errorf("no avg10: %w", ErrMalformed)
}

// parseKeyed returns the value of key in a flat-keyed file such as cpu.stat
// or memory.stat ("key value" per line).
func parseKeyed(data []byte, key string) (uint64, error) {
	for line := range bytes.Lines(data) {
		k, v, ok := strings.Cut(strings.TrimSpace(string(line)), " ")
		if !ok || k != key {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", key, ErrMalformed)
		}
		return n, nil
	}
	return 0, fmt.Errorf("%s: %w", key, ErrMissingKey)
}

// CPUStat is the throttling part of cgroup v2 cpu.stat.
type CPUStat struct {
	Periods   uint64 // nr_periods
	Throttled uint64 // nr_throttled
}

// parseCPUStat reads nr_periods and nr_throttled. Both are absent when the
// cpu controller is not enabled for the group (ErrMissingKey).
func parseCPUStat(data []byte) (CPUStat, error) {
	p, err := parseKeyed(data, "nr_periods")
	if err != nil {
		return CPUStat{}, err
	}
	t, err := parseKeyed(data, "nr_throttled")
	if err != nil {
		return CPUStat{}, err
	}
	if t > p {
		return CPUStat{}, fmt.Errorf("nr_throttled %d > nr_periods %d: %w", t, p, ErrMalformed)
	}
	return CPUStat{Periods: p, Throttled: t}, nil
}

// parseMemoryMax reads memory.max: a byte count, or "max" for no limit.
func parseMemoryMax(data []byte) (limit uint64, unlimited bool, err error) {
	s := strings.TrimSpace(string(data))
	if s == "max" {
		return 0, true, nil
	}
	n, err := parseBytes(data)
	return n, false, err
}

// parseBytes reads a single unsigned integer (memory.current).
func parseBytes(data []byte) (uint64, error) {
	s := strings.TrimSpace(string(data))
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%.20q: %w", s, ErrMalformed)
	}
	return n, nil
}

// parseProcCgroup returns the cgroup v2 path from /proc/self/cgroup (the
// "0::/path" line), cleaned and relative ("" for the root).
func parseProcCgroup(data []byte) (string, error) {
	for line := range bytes.Lines(data) {
		rest, ok := strings.CutPrefix(strings.TrimRight(string(line), "\r\n"), "0::")
		if !ok {
			continue
		}
		rest = strings.TrimSuffix(rest, " (deleted)")
		// fs.FS paths must be valid UTF-8; a group we cannot name is no group.
		if !strings.HasPrefix(rest, "/") || strings.ContainsRune(rest, 0) || !utf8.ValidString(rest) {
			return "", fmt.Errorf("cgroup path %.40q: %w", rest, ErrMalformed)
		}
		for _, seg := range strings.Split(rest, "/") {
			if seg == ".." {
				return "", fmt.Errorf("cgroup path %.40q: %w", rest, ErrMalformed)
			}
		}
		return strings.TrimPrefix(path.Clean(rest), "/"), nil
	}
	return "", ErrNoCgroupV2
}

// parseVmRSS returns VmRSS from /proc/self/status, in bytes.
func parseVmRSS(data []byte) (uint64, error) {
	for line := range bytes.Lines(data) {
		rest, ok := strings.CutPrefix(string(line), "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("VmRSS %.30q: %w", rest, ErrMalformed)
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil || kb > math.MaxUint64/1024 {
			return 0, fmt.Errorf("VmRSS %.30q: %w", rest, ErrMalformed)
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("VmRSS: %w", ErrMissingKey)
}
