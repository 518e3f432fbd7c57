// Package report owns raygw bench results: per-request rows, the summary
// statistics computed from them, the JSON report, the text table, the SVG
// latency chart and the per-profile threshold checks.
package report

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/raygw/raygw/internal/bench/workload"
)

// Row is one request's measurements.
type Row struct {
	Seq    int    `json:"seq"`
	ID     string `json:"id"`
	Target string `json:"target"`
	Status int    `json:"status"`
	// ErrorKind is "", "http", "transport", "stream" or "timeout".
	ErrorKind string `json:"error_kind,omitempty"`
	Error     string `json:"error,omitempty"`

	StartMS float64 `json:"start_ms"`
	// QueueMS is X-Ray-Queue-Ms from the response; nil when absent.
	QueueMS *float64 `json:"queue_ms,omitempty"`
	// TTFTMS is the time to the first non-empty content chunk.
	TTFTMS float64 `json:"ttft_ms"`
	E2EMS  float64 `json:"e2e_ms"`

	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	// PromptEvaluated and PromptReused are llama-server timings prompt_n
	// and cache_n; HasTimings says whether the stream carried them.
	PromptEvaluated int  `json:"prompt_evaluated"`
	PromptReused    int  `json:"prompt_reused"`
	HasTimings      bool `json:"has_timings"`
	// TokensPerSecond is the decode rate seen by the client:
	// (completion_tokens-1) / (e2e - ttft) when streamed, else
	// completion_tokens / e2e.
	TokensPerSecond float64 `json:"tokens_per_second"`
	// EngineTokensPerSecond is timings.predicted_per_second, when reported.
	EngineTokensPerSecond float64 `json:"engine_tokens_per_second,omitempty"`

	FinishReason string            `json:"finish_reason,omitempty"`
	Checks       []workload.Result `json:"checks,omitempty"`
	Output       string            `json:"output,omitempty"`
}

// OK reports whether the request completed without error.
func (r *Row) OK() bool { return r.ErrorKind == "" }

// ErrorKey groups errors: the HTTP status, or the error kind without one.
func (r *Row) ErrorKey() string {
	if r.Status != 0 && r.Status != 200 {
		return strconv.Itoa(r.Status)
	}
	return r.ErrorKind
}

