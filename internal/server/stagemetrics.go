package server

import "github.com/prometheus/client_golang/prometheus"

// stageCollector exports the pipeline stages' own counters at scrape time,
// so the hot path does no metric work for them.
type stageCollector struct {
	st    *Stages
	descs map[string]*prometheus.Desc
}

var _ prometheus.Collector = (*stageCollector)(nil)

func newStageCollector(st *Stages) *stageCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("raygw_"+name, help, labels, nil)
	}
	return &stageCollector{st: st, descs: map[string]*prometheus.Desc{
		"cache_requests":  d("cache_requests_total", "Response cache lookups by result (hit, miss).", "result"),
		"cache_removed":   d("cache_removed_total", "Response cache entries removed, by reason (evicted, expired, rejected).", "reason"),
		"cache_entries":   d("cache_entries", "Response cache entries."),
		"cache_bytes":     d("cache_bytes", "Response cache size in bytes."),
		"sched_jobs":      d("scheduler_jobs", "Scheduler jobs by state (running, queued).", "state"),
		"sched_tokens":    d("scheduler_tokens", "Estimated tokens held by state (running, queued).", "state"),
		"sched_outcomes":  d("scheduler_outcomes_total", "Scheduler decisions by outcome.", "outcome"),
		"dedupe_joins":    d("dedupe_joins_total", "In-flight dedupe joins by role (leader, follower).", "role"),
		"dedupe_canceled": d("dedupe_canceled_total", "Shared runs cancelled because every waiter left."),
	}}
}

// Describe sends every metric description.
func (c *stageCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect reads the stages' counters.
func (c *stageCollector) Collect(ch chan<- prometheus.Metric) {
	cnt := func(name string, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(c.descs[name], prometheus.CounterValue, v, l...)
	}
	gauge := func(name string, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(c.descs[name], prometheus.GaugeValue, v, l...)
	}
	if c.st.Cache != nil {
		s := c.st.Cache.Stats()
		cnt("cache_requests", float64(s.Hits), "hit")
		cnt("cache_requests", float64(s.Misses), "miss")
		cnt("cache_removed", float64(s.Evictions), "evicted")
		cnt("cache_removed", float64(s.Expired), "expired")
		cnt("cache_removed", float64(s.Rejected), "rejected")
		gauge("cache_entries", float64(s.Entries))
		gauge("cache_bytes", float64(s.Bytes))
	}
	if c.st.Sched != nil {
		s := c.st.Sched.Stats()
		gauge("sched_jobs", float64(s.Running), "running")
		gauge("sched_jobs", float64(s.Queued), "queued")
		gauge("sched_tokens", float64(s.InflightTokens), "running")
		gauge("sched_tokens", float64(s.QueuedTokens), "queued")
		for outcome, v := range map[string]uint64{"admitted": s.Admitted, "promoted": s.Promoted,
			"rejected_too_large": s.RejectedTooLarge, "rejected_full": s.RejectedFull,
			"timed_out": s.TimedOut, "canceled": s.Canceled} {
			cnt("sched_outcomes", float64(v), outcome)
		}
	}
	if c.st.Dedupe != nil {
		s := c.st.Dedupe.Stats()
		cnt("dedupe_joins", float64(s.Leaders), "leader")
		cnt("dedupe_joins", float64(s.Followers), "follower")
		cnt("dedupe_canceled", float64(s.Canceled))
	}
}
