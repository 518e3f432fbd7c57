package autotune

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/raygw/raygw/internal/bench/report"
)

// result builds a measured candidate: index, settings changed, relative
// change, throughput, TTFT p95, e2e p95.
func result(idx, changed int, rel, tput, ttft, e2e float64) Result {
	return Result{
		Candidate: Candidate{Index: idx, Distance: Distance{Changed: changed, Relative: rel}},
		Summary: &report.Summary{Requests: 4, OK: 4, ThroughputTokensPerSec: tput,
			TTFTMS: report.Dist{P95: ttft}, E2EMS: report.Dist{P95: e2e}},
	}
}

func order(rs []Result) []int {
	out := make([]int, len(rs))
	for i, r := range rs {
		out[i] = r.Index
	}
	return out
}

func TestRank(t *testing.T) {
	failed := result(3, 1, 1, 999, 1, 1)
	failed.Summary.Errors, failed.Summary.OK = 1, 3
	failed.Summary.ErrorsByStatus = map[string]int{"503": 1}
	badQuality := result(4, 1, 1, 999, 1, 1)
	badQuality.Summary.Quality = report.Quality{Checked: 4, Passed: 3, PassRate: 0.75}
	crashed := Result{Candidate: Candidate{Index: 5, Distance: Distance{Changed: 1}}, Error: "gateway not ready: raygw serve exited\nlog"}
	noFigure := result(6, 1, 1, 0, 0, 0)

	tests := []struct {
		name   string
		sc     Scoring
		rs     []Result
		winner int
		order  []int
	}{
		{name: "throughput: highest wins",
			sc:     Scoring{Objective: Throughput, MinQuality: 1},
			rs:     []Result{result(0, 0, 0, 100, 10, 50), result(1, 1, 0.5, 120, 12, 60), result(2, 1, 1, 110, 9, 40)},
			winner: 1, order: []int{1, 2, 0}},
		{name: "ttft: lowest wins",
			sc:     Scoring{Objective: TTFTP95, MinQuality: 1},
			rs:     []Result{result(0, 0, 0, 100, 10, 50), result(1, 1, 0.5, 120, 12, 60), result(2, 1, 1, 110, 9, 40)},
			winner: 2, order: []int{2, 0, 1}},
		{name: "latency: lowest wins",
			sc:     Scoring{Objective: LatencyP95, MinQuality: 1},
			rs:     []Result{result(0, 0, 0, 100, 10, 50), result(1, 1, 0.5, 120, 12, 45), result(2, 1, 1, 110, 9, 40)},
			winner: 2, order: []int{2, 1, 0}},
		{name: "exact tie goes to the fewest changes, then the smallest relative change",
			sc:     Scoring{Objective: Throughput, MinQuality: 1},
			rs:     []Result{result(1, 2, 0.5, 120, 1, 1), result(2, 1, 1.5, 120, 1, 1), result(3, 1, 0.5, 120, 1, 1), result(0, 0, 0, 100, 1, 1)},
			winner: 3, order: []int{3, 2, 1, 0}},
		{name: "tie margin prefers the closer candidate",
			sc:     Scoring{Objective: Throughput, MinQuality: 1, TieMargin: 0.05},
			rs:     []Result{result(0, 0, 0, 97, 1, 1), result(1, 1, 0.5, 100, 1, 1), result(2, 1, 1, 90, 1, 1)},
			winner: 0, order: []int{0, 1, 2}},
		{name: "tie margin for a lower-is-better objective",
			sc:     Scoring{Objective: TTFTP95, MinQuality: 1, TieMargin: 0.1},
			rs:     []Result{result(0, 0, 0, 1, 12, 1), result(1, 2, 1, 1, 10, 1), result(2, 1, 1, 1, 10.5, 1)},
			winner: 2, order: []int{2, 1, 0}},
		{name: "errors, failed checks, a failed run and no figure disqualify",
			sc:     Scoring{Objective: Throughput, MinQuality: 1},
			rs:     []Result{crashed, failed, result(0, 0, 0, 100, 1, 1), badQuality, noFigure},
			winner: 0, order: []int{0, 3, 4, 5, 6}},
		{name: "min quality admits a partial pass rate",
			sc:     Scoring{Objective: Throughput, MinQuality: 0.75},
			rs:     []Result{result(0, 0, 0, 100, 1, 1), badQuality},
			winner: 4, order: []int{4, 0}},
		{name: "nothing qualifies",
			sc:     Scoring{Objective: Throughput, MinQuality: 1},
			rs:     []Result{crashed, failed},
			winner: -1, order: []int{3, 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Rank(tt.rs, tt.sc); got != tt.winner {
				t.Errorf("winner = %d, want %d", got, tt.winner)
			}
			if diff := cmp.Diff(tt.order, order(tt.rs)); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
			for i, r := range tt.rs {
				if r.Rank != i+1 {
					t.Errorf("rank of %d = %d, want %d", r.Index, r.Rank, i+1)
				}
			}
		})
	}
}

func TestDisqualification(t *testing.T) {
	sc := Scoring{Objective: Throughput, MinQuality: 1}
	failed := result(3, 1, 1, 999, 1, 1)
	failed.Summary.Errors, failed.Summary.Requests = 2, 6
	failed.Summary.ErrorsByStatus = map[string]int{"503": 1, "timeout": 1}
	badQuality := result(4, 1, 1, 999, 1, 1)
	badQuality.Summary.Quality = report.Quality{Checked: 4, Passed: 3, PassRate: 0.75}
	tests := []struct {
		r    Result
		want string
	}{
		{result(0, 0, 0, 1, 1, 1), ""},
		{Result{Error: "gateway not ready: exited\nlog tail"}, "run failed: gateway not ready: exited"},
		{Result{Summary: &report.Summary{}}, "no requests measured"},
		{failed, "2 of 6 requests failed (503=1 timeout=1)"},
		{badQuality, "quality 3/4 below 1.00"},
		{result(6, 1, 1, 0, 1, 1), "no throughput figure"},
	}
	for _, tt := range tests {
		if got := sc.Disqualification(&tt.r); got != tt.want {
			t.Errorf("Disqualification = %q, want %q", got, tt.want)
		}
	}
}

func TestParse(t *testing.T) {
	for _, s := range []string{"full", "scheduler"} {
		if m, err := ParseMode(s); err != nil || string(m) != s {
			t.Errorf("ParseMode(%q) = %q, %v", s, m, err)
		}
	}
	for _, s := range Objectives() {
		if o, err := ParseObjective(s); err != nil || string(o) != s {
			t.Errorf("ParseObjective(%q) = %q, %v", s, o, err)
		}
	}
	if _, err := ParseMode("all"); err == nil || !strings.Contains(err.Error(), `"all"`) {
		t.Errorf("ParseMode(all) = %v", err)
	}
	if _, err := ParseObjective("speed"); err == nil || !strings.Contains(err.Error(), "throughput, ttft-p95, latency-p95") {
		t.Errorf("ParseObjective(speed) = %v", err)
	}
}
