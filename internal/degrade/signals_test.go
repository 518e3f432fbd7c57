package degrade

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

// tree fabricates a root file system: path (relative) -> content.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func write(t *testing.T, root, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(name)), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func sample(srcs []Source) Readings {
	var r Readings
	for _, s := range srcs {
		s.Sample(&r)
	}
	return r
}

const (
	svc    = "sys/fs/cgroup/system.slice/raygw.service/"
	psi    = "some avg10=12.50 avg60=0.00 avg300=0.00 total=1\nfull avg10=1.25 avg60=0.00 avg300=0.00 total=1\n"
	sysPSI = "some avg10=3.00 avg60=0.00 avg300=0.00 total=1\nfull avg10=0.50 avg60=0.00 avg300=0.00 total=1\n"
)

// unified is a cgroup v2 machine with every file present.
func unified() map[string]string {
	return map[string]string{
		"proc/self/cgroup":                 "0::/system.slice/raygw.service\n",
		"proc/self/status":                 "Name:\traygw\nVmRSS:\t  524288 kB\n",
		"proc/pressure/memory":             sysPSI,
		"proc/pressure/cpu":                sysPSI,
		"sys/fs/cgroup/cgroup.controllers": "cpu memory\n",
		svc + "memory.max":                 "1000\n",
		svc + "memory.current":             "950\n",
		svc + "memory.stat":                "anon 800\nfile 150\ninactive_file 50\nactive_file 100\n",
		svc + "memory.pressure":            psi,
		svc + "cpu.pressure":               psi,
		svc + "cpu.stat":                   "usage_usec 1\nnr_periods 100\nnr_throttled 10\n",
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestDiscoverUnified(t *testing.T) {
	root := tree(t, unified())
	srcs, dir := Discover(os.DirFS(root))
	if dir != "sys/fs/cgroup/system.slice/raygw.service" {
		t.Fatalf("cgroup dir = %q", dir)
	}
	r := sample(srcs)
	if !r.MemoryRatio.OK || !near(r.MemoryRatio.Value, 0.9) {
		t.Errorf("memory ratio = %+v, want 0.9 (working set 900 / 1000)", r.MemoryRatio)
	}
	if r.MemoryLimitBytes != 1000 || r.MemoryWorkingSetBytes != 900 {
		t.Errorf("limit/working set = %d/%d", r.MemoryLimitBytes, r.MemoryWorkingSetBytes)
	}
	if r.CPUThrottledRatio.OK {
		t.Errorf("throttled ratio available after one sample: %+v", r.CPUThrottledRatio)
	}
	if r.MemoryPSISource != "cgroup" || r.CPUPSISource != "cgroup" {
		t.Errorf("PSI sources = %q/%q, want cgroup", r.MemoryPSISource, r.CPUPSISource)
	}
	for name, s := range map[string]Signal{"mem some": r.MemoryPSISome, "cpu some": r.CPUPSISome} {
		if !s.OK || s.Value != 12.5 {
			t.Errorf("%s = %+v, want 12.5", name, s)
		}
	}
	for name, s := range map[string]Signal{"mem full": r.MemoryPSIFull, "cpu full": r.CPUPSIFull} {
		if !s.OK || s.Value != 1.25 {
			t.Errorf("%s = %+v, want 1.25", name, s)
		}
	}
	if !r.RSSMiB.OK || r.RSSMiB.Value != 512 {
		t.Errorf("rss = %+v, want 512 MiB", r.RSSMiB)
	}
}

func TestMemoryRatio(t *testing.T) {
	tests := []struct {
		name   string
		edit   map[string]string // overrides of unified(); "" deletes
		want   float64
		wantOK bool
	}{
		{"own limit", nil, 0.9, true},
		{"unlimited everywhere", map[string]string{svc + "memory.max": "max\n"}, 0, false},
		{"no memory.stat counts all of current", map[string]string{svc + "memory.stat": ""}, 0.95, true},
		{"inactive above current", map[string]string{svc + "memory.stat": "inactive_file 5000\n"}, 0, true},
		{"ancestor limit binds", map[string]string{
			svc + "memory.max":                          "max\n",
			"sys/fs/cgroup/system.slice/memory.max":     "2000\n",
			"sys/fs/cgroup/system.slice/memory.current": "1900\n",
		}, 0.95, true},
		{"tightest level wins", map[string]string{
			"sys/fs/cgroup/system.slice/memory.max":     "2000\n",
			"sys/fs/cgroup/system.slice/memory.current": "1000\n",
		}, 0.9, true},
		{"garbage max", map[string]string{svc + "memory.max": "lots\n"}, 0, false},
		{"garbage current", map[string]string{svc + "memory.current": "x\n"}, 0, false},
		{"missing current", map[string]string{svc + "memory.current": ""}, 0, false},
		{"zero limit ignored", map[string]string{svc + "memory.max": "0\n"}, 0, false},
		{"garbage stat ignored", map[string]string{svc + "memory.stat": "inactive_file nope\n"}, 0.95, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := sample(editedSources(t, tt.edit))
			if r.MemoryRatio.OK != tt.wantOK || !near(r.MemoryRatio.Value, tt.want) {
				t.Fatalf("memory ratio = %+v, want {%g %v}", r.MemoryRatio, tt.want, tt.wantOK)
			}
		})
	}
}

func TestThrottleDelta(t *testing.T) {
	root := tree(t, unified())
	srcs, _ := Discover(os.DirFS(root))
	steps := []struct {
		name, cpuStat string
		want          Signal
	}{
		{"first sample has no delta", "nr_periods 100\nnr_throttled 10\n", Signal{}},
		{"25% of new periods throttled", "nr_periods 200\nnr_throttled 35\n", ok(0.25)},
		{"no new periods", "nr_periods 200\nnr_throttled 35\n", ok(0)},
		{"counter reset", "nr_periods 5\nnr_throttled 1\n", Signal{}},
		{"after reset", "nr_periods 15\nnr_throttled 11\n", ok(1)},
		{"controller gone", "usage_usec 5\n", Signal{}},
		{"back, new baseline", "nr_periods 20\nnr_throttled 11\n", Signal{}},
		{"garbage", "nr_periods zz\n", Signal{}},
	}
	for _, s := range steps {
		write(t, root, svc+"cpu.stat", s.cpuStat)
		r := sample(srcs)
		if r.CPUThrottledRatio != s.want {
			t.Fatalf("%s: throttled = %+v, want %+v", s.name, r.CPUThrottledRatio, s.want)
		}
	}
}

func TestPressureSource(t *testing.T) {
	tests := []struct {
		name    string
		edit    map[string]string
		wantSrc string
		want    Signal // memory some
		full    Signal
	}{
		{"cgroup file preferred", nil, "cgroup", ok(12.5), ok(1.25)},
		{"system fallback", map[string]string{svc + "memory.pressure": ""}, "system", ok(3), ok(0.5)},
		{"garbage cgroup file falls back", map[string]string{svc + "memory.pressure": "junk\n"}, "system", ok(3), ok(0.5)},
		{"no full line", map[string]string{svc + "memory.pressure": "some avg10=7 total=0\n"}, "cgroup", ok(7), Signal{}},
		{"no PSI at all", map[string]string{svc + "memory.pressure": "", "proc/pressure/memory": ""}, "", Signal{}, Signal{}},
		{"both garbage", map[string]string{svc + "memory.pressure": "x", "proc/pressure/memory": "y"}, "", Signal{}, Signal{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := sample(editedSources(t, tt.edit))
			if r.MemoryPSISource != tt.wantSrc || r.MemoryPSISome != tt.want || r.MemoryPSIFull != tt.full {
				t.Fatalf("memory PSI = %q %+v %+v, want %q %+v %+v", r.MemoryPSISource,
					r.MemoryPSISome, r.MemoryPSIFull, tt.wantSrc, tt.want, tt.full)
			}
			if !r.CPUPSISome.OK { // cpu files untouched
				t.Fatalf("cpu PSI unavailable: %+v", r)
			}
		})
	}
}

func TestDiscoverLayouts(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		wantDir string
	}{
		{"no cgroup v2 (v1 only)", map[string]string{
			"proc/self/cgroup":  "4:memory:/x\n",
			"proc/pressure/cpu": sysPSI,
		}, ""},
		{"no /proc/self/cgroup", map[string]string{"sys/fs/cgroup/cgroup.controllers": ""}, ""},
		{"garbage /proc/self/cgroup", map[string]string{
			"sys/fs/cgroup/cgroup.controllers": "", "proc/self/cgroup": "0::nonsense\n"}, ""},
		{"hybrid: v2 tree under unified/", map[string]string{
			"proc/self/cgroup":                         "1:memory:/x\n0::/\n",
			"sys/fs/cgroup/unified/cgroup.controllers": "",
			"sys/fs/cgroup/unified/cpu.pressure":       psi,
		}, "sys/fs/cgroup/unified"},
		{"container without cgroup namespace: path absent, use the mount", map[string]string{
			"proc/self/cgroup":                 "0::/kubepods/pod1/abc\n",
			"sys/fs/cgroup/cgroup.controllers": "",
			"sys/fs/cgroup/memory.max":         "100\n",
			"sys/fs/cgroup/memory.current":     "95\n",
		}, "sys/fs/cgroup"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := tree(t, tt.files)
			srcs, dir := Discover(os.DirFS(root))
			if dir != tt.wantDir {
				t.Fatalf("dir = %q, want %q", dir, tt.wantDir)
			}
			r := sample(srcs)
			if dir == "" && (r.MemoryRatio.OK || r.CPUThrottledRatio.OK) {
				t.Fatalf("cgroup signals available without cgroup v2: %+v", r)
			}
			if _, has := tt.files["proc/pressure/cpu"]; has && (!r.CPUPSISome.OK || r.CPUPSISource != "system") {
				t.Fatalf("system CPU PSI not read: %+v", r)
			}
			if _, has := tt.files["sys/fs/cgroup/unified/cpu.pressure"]; has && r.CPUPSISource != "cgroup" {
				t.Fatalf("hybrid cgroup CPU PSI not read: %+v", r)
			}
			if _, has := tt.files["sys/fs/cgroup/memory.max"]; has && (!r.MemoryRatio.OK || !near(r.MemoryRatio.Value, 0.95)) {
				t.Fatalf("mount-level memory ratio = %+v, want 0.95", r.MemoryRatio)
			}
		})
	}
}

