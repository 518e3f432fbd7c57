package deploy

import (
	"github.com/prometheus/client_golang/prometheus"
)

// promMetrics exports deployments on the gateway's Prometheus registry.
type promMetrics struct {
	m        *Manager
	requests *prometheus.CounterVec
	ttft     *prometheus.HistogramVec
	e2e      *prometheus.HistogramVec
	state    *prometheus.Desc
	replicas *prometheus.Desc
	inflight *prometheus.Desc
	queued   *prometheus.Desc
	rpsDesc  *prometheus.Desc
}

func newPromMetrics(reg prometheus.Registerer, m *Manager) (*promMetrics, error) {
	buckets := []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	p := &promMetrics{m: m,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "raygw_deployment_requests_total",
			Help: "Requests routed to a deployment's replicas, by replica and upstream status code."}, []string{"deployment", "replica", "code"}),
		ttft: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "raygw_deployment_time_to_first_byte_seconds",
			Help: "Time from routing to the replica's first response byte (first token when streaming).", Buckets: buckets}, []string{"deployment"}),
		e2e: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "raygw_deployment_request_duration_seconds",
			Help: "Time from routing to the end of the replica's answer.", Buckets: buckets}, []string{"deployment"}),
		state:    prometheus.NewDesc("raygw_deployment_state", "1 for the deployment's current state.", []string{"deployment", "state"}, nil),
		replicas: prometheus.NewDesc("raygw_deployment_replicas", "Replicas by status.", []string{"deployment", "status"}, nil),
		inflight: prometheus.NewDesc("raygw_deployment_inflight_requests", "Requests in flight on the deployment's replicas.", []string{"deployment", "replica"}, nil),
		queued:   prometheus.NewDesc("raygw_deployment_queued_requests", "Requests beyond the replicas' parallel slots (waiting inside the engines).", []string{"deployment"}, nil),
		rpsDesc:  prometheus.NewDesc("raygw_deployment_requests_per_second", "Requests per second over the last 5 minutes.", []string{"deployment"}, nil),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{p.requests, p.ttft, p.e2e, p} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return p, nil
}

// Describe implements prometheus.Collector.
func (p *promMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{p.state, p.replicas, p.inflight, p.queued, p.rpsDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (p *promMetrics) Collect(ch chan<- prometheus.Metric) {
	for _, st := range p.m.List() {
		for _, s := range []State{Deploying, Running, Degraded, Unhealthy, Deleting} {
			v := 0.0
			if st.Status == s {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(p.state, prometheus.GaugeValue, v, st.Name, string(s))
		}
		byStatus := map[ReplicaState]int{ReplicaStarting: 0, ReplicaHealthy: 0, ReplicaUnhealthy: 0}
		for _, r := range st.ReplicasStatus {
			byStatus[r.Status]++
			ch <- prometheus.MustNewConstMetric(p.inflight, prometheus.GaugeValue, float64(r.InFlight), st.Name, r.ID)
		}
		for k, v := range byStatus {
			ch <- prometheus.MustNewConstMetric(p.replicas, prometheus.GaugeValue, float64(v), st.Name, string(k))
		}
		if m, err := p.m.Metrics(st.Name); err == nil {
			ch <- prometheus.MustNewConstMetric(p.queued, prometheus.GaugeValue, float64(m.Queued), st.Name)
			ch <- prometheus.MustNewConstMetric(p.rpsDesc, prometheus.GaugeValue, m.RequestsPerSecond, st.Name)
		}
	}
}

func (p *promMetrics) forget(name string) {
	l := prometheus.Labels{"deployment": name}
	p.requests.DeletePartialMatch(l)
	p.ttft.DeletePartialMatch(l)
	p.e2e.DeletePartialMatch(l)
}
