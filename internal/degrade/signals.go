package degrade

import (
	"io"
	"io/fs"
	"path"
	"time"
)

// Signal is one pressure reading. OK is false when the machine does not
// expose it (no cgroup v2, no PSI, no limit) or its file could not be parsed;
// an unavailable signal never counts as pressure.
type Signal struct {
	Value float64
	OK    bool
}

func ok(v float64) Signal { return Signal{Value: v, OK: true} }

// Readings is one sample of every disk-backed signal. The queue depth is not
// here: it is in memory and read live by the Policy.
type Readings struct {
	At        time.Time
	CgroupDir string // cgroup v2 directory inside the root fs ("" when none)

	// MemoryRatio is working set / memory.max of the tightest limited level
	// of the cgroup and its ancestors (working set = memory.current minus
	// inactive_file, the reclaimable page cache, as the kubelet counts it).
	MemoryRatio           Signal
	MemoryLimitBytes      uint64 // memory.max of that level (0: none)
	MemoryWorkingSetBytes uint64

	CPUThrottledRatio Signal // nr_throttled/nr_periods since the previous sample

	MemoryPSISome, MemoryPSIFull Signal // avg10, percent
	CPUPSISome, CPUPSIFull       Signal // avg10, percent
	MemoryPSISource              string // "cgroup", "system" or ""
	CPUPSISource                 string

	RSSMiB Signal // the gateway's own VmRSS
}

// Source fills its own fields of a Readings. Sources are called from one
// goroutine at a time (the Sampler's), so they may keep state between calls.
type Source interface {
	Sample(r *Readings)
}

// Compile-time guards.
var (
	_ Source = (*memorySource)(nil)
	_ Source = (*throttleSource)(nil)
	_ Source = (*pressureSource)(nil)
	_ Source = (*rssSource)(nil)
)

const maxKernelFile = 64 << 10 // kernel files we read are a few hundred bytes

// readSmall reads at most maxKernelFile bytes of name.
func readSmall(fsys fs.FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxKernelFile))
}

// cgroupBases are where a cgroup v2 hierarchy is mounted: unified mode, then
// the hybrid layout (v1 controllers plus a v2 tree at unified/).
var cgroupBases = []string{"sys/fs/cgroup", "sys/fs/cgroup/unified"}

// FindCgroup returns the process's cgroup v2 directory inside fsys (a root
// file system, e.g. os.DirFS("/")) and the hierarchy's mount directory. ok is
// false without cgroup v2. When the path from /proc/self/cgroup does not exist
// under the mount (a container without a cgroup namespace sees the host's
// path but has its own group mounted at the top), the mount itself is used.
func FindCgroup(fsys fs.FS) (dir, base string, ok bool) {
	for _, b := range cgroupBases {
		if _, err := fs.Stat(fsys, path.Join(b, "cgroup.controllers")); err == nil {
			base = b
			break
		}
	}
	if base == "" {
		return "", "", false
	}
	data, err := readSmall(fsys, "proc/self/cgroup")
	if err != nil {
		return "", "", false
	}
	rel, err := parseProcCgroup(data)
	if err != nil {
		return "", "", false
	}
	dir = path.Join(base, rel)
	if st, err := fs.Stat(fsys, dir); err != nil || !st.IsDir() {
		dir = base
	}
	return dir, base, true
}

// Discover builds every Source for the root file system fsys (os.DirFS("/")
// in production, a fabricated tree in tests) and reports the cgroup
// directory it found ("" when none).
func Discover(fsys fs.FS) (sources []Source, cgroupDir string) {
	dir, base, found := FindCgroup(fsys)
	if found {
		sources = append(sources,
			&memorySource{fsys: fsys, dir: dir, base: base},
			&throttleSource{fsys: fsys, dir: dir})
		cgroupDir = dir
	}
	sources = append(sources,
		&pressureSource{fsys: fsys, cgroupDir: dir, resource: "memory"},
		&pressureSource{fsys: fsys, cgroupDir: dir, resource: "cpu"},
		&rssSource{fsys: fsys})
	return sources, cgroupDir
}

// memorySource reads memory.current / memory.max for the cgroup and each
// ancestor up to the mount, keeping the highest ratio: any level near its
// limit means reclaim and, past it, the OOM killer.
type memorySource struct {
	fsys      fs.FS
	dir, base string
}

