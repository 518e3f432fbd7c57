package autotune

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// DefaultMaxCandidates is how many candidates a run keeps by default, the
// current configuration included.
const DefaultMaxCandidates = 64

// defaultMaxEnumerated bounds the combinations Generate examines.
const defaultMaxEnumerated = 500_000

// Space is the search: the current configuration, the host, the workload's
// needs, and how many candidates to keep.
type Space struct {
	Mode Mode
	// Base holds the current RAY_* values (config.Loaded.Resolved).
	Base    map[string]string
	Machine Machine
	Need    Need
	// Max is the number of candidates kept, the baseline included
	// (0: DefaultMaxCandidates).
	Max int
	// MaxEnumerated bounds the combinations examined (0: 500,000).
	MaxEnumerated int

	memo map[Shape]memoMiB
}

type memoMiB struct {
	mib int
	err error
}

// Change is one setting a candidate moves away from the current value.
type Change struct {
	Name string `json:"name"`
	From string `json:"from"`
	To   string `json:"to"`
}

// Distance orders candidates: fewer changed settings first, then the
// smaller sum of relative changes.
type Distance struct {
	Changed  int     `json:"changed"`
	Relative float64 `json:"relative"`
}

// Less reports whether d is closer to the current configuration than o.
func (d Distance) Less(o Distance) bool {
	if d.Changed != o.Changed {
		return d.Changed < o.Changed
	}
	return d.Relative < o.Relative
}

// Candidate is one configuration to measure. Index 0 is the current one.
type Candidate struct {
	Index    int      `json:"index"`
	Changes  []Change `json:"changes"`
	Distance Distance `json:"distance"`
	// Point is every knob's value in this candidate.
	Point Point `json:"-"`
}

// Overrides are the candidate's RAY_* settings that differ from the current
// configuration.
func (c Candidate) Overrides() map[string]string {
	out := make(map[string]string, len(c.Changes))
	for _, ch := range c.Changes {
		out[ch.Name] = ch.To
	}
	return out
}

// Label is a short description: "current", or the changes without the RAY_
// prefix.
func (c Candidate) Label() string {
	if len(c.Changes) == 0 {
		return "current"
	}
	parts := make([]string, len(c.Changes))
	for i, ch := range c.Changes {
		parts[i] = strings.TrimPrefix(ch.Name, "RAY_") + "=" + ch.To
	}
	return strings.Join(parts, " ")
}

// Plan is the outcome of Generate.
type Plan struct {
	Mode  Mode     `json:"mode"`
	Knobs []string `json:"knobs"`
	// Candidates are the kept candidates, closest first; [0] is the current
	// configuration.
	Candidates []Candidate `json:"-"`
	// BaselineViolations are rules the current configuration already breaks.
	BaselineViolations []string `json:"baseline_violations,omitempty"`
	// Valid and Rejected count the combinations examined that kept, or
	// broke, the constraints (the baseline not included).
	Valid    int `json:"valid"`
	Rejected int `json:"rejected"`
	// Complete reports that every combination of the space was examined.
	Complete bool `json:"complete"`
}

type axis struct {
	knob Knob
	cur  int
	alts []int
}

// Generate lists the candidates closest to the current configuration that
// keep the constraints, at most s.Max of them, the current one first. It
// examines whole levels (all candidates changing k settings) in rising k
// until s.Max are found, so the kept ones are exactly the closest.
func (s *Space) Generate() (*Plan, error) {
	if s.Mode == "" {
		s.Mode = ModeScheduler
	}
	if _, err := ParseMode(string(s.Mode)); err != nil {
		return nil, err
	}
	limit := s.Max
	if limit <= 0 {
		limit = DefaultMaxCandidates
	}
	base, err := BasePoint(s.Base)
	if err != nil {
		return nil, err
	}
	plan := &Plan{Mode: s.Mode, BaselineViolations: s.violations(base, nil)}
	var axes []axis
	for _, k := range Knobs(s.Mode) {
		plan.Knobs = append(plan.Knobs, k.Name)
		axes = append(axes, axis{knob: k, cur: base[k.Name], alts: alternatives(k, base[k.Name], base, s.Machine)})
	}
	plan.Candidates = []Candidate{{Index: 0, Changes: []Change{}, Point: base}}
	e := &enumerator{s: s, axes: axes, base: base, budget: s.MaxEnumerated}
	if e.budget <= 0 {
		e.budget = defaultMaxEnumerated
	}
	for k := 1; k <= len(axes) && len(plan.Candidates) < limit; k++ {
		level, err := e.level(k)
		plan.Valid += len(level)
		if err != nil {
			return nil, err
		}
		slices.SortStableFunc(level, func(a, b Candidate) int { return cmpFloat(a.Distance.Relative, b.Distance.Relative) })
		for _, c := range level[:min(len(level), limit-len(plan.Candidates))] {
			c.Index = len(plan.Candidates)
			plan.Candidates = append(plan.Candidates, c)
		}
		plan.Complete = k == len(axes)
	}
	plan.Complete = plan.Complete || len(axes) == 0
	plan.Rejected = e.rejected
	return plan, nil
}

type enumerator struct {
	s        *Space
	axes     []axis
	base     Point
	budget   int
	seen     int
	rejected int
}

// level returns every valid candidate that changes exactly k settings, in
// knob order then alternative order.
func (e *enumerator) level(k int) ([]Candidate, error) {
	var out []Candidate
	var changes []Change
	var names []string
	p := maps.Clone(e.base)
	var rels []float64
	var walk func(start, left int) error
	walk = func(start, left int) error {
		if left == 0 {
			e.seen++
			if e.seen > e.budget {
				return fmt.Errorf("%w: more than %d combinations examined before %d candidates were found; lower --max-candidates",
					ErrEnumeration, e.budget, e.s.Max)
			}
			if len(e.s.violations(p, names)) > 0 {
				e.rejected++
				return nil
			}
			rel := 0.0
			for _, r := range rels {
				rel += r
			}
			out = append(out, Candidate{Changes: slices.Clone(changes), Point: maps.Clone(p),
				Distance: Distance{Changed: k, Relative: rel}})
			return nil
		}
		for i := start; i <= len(e.axes)-left; i++ {
			a := e.axes[i]
			for _, v := range a.alts {
				p[a.knob.Name] = v
				rels = append(rels, relChange(a.knob, a.cur, v))
				changes = append(changes, Change{Name: a.knob.Name, From: a.knob.Format(a.cur), To: a.knob.Format(v)})
				names = append(names, a.knob.Name)
				err := walk(i+1, left-1)
				changes, names, rels = changes[:len(changes)-1], names[:len(names)-1], rels[:len(rels)-1]
				if err != nil {
					return err
				}
			}
			p[a.knob.Name] = a.cur
		}
		return nil
	}
	err := walk(0, k)
	return out, err
}

// estimate memoizes Machine.EstimateMiB by shape.
func (s *Space) estimate(sh Shape) (int, error) {
	if s.memo == nil {
		s.memo = map[Shape]memoMiB{}
	}
	if m, ok := s.memo[sh]; ok {
		return m.mib, m.err
	}
	mib, err := s.Machine.EstimateMiB(sh)
	s.memo[sh] = memoMiB{mib, err}
	return mib, err
}
