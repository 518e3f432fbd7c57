package routing

import (
	"fmt"
	"testing"
)

func eps(spec ...string) []*Endpoint {
	var out []*Endpoint
	for i, s := range spec {
		e := &Endpoint{ID: fmt.Sprintf("r%d", i)}
		var inflight int
		fmt.Sscanf(s[1:], "%d", &inflight)
		e.InFlight = inflight
		switch s[0] {
		case 'h':
			e.Healthy = true
		case 'd':
			e.Healthy, e.Draining = true, true
		}
		out = append(out, e)
	}
	return out
}

func TestPick(t *testing.T) {
	tests := []struct {
		name    string
		eps     []*Endpoint
		exclude []string
		want    string // "" means ErrNoEndpoint
	}{
		{"least in flight", eps("h3", "h1", "h2"), nil, "r1"},
		{"unhealthy skipped", eps("u0", "h5"), nil, "r1"},
		{"draining skipped", eps("d0", "h5"), nil, "r1"},
		{"excluded skipped", eps("h0", "h5"), []string{"r0"}, "r1"},
		{"none", eps("u0", "d0"), nil, ""},
		{"empty", nil, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, err := Default().Pick(&Request{Exclude: tc.exclude}, tc.eps, 0)
			if tc.want == "" {
				if err != ErrNoEndpoint {
					t.Fatalf("err = %v, want ErrNoEndpoint", err)
				}
				return
			}
			if err != nil || e.ID != tc.want {
				t.Fatalf("picked %v (%v), want %s", e, err, tc.want)
			}
		})
	}
}

// affinity is a stand-in for a prefix-affinity scorer: it prefers r0.
type affinity struct{}

func (affinity) Score(_ *Request, eps []*Endpoint) []float64 {
	out := make([]float64, len(eps))
	for i, e := range eps {
		if e.ID == "r0" {
			out[i] = 1
		}
	}
	return out
}

func TestWeightedScorersCompose(t *testing.T) {
	r := &Router{Filters: []Filter{Serving{}}, Scorers: []Weighted{{LeastPending{}, 1}, {affinity{}, 2}}}
	e, _ := r.Pick(&Request{}, eps("h2", "h0"), 0)
	if e.ID != "r0" {
		t.Fatalf("a heavier affinity scorer should win over load: %s", e.ID)
	}
	r.Scorers[1].Weight = 0.1
	e, _ = r.Pick(&Request{}, eps("h2", "h0"), 0)
	if e.ID != "r1" {
		t.Fatalf("a light affinity scorer should lose to load: %s", e.ID)
	}
}

func TestPoolSpreadsAndCounts(t *testing.T) {
	p := NewPool(nil)
	for i := 0; i < 3; i++ {
		p.Upsert(fmt.Sprintf("r%d", i), "http://x", true, 1)
	}
	var leases []*Lease
	for i := 0; i < 6; i++ {
		l, err := p.Acquire(&Request{})
		if err != nil {
			t.Fatal(err)
		}
		leases = append(leases, l)
	}
	for _, e := range p.Snapshot() {
		if e.InFlight != 2 || e.Requests != 2 {
			t.Fatalf("6 held requests over 3 replicas should be 2 each: %+v", p.Snapshot())
		}
	}
	p.SetDraining("r0")
	for _, l := range leases {
		l.Release()
		l.Release() // idempotent
	}
	for i := 0; i < 4; i++ {
		l, _ := p.Acquire(&Request{})
		if l.ID() == "r0" {
			t.Fatal("picked a draining replica")
		}
		l.Release()
	}
	if p.InFlight("r0") != 0 || p.InFlight("r1") != 0 {
		t.Fatalf("in flight after release: %+v", p.Snapshot())
	}
	p.Remove("r1")
	if len(p.Snapshot()) != 2 {
		t.Fatal("remove")
	}
}

func BenchmarkAcquireRelease(b *testing.B) {
	p := NewPool(nil)
	for i := 0; i < 8; i++ {
		p.Upsert(fmt.Sprintf("r%d", i), "http://x", true, 4)
	}
	b.ReportAllocs()
	for b.Loop() {
		l, _ := p.Acquire(&Request{})
		l.Release()
	}
}

func TestPoolServing(t *testing.T) {
	p := NewPool(nil)
	if p.Serving() {
		t.Fatal("empty pool serving")
	}
	p.Upsert("a", "http://a", false, 1)
	if p.Serving() {
		t.Fatal("unhealthy endpoint serving")
	}
	p.Upsert("a", "http://a", true, 1)
	if !p.Serving() {
		t.Fatal("healthy endpoint not serving")
	}
	p.SetDraining("a")
	if p.Serving() {
		t.Fatal("draining endpoint serving")
	}
}

func TestPoolCapacity(t *testing.T) {
	p := NewPool(nil)
	p.Upsert("a", "http://a", true, 2)
	p.Upsert("b", "http://b", true, 2)
	p.Upsert("c", "http://c", false, 2)
	if n, known := p.Capacity(); n != 4 || !known {
		t.Fatalf("capacity %d %v, want 4 known", n, known)
	}
	p.SetDraining("b")
	if n, _ := p.Capacity(); n != 2 {
		t.Fatalf("capacity with one draining %d, want 2", n)
	}
	p.Upsert("d", "http://d", true, 0)
	if _, known := p.Capacity(); known {
		t.Fatal("an endpoint of unknown slots makes the capacity unknown")
	}
}