func TestEmptyTreeAllUnavailable(t *testing.T) {
	root := t.TempDir()
	srcs, dir := Discover(os.DirFS(root))
	r := sample(srcs)
	if dir != "" {
		t.Fatalf("dir = %q", dir)
	}
	for _, c := range checks(Thresholds{}, &r, Signal{}) {
		if c.sig.OK {
			t.Errorf("%s available in an empty tree: %+v", c.name, c.sig)
		}
	}
}

func TestRSSSource(t *testing.T) {
	for _, tt := range []struct {
		name, status string
		want         Signal
	}{
		{"present", "VmRSS:\t 1024 kB\n", ok(1)},
		{"absent", "Name:\tx\n", Signal{}},
		{"garbage", "VmRSS: lots\n", Signal{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := tree(t, map[string]string{"proc/self/status": tt.status})
			var r Readings
			(&rssSource{fsys: os.DirFS(root)}).Sample(&r)
			if r.RSSMiB != tt.want {
				t.Fatalf("rss = %+v, want %+v", r.RSSMiB, tt.want)
			}
		})
	}
}

// editedSources discovers the signal sources of the unified cgroup tree
// with edit applied: a path set to "" is removed, others are written.
func editedSources(t *testing.T, edit map[string]string) []Source {
	t.Helper()
	files := unified()
	for k, v := range edit {
		if v == "" {
			delete(files, k)
		} else {
			files[k] = v
		}
	}
	srcs, _ := Discover(os.DirFS(tree(t, files)))
	return srcs
}
