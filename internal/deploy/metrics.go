package deploy

import (
	"sort"
	"sync"
	"time"
)

// windowSeconds is the span of the API's rates and percentiles.
const windowSeconds = 300

// latencySamples bounds the samples kept for percentiles.
const latencySamples = 2048

// counts is a per-second counter over the last windowSeconds.
type counts [windowSeconds]struct {
	sec int64
	n   int64
}

func (c *counts) add(sec int64) {
	b := &c[sec%windowSeconds]
	if b.sec != sec {
		b.sec, b.n = sec, 0
	}
	b.n++
}

func (c *counts) sum(now int64) int64 {
	var n int64
	for _, b := range c {
		if now-b.sec < windowSeconds && b.sec <= now {
			n += b.n
		}
	}
	return n
}

type sample struct {
	at        int64
	ttft, e2e time.Duration
}

// window aggregates one deployment's requests over the last five minutes.
type window struct {
	now      func() time.Time
	mu       sync.Mutex
	started  time.Time
	req      counts
	c4, c5   counts
	replicas map[string]*counts
	lat      []sample
	pos      int
}

func newWindow(now func() time.Time) *window {
	return &window{now: now, started: now(), replicas: map[string]*counts{}, lat: make([]sample, 0, latencySamples)}
}

// record adds one finished request; ttft is 0 when nothing was streamed.
func (w *window) record(replica string, status int, ttft, e2e time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	sec := w.now().Unix()
	w.req.add(sec)
	switch {
	case status >= 500:
		w.c5.add(sec)
	case status >= 400:
		w.c4.add(sec)
	}
	if replica != "" {
		c := w.replicas[replica]
		if c == nil {
			c = &counts{}
			w.replicas[replica] = c
		}
		c.add(sec)
	}
	if status < 400 {
		s := sample{at: sec, ttft: ttft, e2e: e2e}
		if len(w.lat) < latencySamples {
			w.lat = append(w.lat, s)
		} else {
			w.lat[w.pos] = s
			w.pos = (w.pos + 1) % latencySamples
		}
	}
}

// Percentiles are latencies in milliseconds.
type Percentiles struct {
	P50MS float64 `json:"p50_ms"`
	P99MS float64 `json:"p99_ms"`
}

// Metrics is a deployment's dashboard numbers over the last five minutes.
type Metrics struct {
	Deployment        string           `json:"deployment"`
	Status            State            `json:"status"`
	WindowSeconds     int              `json:"window_seconds"`
	Requests          int64            `json:"requests"`
	RequestsPerSecond float64          `json:"requests_per_second"`
	TTFT              Percentiles      `json:"ttft"`
	E2E               Percentiles      `json:"e2e_latency"`
	ErrorRate4xx      float64          `json:"error_rate_4xx"`
	ErrorRate5xx      float64          `json:"error_rate_5xx"`
	InFlight          int              `json:"in_flight"`
	Queued            int              `json:"queued"`
	Replicas          []ReplicaMetrics `json:"replicas"`
}

// ReplicaMetrics is one replica's share.
type ReplicaMetrics struct {
	ID                string       `json:"id"`
	Status            ReplicaState `json:"status"`
	InFlight          int          `json:"in_flight"`
	Requests          int64        `json:"requests"`
	RequestsPerSecond float64      `json:"requests_per_second"`
}

// summary fills the windowed numbers of m.
func (w *window) summary(m *Metrics) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	sec := now.Unix()
	span := min(float64(windowSeconds), max(1, now.Sub(w.started).Seconds()))
	m.WindowSeconds = windowSeconds
	m.Requests = w.req.sum(sec)
	m.RequestsPerSecond = float64(m.Requests) / span
	if m.Requests > 0 {
		m.ErrorRate4xx = float64(w.c4.sum(sec)) / float64(m.Requests)
		m.ErrorRate5xx = float64(w.c5.sum(sec)) / float64(m.Requests)
	}
	var ttft, e2e []time.Duration
	for _, s := range w.lat {
		if sec-s.at < windowSeconds {
			e2e = append(e2e, s.e2e)
			if s.ttft > 0 {
				ttft = append(ttft, s.ttft)
			}
		}
	}
	m.TTFT, m.E2E = percentiles(ttft), percentiles(e2e)
	for i := range m.Replicas {
		if c := w.replicas[m.Replicas[i].ID]; c != nil {
			m.Replicas[i].RequestsPerSecond = float64(c.sum(sec)) / span
		}
	}
}

func (w *window) forgetReplica(id string) {
	w.mu.Lock()
	delete(w.replicas, id)
	w.mu.Unlock()
}

// percentiles uses the nearest-rank method.
func percentiles(d []time.Duration) Percentiles {
	if len(d) == 0 {
		return Percentiles{}
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	rank := func(p float64) float64 {
		i := int(p*float64(len(d))+0.999999) - 1
		i = max(0, min(i, len(d)-1))
		return float64(d[i].Microseconds()) / 1000
	}
	return Percentiles{P50MS: rank(0.50), P99MS: rank(0.99)}
}

// metrics is the dashboard view of one deployment.
func (d *deployment) metrics() Metrics {
	st := d.status()
	m := Metrics{Deployment: d.name, Status: st.Status, Replicas: []ReplicaMetrics{}}
	slots := slotsOf(st.Spec, d.m.opt.Defaults)
	for _, r := range st.ReplicasStatus {
		m.InFlight += r.InFlight
		if slots > 0 && r.InFlight > slots {
			m.Queued += r.InFlight - slots
		}
		m.Replicas = append(m.Replicas, ReplicaMetrics{ID: r.ID, Status: r.Status, InFlight: r.InFlight, Requests: r.Requests})
	}
	if f, ok := d.queued.Load().(func() int); ok {
		m.Queued += f() // waiting in the gateway's scheduler
	}
	d.win.summary(&m)
	return m
}

// Metrics returns one deployment's dashboard numbers.
func (m *Manager) Metrics(name string) (Metrics, error) {
	d, err := m.get(name)
	if err != nil {
		return Metrics{}, err
	}
	return d.metrics(), nil
}
