package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// ErrThresholdMissed is wrapped by the error Assert returns when a run
// misses one or more thresholds.
var ErrThresholdMissed = errors.New("benchmark threshold missed")

// Thresholds are a profile's pass/fail limits for `raygw bench assert`.
// A nil limit is not checked.
type Thresholds struct {
	Profile     string `json:"profile"`
	Description string `json:"description"`
	// Workload names the checked-in workload file under bench/workloads.
	Workload    string `json:"workload"`
	Concurrency int    `json:"concurrency"`
	Repeat      int    `json:"repeat"`

	TTFTP95MSMax          *float64 `json:"ttft_p95_ms_max"`
	TokensPerSecondP50Min *float64 `json:"completion_tokens_per_second_p50_min"`
	QualityPassRateMin    *float64 `json:"quality_pass_rate_min"`
	ErrorRateMax          *float64 `json:"error_rate_max"`
	// Notes explain each limit; they are documentation only.
	Notes map[string]string `json:"notes,omitempty"`
}

// ParseThresholds decodes a threshold file strictly (unknown keys are errors).
func ParseThresholds(b []byte) (*Thresholds, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var t Thresholds
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("thresholds: %w", err)
	}
	switch {
	case t.Profile == "":
		return nil, errors.New(`thresholds: "profile" is required`)
	case t.Workload == "":
		return nil, errors.New(`thresholds: "workload" is required`)
	case t.Concurrency < 0 || t.Repeat < 0:
		return nil, errors.New(`thresholds: "concurrency" and "repeat" must not be negative`)
	}
	if t.Concurrency == 0 {
		t.Concurrency = 1
	}
	if t.Repeat == 0 {
		t.Repeat = 1
	}
	return &t, nil
}

// Violation is one missed threshold.
type Violation struct {
	Metric    string  `json:"metric"`
	Limit     string  `json:"limit"` // "max" or "min"
	Threshold float64 `json:"threshold"`
	Value     float64 `json:"value"`
}

func (v Violation) String() string {
	word := "above the maximum"
	if v.Limit == "min" {
		word = "below the minimum"
	}
	return fmt.Sprintf("%s = %.4g, %s %.4g", v.Metric, v.Value, word, v.Threshold)
}

// Check compares a summary to the thresholds and returns every violation.
// A run with no successful request, or no checked output when a quality
// limit is set, counts as zero for the missing metric.
func (t *Thresholds) Check(s Summary) []Violation {
	var out []Violation
	max := func(metric string, lim *float64, v float64) {
		if lim != nil && v > *lim {
			out = append(out, Violation{Metric: metric, Limit: "max", Threshold: *lim, Value: v})
		}
	}
	min := func(metric string, lim *float64, v float64) {
		if lim != nil && v < *lim {
			out = append(out, Violation{Metric: metric, Limit: "min", Threshold: *lim, Value: v})
		}
	}
	ttft := s.TTFTMS.P95
	if s.OK == 0 && t.TTFTP95MSMax != nil {
		ttft = *t.TTFTP95MSMax + 1 // no successful request: nothing met the limit
	}
	max("error_rate", t.ErrorRateMax, s.ErrorRate)
	max("ttft_p95_ms", t.TTFTP95MSMax, ttft)
	min("completion_tokens_per_second_p50", t.TokensPerSecondP50Min, s.TokensPerSec.P50)
	min("quality_pass_rate", t.QualityPassRateMin, s.Quality.PassRate)
	return out
}

// Assert returns nil when s meets every threshold, else an error wrapping
// ErrThresholdMissed that names each metric, its threshold and its value.
func (t *Thresholds) Assert(s Summary) error {
	vs := t.Check(s)
	if len(vs) == 0 {
		return nil
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "profile %s: %d threshold(s) missed:", t.Profile, len(vs))
	for _, v := range vs {
		b.WriteString("\n  ")
		b.WriteString(v.String())
	}
	return fmt.Errorf("%w: %s", ErrThresholdMissed, b.String())
}