const maxCgroupDepth = 32

func (s *memorySource) Sample(r *Readings) {
	r.CgroupDir = s.dir
	dir := s.dir
	for range maxCgroupDepth {
		s.level(dir, r)
		if dir == s.base || dir == "." || dir == "" {
			break
		}
		dir = path.Dir(dir)
	}
}

func (s *memorySource) level(dir string, r *Readings) {
	data, err := readSmall(s.fsys, path.Join(dir, "memory.max"))
	if err != nil {
		return
	}
	limit, unlimited, err := parseMemoryMax(data)
	if err != nil || unlimited || limit == 0 {
		return
	}
	data, err = readSmall(s.fsys, path.Join(dir, "memory.current"))
	if err != nil {
		return
	}
	cur, err := parseBytes(data)
	if err != nil {
		return
	}
	if data, err := readSmall(s.fsys, path.Join(dir, "memory.stat")); err == nil {
		if inactive, err := parseKeyed(data, "inactive_file"); err == nil {
			cur -= min(inactive, cur)
		}
	}
	ratio := float64(cur) / float64(limit)
	if !r.MemoryRatio.OK || ratio > r.MemoryRatio.Value {
		r.MemoryRatio = ok(ratio)
		r.MemoryLimitBytes, r.MemoryWorkingSetBytes = limit, cur
	}
}

// throttleSource turns the cumulative cpu.stat counters into the throttled
// share of CFS periods between two samples. The first sample, a counter
// reset and a missing cpu controller are unavailable.
type throttleSource struct {
	fsys fs.FS
	dir  string
	prev CPUStat
	have bool
}

func (s *throttleSource) Sample(r *Readings) {
	data, err := readSmall(s.fsys, path.Join(s.dir, "cpu.stat"))
	if err != nil {
		s.have = false
		return
	}
	cur, err := parseCPUStat(data)
	if err != nil {
		s.have = false
		return
	}
	prev, had := s.prev, s.have
	s.prev, s.have = cur, true
	if !had || cur.Periods < prev.Periods || cur.Throttled < prev.Throttled {
		return
	}
	dp, dt := cur.Periods-prev.Periods, cur.Throttled-prev.Throttled
	if dp == 0 {
		r.CPUThrottledRatio = ok(0) // no quota, or no runnable work: no throttling
		return
	}
	r.CPUThrottledRatio = ok(min(float64(dt)/float64(dp), 1))
}

// pressureSource reads PSI for one resource, preferring the cgroup's own
// <resource>.pressure (stalls of our tasks) over /proc/pressure/<resource>
// (the whole machine, or inside a container the whole host).
type pressureSource struct {
	fsys      fs.FS
	cgroupDir string // "" without cgroup v2
	resource  string // "memory" or "cpu"
}

func (s *pressureSource) Sample(r *Readings) {
	p, src, found := s.read()
	if !found {
		return
	}
	full := Signal{}
	if p.HasFull {
		full = ok(p.FullAvg10)
	}
	if s.resource == "memory" {
		r.MemoryPSISome, r.MemoryPSIFull, r.MemoryPSISource = ok(p.SomeAvg10), full, src
	} else {
		r.CPUPSISome, r.CPUPSIFull, r.CPUPSISource = ok(p.SomeAvg10), full, src
	}
}

func (s *pressureSource) read() (PSI, string, bool) {
	if s.cgroupDir != "" {
		if data, err := readSmall(s.fsys, path.Join(s.cgroupDir, s.resource+".pressure")); err == nil {
			if p, err := parsePSI(data); err == nil {
				return p, "cgroup", true
			}
		}
	}
	if data, err := readSmall(s.fsys, path.Join("proc/pressure", s.resource)); err == nil {
		if p, err := parsePSI(data); err == nil {
			return p, "system", true
		}
	}
	return PSI{}, "", false
}

// rssSource reads the gateway's own resident set size.
type rssSource struct{ fsys fs.FS }

func (s *rssSource) Sample(r *Readings) {
	data, err := readSmall(s.fsys, "proc/self/status")
	if err != nil {
		return
	}
	b, err := parseVmRSS(data)
	if err != nil {
		return
	}
	r.RSSMiB = ok(float64(b) / (1 << 20))
}
