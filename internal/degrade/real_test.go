package degrade

import (
	"errors"
	"io/fs"
	"os"
	"testing"
)

// TestRealMachine samples this machine's own files and checks that every
// signal is available exactly when its file exists and parses, as read here
// independently of the sources.
func TestRealMachine(t *testing.T) {
	root := os.DirFS("/")
	srcs, dir := Discover(root)
	s := NewSampler(SamplerOptions{Sources: srcs})
	if !s.Refresh() {
		t.Fatal("first Refresh did not sample")
	}
	r := s.Snapshot()
	t.Logf("cgroup dir %q; readings %+v", dir, r)

	parses := func(name string, parse func([]byte) error) bool {
		data, err := fs.ReadFile(root, name)
		return err == nil && parse(data) == nil
	}
	psiFile := func(name string) bool {
		return parses(name, func(b []byte) error { _, err := parsePSI(b); return err })
	}

	if data, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		if _, perr := parseProcCgroup(data); errors.Is(perr, ErrNoCgroupV2) && dir != "" {
			t.Errorf("cgroup dir %q found without a v2 entry", dir)
		}
	}
	if _, err := fs.Stat(root, "sys/fs/cgroup/cgroup.controllers"); err != nil {
		if _, err := fs.Stat(root, "sys/fs/cgroup/unified/cgroup.controllers"); err != nil && dir != "" {
			t.Errorf("cgroup dir %q found without a cgroup v2 mount", dir)
		}
	}
	if dir == "" && (r.MemoryRatio.OK || r.CPUThrottledRatio.OK) {
		t.Errorf("cgroup signals available without a cgroup: %+v", r)
	}
	if r.CPUThrottledRatio.OK {
		t.Errorf("throttled ratio available after a single sample")
	}
	if r.MemoryRatio.OK && (r.MemoryLimitBytes == 0 || r.MemoryRatio.Value < 0) {
		t.Errorf("memory ratio %+v with limit %d", r.MemoryRatio, r.MemoryLimitBytes)
	}
	for _, res := range []struct {
		name      string
		some      Signal
		source    string
		cgroupHas bool
	}{
		{"memory", r.MemoryPSISome, r.MemoryPSISource, dir != "" && psiFile(dir+"/memory.pressure")},
		{"cpu", r.CPUPSISome, r.CPUPSISource, dir != "" && psiFile(dir+"/cpu.pressure")},
	} {
		want := res.cgroupHas || psiFile("proc/pressure/"+res.name)
		if res.some.OK != want {
			t.Errorf("%s PSI available = %v, files say %v", res.name, res.some.OK, want)
		}
		if res.cgroupHas && res.source != "cgroup" {
			t.Errorf("%s PSI source %q, want cgroup", res.name, res.source)
		}
	}
	wantRSS := parses("proc/self/status", func(b []byte) error { _, err := parseVmRSS(b); return err })
	if r.RSSMiB.OK != wantRSS || (wantRSS && r.RSSMiB.Value <= 0) {
		t.Errorf("RSS = %+v, want available=%v and > 0", r.RSSMiB, wantRSS)
	}

	// A second sample one interval later must not fail either; the policy
	// over it must return a valid level.
	p := New(Options{Enabled: true, Thresholds: profile1b, Snapshot: s, QueueDepth: func() int { return 0 }})
	if l := p.Decide().Level; l > Shed {
		t.Errorf("level %v", l)
	}
	st := p.Stats()
	if len(st.Signals) != 8 {
		t.Errorf("stats has %d signals", len(st.Signals))
	}
}
