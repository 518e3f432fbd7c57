package autotune

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/raygw/raygw/internal/bench/report"
	"github.com/raygw/raygw/internal/config"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s (-want +got):\n%s", name, diff)
	}
}

func sampleReport() *Report {
	win := result(2, 1, 1, 130.25, 11, 40)
	win.Changes = []Change{{Name: LlamaParallel, From: "1", To: "2"}}
	base := result(0, 0, 0, 100, 10, 50)
	base.Changes = []Change{}
	base.Summary.Quality = report.Quality{Checked: 2, Passed: 2, PassRate: 1}
	other := result(1, 1, 0.5, 90, 9, 45)
	other.Changes = []Change{{Name: SchedBatchWindowMS, From: "5", To: "2"}}
	bad := result(3, 2, 2, 150, 8, 30)
	bad.Changes = []Change{{Name: SchedConcurrency, From: "1", To: "2"}, {Name: LlamaThreads, From: "2", To: "1"}}
	bad.Summary.Errors, bad.Summary.OK, bad.Summary.ErrorsByStatus = 1, 3, map[string]int{"504": 1}
	rs := []Result{base, other, win, bad}
	for i := range rs {
		rs[i].Overrides = rs[i].Candidate.Overrides()
	}
	w := Rank(rs, Scoring{Objective: Throughput, MinQuality: 1})
	return &Report{Mode: ModeFull, Objective: Throughput, Candidates: rs, Winner: &w}
}

func TestReportOutput(t *testing.T) {
	rep := sampleReport()
	var b bytes.Buffer
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	b.WriteString("\n")
	for _, l := range EnvLines(rep.Find(*rep.Winner), rep.Find(0), rep.Objective) {
		b.WriteString(l + "\n")
	}
	golden(t, "report.golden", b.Bytes())
}

func TestEnvLines(t *testing.T) {
	rep := sampleReport()
	t.Run("baseline wins", func(t *testing.T) {
		got := EnvLines(rep.Find(0), rep.Find(0), Throughput)
		if len(got) != 1 || !strings.Contains(got[0], "current configuration wins (throughput 100.0 tok/s); nothing to change") {
			t.Errorf("lines = %q", got)
		}
	})
	t.Run("no winner", func(t *testing.T) {
		if got := EnvLines(nil, nil, Throughput); len(got) != 1 || !strings.Contains(got[0], "no candidate qualified") {
			t.Errorf("lines = %q", got)
		}
	})
	t.Run("round trip through the config loader", func(t *testing.T) {
		win := rep.Find(*rep.Winner)
		win.Changes = append(win.Changes, Change{Name: SchedSlotAffinity, From: "true", To: "false"})
		lines := EnvLines(win, rep.Find(0), Throughput)
		if !strings.Contains(lines[0], "+30.2%") {
			t.Errorf("header %q does not compare with the current configuration", lines[0])
		}
		path := filepath.Join(t.TempDir(), "ray.env")
		body := "RAY_LLAMA_CPP_MODEL_PATH=/m.gguf\nRAY_LLAMA_CPP_PARALLEL=1\n" + strings.Join(lines, "\n") + "\n"
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(config.Options{EnvFile: path})
		if err != nil {
			t.Fatal(err)
		}
		if cfg.LlamaCpp.Parallel != 2 || cfg.Scheduler.SlotAffinity {
			t.Errorf("loaded parallel=%d slot affinity=%v, want 2 and false", cfg.LlamaCpp.Parallel, cfg.Scheduler.SlotAffinity)
		}
	})
}

func TestWriteCandidates(t *testing.T) {
	s := Space{Mode: ModeFull, Base: with(testBase(), LlamaThreads, "4"), Machine: Machine{VCPUs: 2}, Max: 4}
	p, err := s.Generate()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	err = WriteCandidates(&b, p, func(c Candidate) (string, error) { return "llama-server " + c.Label(), nil })
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "dry-run.golden", b.Bytes())
}