// Dist summarizes one metric's distribution.
type Dist struct {
	N    int     `json:"n"`
	Min  float64 `json:"min"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
}

// NewDist computes the distribution of vals (linear-interpolated percentiles).
func NewDist(vals []float64) Dist {
	if len(vals) == 0 {
		return Dist{}
	}
	s := append([]float64(nil), vals...)
	sort.Float64s(s)
	sum := 0.0
	for _, v := range s {
		sum += v
	}
	return Dist{N: len(s), Min: s[0], Max: s[len(s)-1], Mean: sum / float64(len(s)),
		P50: Percentile(s, 50), P95: Percentile(s, 95), P99: Percentile(s, 99)}
}

// Percentile returns the p-th percentile of sorted values.
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	pos := p / 100 * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := int(math.Ceil(pos))
	if hi >= len(sorted) {
		hi = len(sorted) - 1
	}
	frac := pos - float64(lo)
	return sorted[lo] + (sorted[hi]-sorted[lo])*frac
}

// Quality counts quality checks.
type Quality struct {
	// Checked counts successful requests that carried checks; Passed those
	// whose checks all passed.
	Checked  int     `json:"checked"`
	Passed   int     `json:"passed"`
	PassRate float64 `json:"pass_rate"`
}

// Summary is one target's aggregate.
type Summary struct {
	Target         string         `json:"target"`
	URL            string         `json:"url"`
	Requests       int            `json:"requests"`
	OK             int            `json:"ok"`
	Errors         int            `json:"errors"`
	ErrorRate      float64        `json:"error_rate"`
	ErrorsByStatus map[string]int `json:"errors_by_status"`
	TTFTMS         Dist           `json:"ttft_ms"`
	QueueMS        Dist           `json:"queue_ms"`
	E2EMS          Dist           `json:"e2e_ms"`
	TokensPerSec   Dist           `json:"completion_tokens_per_second"`
	// ThroughputTokensPerSec is all completion tokens over the wall time.
	ThroughputTokensPerSec float64 `json:"throughput_tokens_per_second"`
	CompletionTokens       int     `json:"completion_tokens"`
	PromptEvaluated        int     `json:"prompt_tokens_evaluated"`
	PromptReused           int     `json:"prompt_tokens_reused"`
	// ReuseRatio is reused / (evaluated + reused) over rows with timings.
	ReuseRatio       float64 `json:"prompt_reuse_ratio"`
	TimingsReported  int     `json:"timings_reported"`
	Quality          Quality `json:"quality"`
	WallMS           float64 `json:"wall_ms"`
	RequestsPerSec   float64 `json:"requests_per_second"`
	QueueHeaderCount int     `json:"queue_header_count"`
}

// Config records how the run was made.
type Config struct {
	Workload    string      `json:"workload"`
	Model       string      `json:"model,omitempty"`
	Concurrency int         `json:"concurrency,omitempty"`
	RatePerSec  float64     `json:"rate_per_second,omitempty"`
	Schedule    string      `json:"schedule"`
	Stream      bool        `json:"stream"`
	Repeat      int         `json:"repeat"`
	Targets     []TargetRef `json:"targets"`
}

// TargetRef names one target of a run.
type TargetRef struct {
	Label string `json:"label"`
	URL   string `json:"url"`
}

// Report is the JSON document raygw bench writes.
type Report struct {
	Tool       string    `json:"tool"`
	StartedAt  time.Time `json:"started_at"`
	DurationMS float64   `json:"duration_ms"`
	Config     Config    `json:"config"`
	Summaries  []Summary `json:"summaries"`
	// Ratios compare the second target to the first (b / a), with --compare.
	Ratios map[string]float64 `json:"ratios,omitempty"`
	// DeltasMS are the latency differences b - a in ms, with --compare.
	DeltasMS map[string]float64 `json:"deltas_ms,omitempty"`
	Rows     []Row              `json:"rows"`
}

// Summarize builds the summary of rows whose Target is label.
func Summarize(label, url string, rows []Row) Summary {
	s := Summary{Target: label, URL: url, ErrorsByStatus: map[string]int{}}
	var ttft, queue, e2e, tps []float64
	first, last := math.Inf(1), 0.0
	for i := range rows {
		r := &rows[i]
		if r.Target != label {
			continue
		}
		s.Requests++
		first = math.Min(first, r.StartMS)
		last = math.Max(last, r.StartMS+r.E2EMS)
		if !r.OK() {
			s.Errors++
			s.ErrorsByStatus[r.ErrorKey()]++
			continue
		}
		s.OK++
		ttft = append(ttft, r.TTFTMS)
		e2e = append(e2e, r.E2EMS)
		if r.QueueMS != nil {
			queue = append(queue, *r.QueueMS)
			s.QueueHeaderCount++
		}
		if r.TokensPerSecond > 0 {
			tps = append(tps, r.TokensPerSecond)
		}
		s.CompletionTokens += r.CompletionTokens
		if r.HasTimings {
			s.TimingsReported++
			s.PromptEvaluated += r.PromptEvaluated
			s.PromptReused += r.PromptReused
		}
		if len(r.Checks) > 0 {
			s.Quality.Checked++
			if allPassed(r.Checks) {
				s.Quality.Passed++
			}
		}
	}
	s.TTFTMS, s.QueueMS, s.E2EMS, s.TokensPerSec = NewDist(ttft), NewDist(queue), NewDist(e2e), NewDist(tps)
	if s.Requests > 0 {
		s.ErrorRate = float64(s.Errors) / float64(s.Requests)
		s.WallMS = last - first
	}
	if s.WallMS > 0 {
		s.ThroughputTokensPerSec = float64(s.CompletionTokens) / (s.WallMS / 1000)
		s.RequestsPerSec = float64(s.Requests) / (s.WallMS / 1000)
	}
	if t := s.PromptEvaluated + s.PromptReused; t > 0 {
		s.ReuseRatio = float64(s.PromptReused) / float64(t)
	}
	if s.Quality.Checked > 0 {
		s.Quality.PassRate = float64(s.Quality.Passed) / float64(s.Quality.Checked)
	}
	return s
}

func allPassed(rs []workload.Result) bool {
	for _, r := range rs {
		if !r.Passed {
			return false
		}
	}
	return true
}

// CompareRatios returns b/a for the headline metrics of two summaries.
func CompareRatios(a, b Summary) map[string]float64 {
	m := map[string]float64{}
	put := func(k string, av, bv float64) {
		if av > 0 {
			m[k] = bv / av
		}
	}
	put("ttft_p50", a.TTFTMS.P50, b.TTFTMS.P50)
	put("ttft_p95", a.TTFTMS.P95, b.TTFTMS.P95)
	put("ttft_p99", a.TTFTMS.P99, b.TTFTMS.P99)
	put("e2e_p50", a.E2EMS.P50, b.E2EMS.P50)
	put("e2e_p95", a.E2EMS.P95, b.E2EMS.P95)
	put("e2e_p99", a.E2EMS.P99, b.E2EMS.P99)
	put("tokens_per_second_p50", a.TokensPerSec.P50, b.TokensPerSec.P50)
	put("throughput_tokens_per_second", a.ThroughputTokensPerSec, b.ThroughputTokensPerSec)
	return m
}

// CompareDeltas returns b - a, in ms, for the latency percentiles.
func CompareDeltas(a, b Summary) map[string]float64 {
	if a.OK == 0 || b.OK == 0 {
		return nil
	}
	return map[string]float64{
		"ttft_p50": b.TTFTMS.P50 - a.TTFTMS.P50, "ttft_p95": b.TTFTMS.P95 - a.TTFTMS.P95,
		"ttft_p99": b.TTFTMS.P99 - a.TTFTMS.P99, "e2e_p50": b.E2EMS.P50 - a.E2EMS.P50,
		"e2e_p95": b.E2EMS.P95 - a.E2EMS.P95, "e2e_p99": b.E2EMS.P99 - a.E2EMS.P99,
	}
}

// WriteJSON writes the report to path (0644, indented).
func (r *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// Read loads a report written by WriteJSON.
func Read(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}
