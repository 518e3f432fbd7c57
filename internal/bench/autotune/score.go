package autotune

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/raygw/raygw/internal/bench/report"
)

// Result is one candidate's run.
type Result struct {
	Candidate
	// Overrides are the candidate's RAY_* changes (the winner's become the
	// env-file lines).
	Overrides map[string]string `json:"overrides"`
	// Env is every RAY_* value the gateway got on top of the base
	// configuration: the overrides plus the run's own loopback ports, state
	// directory and switches.
	Env map[string]string `json:"env,omitempty"`
	// Settings is every searched setting's value in the configuration the
	// gateway loaded.
	Settings map[string]string `json:"settings,omitempty"`
	// Argv is llamacpp.FromConfig(candidate config).Argv(): the exact
	// command line the gateway launched.
	Argv []string `json:"argv,omitempty"`
	// ObservedArgv is the running engine's command line read from /proc
	// (Linux); ArgvMatch reports whether it ends with Argv's arguments (a
	// wrapper script may replace the binary itself).
	ObservedArgv []string        `json:"observed_argv,omitempty"`
	ArgvMatch    *bool           `json:"argv_match,omitempty"`
	Summary      *report.Summary `json:"summary,omitempty"`
	Error        string          `json:"error,omitempty"`
	DurationMS   float64         `json:"duration_ms"`
	// Log is the gateway's log file, when it was kept.
	Log string `json:"log,omitempty"`

	// Score is the objective's figure; Qualified, Disqualified and Rank
	// are set by Rank.
	Score        float64 `json:"score"`
	Qualified    bool    `json:"qualified"`
	Disqualified string  `json:"disqualified,omitempty"`
	Rank         int     `json:"rank"`
}

// Scoring says how results are compared.
type Scoring struct {
	Objective Objective
	// MinQuality is the lowest quality-check pass rate a candidate may have
	// (1: every check passes). Requests without checks do not count.
	MinQuality float64
	// TieMargin treats qualified candidates within this fraction of the best
	// figure as tied (0: only equal figures tie); ties go to the candidate
	// closest to the current configuration.
	TieMargin float64
}

// Disqualification reports why a result cannot win, or "".
func (sc Scoring) Disqualification(r *Result) string {
	s := r.Summary
	switch {
	case r.Error != "":
		return "run failed: " + firstLine(r.Error)
	case s == nil || s.Requests == 0:
		return "no requests measured"
	case s.Errors > 0:
		return fmt.Sprintf("%d of %d requests failed (%s)", s.Errors, s.Requests, errorKinds(s.ErrorsByStatus))
	case s.Quality.Checked > 0 && s.Quality.PassRate < sc.MinQuality:
		return fmt.Sprintf("quality %d/%d below %.2f", s.Quality.Passed, s.Quality.Checked, sc.MinQuality)
	}
	if v := sc.Objective.Value(*s); !(v > 0) || math.IsInf(v, 0) {
		return fmt.Sprintf("no %s figure", sc.Objective)
	}
	return ""
}

// Rank scores every result, disqualifies those with a failed run, an
// errored request or too low a quality, and orders them: the winner first,
// then the other qualified results by figure (ties by distance), then the
// disqualified by index. rs is sorted in place. It returns the winner's
// candidate index (rs[0] is then the winner), or -1 when none qualifies.
func Rank(rs []Result, sc Scoring) int {
	for i := range rs {
		r := &rs[i]
		r.Disqualified = sc.Disqualification(r)
		r.Qualified = r.Disqualified == ""
		r.Score = 0
		if r.Summary != nil {
			r.Score = sc.Objective.Value(*r.Summary)
		}
	}
	better := func(a, b float64) bool {
		if sc.Objective.HigherIsBetter() {
			return a > b
		}
		return a < b
	}
	winner := -1
	for i := range rs {
		if rs[i].Qualified && (winner < 0 || better(rs[i].Score, rs[winner].Score)) {
			winner = i
		}
	}
	if winner >= 0 {
		best := rs[winner].Score
		for i := range rs {
			r, w := &rs[i], &rs[winner]
			if !r.Qualified || !withinMargin(r.Score, best, sc) {
				continue
			}
			if r.Distance.Less(w.Distance) || (r.Distance == w.Distance &&
				(better(r.Score, w.Score) || (r.Score == w.Score && r.Index < w.Index))) {
				winner = i
			}
		}
	}
	winIndex := -1
	if winner >= 0 {
		winIndex = rs[winner].Index
	}
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := &rs[i], &rs[j]
		switch {
		case (a.Index == winIndex) != (b.Index == winIndex):
			return a.Index == winIndex
		case a.Qualified != b.Qualified:
			return a.Qualified
		case !a.Qualified:
			return a.Index < b.Index
		case a.Score != b.Score:
			return better(a.Score, b.Score)
		case a.Distance != b.Distance:
			return a.Distance.Less(b.Distance)
		}
		return a.Index < b.Index
	})
	for i := range rs {
		rs[i].Rank = i + 1
	}
	if winner < 0 {
		return -1
	}
	return winIndex
}

// withinMargin reports whether v is tied with the best figure.
func withinMargin(v, best float64, sc Scoring) bool {
	if v == best {
		return true
	}
	if sc.Objective.HigherIsBetter() {
		return v >= best*(1-sc.TieMargin)
	}
	return v <= best*(1+sc.TieMargin)
}

func errorKinds(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, " ")
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
