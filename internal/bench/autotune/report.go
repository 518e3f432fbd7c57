package autotune

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is the JSON document `raygw bench autotune --out` writes.
type Report struct {
	Tool        string    `json:"tool"`
	StartedAt   time.Time `json:"started_at"`
	DurationMS  float64   `json:"duration_ms"`
	Mode        Mode      `json:"mode"`
	Objective   Objective `json:"objective"`
	MinQuality  float64   `json:"min_quality"`
	TieMargin   float64   `json:"tie_margin"`
	Workload    string    `json:"workload"`
	Concurrency int       `json:"concurrency"`
	Repeat      int       `json:"repeat"`
	VCPUs       int       `json:"vcpus"`
	// MemoryBudgetMiB is the llama-server memory bound (0: none).
	MemoryBudgetMiB int   `json:"memory_budget_mib,omitempty"`
	Need            Need  `json:"need"`
	Plan            *Plan `json:"plan"`
	// Candidates are the results, ranked (the winner first).
	Candidates []Result `json:"candidates"`
	// Winner is the winning candidate's index; nil when none qualified.
	Winner *int `json:"winner"`
	// WinnerEnv are the env-file lines that apply the winner.
	WinnerEnv []string `json:"winner_env"`
	// DeployArgv is the winner's llama-server command line with the
	// configured host and port: what the generated backend unit runs.
	DeployArgv []string `json:"deploy_argv,omitempty"`
	// Interrupted reports that the run stopped before every candidate ran.
	Interrupted bool `json:"interrupted,omitempty"`
}

// Find returns the result of candidate index, or nil.
func (r *Report) Find(index int) *Result {
	for i := range r.Candidates {
		if r.Candidates[i].Index == index {
			return &r.Candidates[i]
		}
	}
	return nil
}

// WriteJSON writes the report to path (0644, indented).
func (r *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode autotune report: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write autotune report: %w", err)
	}
	return nil
}

// EnvLines renders the winner as env-file lines for /etc/ray/ray.env: a
// comment naming the result, then one RAY_*=value line per changed setting.
// A nil winner or the current configuration yields only the comment.
func EnvLines(winner, baseline *Result, o Objective) []string {
	if winner == nil {
		return []string{"# raygw bench autotune: no candidate qualified; keep the current configuration"}
	}
	fig := fmt.Sprintf("%s %s", o, fmtFigure(o, winner.Score))
	if len(winner.Changes) == 0 {
		return []string{fmt.Sprintf("# raygw bench autotune: the current configuration wins (%s); nothing to change", fig)}
	}
	head := fmt.Sprintf("# raygw bench autotune: candidate %d wins (%s", winner.Index, fig)
	if baseline != nil && baseline.Qualified && baseline.Score > 0 {
		head += fmt.Sprintf("; current configuration %s, %+.1f%%", fmtFigure(o, baseline.Score),
			(winner.Score/baseline.Score-1)*100)
	}
	lines := []string{head + ")"}
	for _, ch := range winner.Changes {
		lines = append(lines, ch.Name+"="+ch.To)
	}
	return lines
}

// WriteTable prints the ranked results.
func (r *Report) WriteTable(w io.Writer) error {
	dir := "lower"
	if r.Objective.HigherIsBetter() {
		dir = "higher"
	}
	fmt.Fprintf(w, "objective: %s (%s is better); %d candidates, mode %s\n", r.Objective, dir, len(r.Candidates), r.Mode)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "rank\tcand\tok\tquality\tttft p95\te2e p95\tthroughput\tchanges\tresult")
	for i := range r.Candidates {
		c := &r.Candidates[i]
		ok, ttft, e2e, tput, qual := "-", "-", "-", "-", "-"
		if s := c.Summary; s != nil {
			ok = fmt.Sprintf("%d/%d", s.OK, s.Requests)
			if s.OK > 0 {
				ttft, e2e, tput = fmtMS(s.TTFTMS.P95), fmtMS(s.E2EMS.P95), fmt.Sprintf("%.1f tok/s", s.ThroughputTokensPerSec)
			}
			if s.Quality.Checked > 0 {
				qual = fmt.Sprintf("%d/%d", s.Quality.Passed, s.Quality.Checked)
			}
		}
		result := "ok"
		switch {
		case r.Winner != nil && c.Index == *r.Winner:
			result = "winner"
		case !c.Qualified:
			result = "disqualified: " + c.Disqualified
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Rank, c.Index, ok, qual, ttft, e2e, tput,
			c.Label(), result)
	}
	return tw.Flush()
}

func fmtFigure(o Objective, v float64) string {
	if o.HigherIsBetter() {
		return fmt.Sprintf("%.1f tok/s", v)
	}
	return fmtMS(v)
}

func fmtMS(v float64) string {
	switch {
	case v >= 10000:
		return fmt.Sprintf("%.1fs", v/1000)
	case v >= 100:
		return fmt.Sprintf("%.0fms", v)
	}
	return fmt.Sprintf("%.1fms", v)
}

// WriteCandidates prints a plan for --dry-run: each candidate's changes and,
// in full mode, its llama-server command line (argv maps a candidate to it).
func WriteCandidates(w io.Writer, p *Plan, argv func(Candidate) (string, error)) error {
	fmt.Fprintf(w, "mode %s: %d candidates (searched: %s)\n", p.Mode, len(p.Candidates), strings.Join(p.Knobs, ", "))
	for _, v := range p.BaselineViolations {
		fmt.Fprintf(w, "note: the current configuration breaks %s\n", v)
	}
	for _, c := range p.Candidates {
		fmt.Fprintf(w, "candidate %d (%d changed, relative %.2f): %s\n", c.Index, c.Distance.Changed, c.Distance.Relative, c.Label())
		if argv == nil || (p.Mode != ModeFull && c.Index > 0) {
			continue
		}
		a, err := argv(c)
		if err != nil {
			return fmt.Errorf("candidate %d: %w", c.Index, err)
		}
		fmt.Fprintf(w, "  argv: %s\n", a)
	}
	if p.Mode != ModeFull {
		fmt.Fprintln(w, "scheduler mode: every candidate runs the launch profile above")
	}
	return nil
}
