package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
)

// WriteTable prints a readable summary of the report to w.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "target\treqs\tok\terr\tttft p50\tp95\tp99\te2e p50\tp95\tp99\tqueue p95\ttok/s p50\tthroughput\treused\tquality\t")
	for _, s := range r.Summaries {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%.1f\t%s\t%s\t\n",
			s.Target, s.Requests, s.OK, s.Errors,
			ms(s.TTFTMS.P50), ms(s.TTFTMS.P95), ms(s.TTFTMS.P99),
			ms(s.E2EMS.P50), ms(s.E2EMS.P95), ms(s.E2EMS.P99),
			queueCell(s), s.TokensPerSec.P50, s.ThroughputTokensPerSec, reuseCell(s), qualityCell(s))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range r.Summaries {
		if len(s.ErrorsByStatus) == 0 {
			continue
		}
		keys := make([]string, 0, len(s.ErrorsByStatus))
		for k := range s.ErrorsByStatus {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s=%d", k, s.ErrorsByStatus[k])
		}
		fmt.Fprintf(w, "errors %s: %s\n", s.Target, strings.Join(parts, " "))
	}
	if len(r.Summaries) == 2 {
		a, b := r.Summaries[0].Target, r.Summaries[1].Target
		printSorted(w, "ratios "+b+"/"+a+":", r.Ratios, "%.3f")
		printSorted(w, "deltas "+b+"-"+a+" (ms):", r.DeltasMS, "%+.3f")
	}
	return nil
}

func ms(v float64) string {
	switch {
	case v >= 10000:
		return fmt.Sprintf("%.1fs", v/1000)
	case v >= 100:
		return fmt.Sprintf("%.0fms", v)
	}
	return fmt.Sprintf("%.2fms", v)
}

func queueCell(s Summary) string {
	if s.QueueHeaderCount == 0 {
		return "-"
	}
	return ms(s.QueueMS.P95)
}

func reuseCell(s Summary) string {
	if s.TimingsReported == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d", s.PromptReused, s.PromptReused+s.PromptEvaluated)
}

func qualityCell(s Summary) string {
	if s.Quality.Checked == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d", s.Quality.Passed, s.Quality.Checked)
}

// printSorted prints a line of title and key=value pairs in key order; an
// empty map prints nothing.
func printSorted(w io.Writer, title string, m map[string]float64, format string) {
	if len(m) == 0 {
		return
	}
	fmt.Fprint(w, title)
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(w, " %s="+format, k, m[k])
	}
	fmt.Fprintln(w)
}
