// Package routing owns replica picking for a deployment: filters drop
// endpoints that must not serve a request (unhealthy, draining, already
// tried), scorers give each remaining endpoint a 0..1 score (least pending,
// and prefix affinity: the replica that last served a prompt prefix has it
// in its prompt cache), and one picker chooses the best weighted total. Pool keeps the endpoint set and in-flight
// counts under one lock so a pick and its in-flight increment are atomic.
package routing

import (
	"errors"
	"sync"
)

// ErrNoEndpoint means no endpoint passed the filters.
var ErrNoEndpoint = errors.New("no healthy replica")

// Endpoint is one replica as the router sees it.
type Endpoint struct {
	ID       string
	Address  string
	Healthy  bool
	Draining bool
	InFlight int
	Slots    int   // concurrent requests the engine runs; 0 unknown
	Requests int64 // requests routed here
}

// Request is what filters and scorers may look at.
type Request struct {
	// Exclude lists endpoint ids not to use (a failed first try).
	Exclude []string
	// PrefixKey hashes the prompt's stable prefix (system prompt, leading
	// messages); 0 when unknown. Affinity scorers read it.
	PrefixKey uint64
}

// Recorder is a scorer that learns from each pick (affinity indexes).
type Recorder interface {
	Record(req *Request, ep *Endpoint)
}

// Filter keeps the endpoints that may serve req. It must not modify eps;
// it may return eps itself when every endpoint passes.
type Filter interface {
	Filter(req *Request, eps []*Endpoint) []*Endpoint
}

// Scorer scores each endpoint in 0..1 (higher is better).
type Scorer interface {
	Score(req *Request, eps []*Endpoint) []float64
}

// Weighted is a scorer with its weight.
type Weighted struct {
	Scorer Scorer
	Weight float64
}

// Router is a filter -> score -> pick pipeline.
type Router struct {
	Filters []Filter
	Scorers []Weighted
}

// Default is healthy+not-excluded filtering with least-pending scoring.
func Default() *Router {
	return &Router{Filters: []Filter{Serving{}, Excluded{}}, Scorers: []Weighted{{LeastPending{}, 1}}}
}

// WithAffinity is Default plus a prefix-affinity scorer of the given weight.
func WithAffinity(a *PrefixAffinity, weight float64) *Router {
	r := Default()
	r.Scorers = append(r.Scorers, Weighted{a, weight})
	return r
}

// Pick returns the chosen endpoint. Ties go to the earliest endpoint after
// offset (rotate offset to spread equal loads).
func (r *Router) Pick(req *Request, eps []*Endpoint, offset int) (*Endpoint, error) {
	for _, f := range r.Filters {
		eps = f.Filter(req, eps)
	}
	if len(eps) == 0 {
		return nil, ErrNoEndpoint
	}
	if len(eps) == 1 {
		// The only candidate wins whatever the scores; a Recorder still
		// learns the pick in Pool.Acquire.
		return eps[0], nil
	}
	var buf [8]float64 // spares an allocation for small pools
	var total []float64
	if len(eps) <= len(buf) {
		total = buf[:len(eps)]
	} else {
		total = make([]float64, len(eps))
	}
	for _, w := range r.Scorers {
		for i, s := range w.Scorer.Score(req, eps) {
			total[i] += w.Weight * s
		}
	}
	n := len(eps)
	best := offset % n
	if best < 0 {
		best += n
	}
	for k := 1; k < n; k++ {
		i := (offset + k) % n
		if i < 0 {
			i += n
		}
		if total[i] > total[best] {
			best = i
		}
	}
	return eps[best], nil
}

// Serving keeps healthy endpoints that are not draining.
type Serving struct{}

// Filter implements Filter.
func (Serving) Filter(_ *Request, eps []*Endpoint) []*Endpoint {
	for i, e := range eps {
		if !e.Healthy || e.Draining {
			// Copy only when some endpoint is dropped.
			out := make([]*Endpoint, i, len(eps)-1)
			copy(out, eps[:i])
			for _, e := range eps[i+1:] {
				if e.Healthy && !e.Draining {
					out = append(out, e)
				}
			}
			return out
		}
	}
	return eps
}

// Excluded drops the endpoints the request names in Exclude.
type Excluded struct{}

// Filter implements Filter.
func (Excluded) Filter(req *Request, eps []*Endpoint) []*Endpoint {
	if len(req.Exclude) == 0 {
		return eps
	}
	out := eps[:0:0]
	for _, e := range eps {
		skip := false
		for _, id := range req.Exclude {
			skip = skip || e.ID == id
		}
		if !skip {
			out = append(out, e)
		}
	}
	return out
}

// LeastPending prefers endpoints with fewer in-flight requests: 1/(1+n).
type LeastPending struct{}

// Score implements Scorer.
func (LeastPending) Score(_ *Request, eps []*Endpoint) []float64 {
	out := make([]float64, len(eps))
	for i, e := range eps {
		out[i] = 1 / float64(1+e.InFlight)
	}
	return out
}

// Pool is a deployment's endpoint set with in-flight accounting.
type Pool struct {
	router *Router
	mu     sync.Mutex
	eps    []*Endpoint
	turn   int
}

// NewPool returns an empty pool using router (Default when nil).
func NewPool(router *Router) *Pool {
	if router == nil {
		router = Default()
	}
	return &Pool{router: router}
}

// Lease is one request's hold on an endpoint; Release it exactly once.
type Lease struct {
	pool *Pool
	ep   *Endpoint
	once sync.Once
}

// ID is the leased endpoint's id.
func (l *Lease) ID() string { return l.ep.ID }

// Address is the leased endpoint's base URL.
func (l *Lease) Address() string { return l.ep.Address }

// Release returns the in-flight slot.
func (l *Lease) Release() {
	l.once.Do(func() {
		l.pool.mu.Lock()
		l.ep.InFlight--
		l.pool.mu.Unlock()
	})
}

// Acquire picks an endpoint for req and counts the request in flight there.
func (p *Pool) Acquire(req *Request) (*Lease, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.turn++
	ep, err := p.router.Pick(req, p.eps, p.turn)
	if err != nil {
		return nil, err
	}
	ep.InFlight++
	ep.Requests++
	for _, w := range p.router.Scorers {
		if r, ok := w.Scorer.(Recorder); ok {
			r.Record(req, ep)
		}
	}
	return &Lease{pool: p, ep: ep}, nil
}

// Upsert adds an endpoint or updates its address and health.
func (p *Pool) Upsert(id, address string, healthy bool, slots int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.eps {
		if e.ID == id {
			e.Address, e.Healthy, e.Slots = address, healthy, slots
			return
		}
	}
	p.eps = append(p.eps, &Endpoint{ID: id, Address: address, Healthy: healthy, Slots: slots})
}

// SetDraining stops new requests to id (in-flight ones continue).
func (p *Pool) SetDraining(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.eps {
		if e.ID == id {
			e.Draining = true
		}
	}
}

// Remove drops id from the pool.
func (p *Pool) Remove(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, e := range p.eps {
		if e.ID == id {
			p.eps = append(p.eps[:i], p.eps[i+1:]...)
			return
		}
	}
}

// InFlight is the in-flight count of id (0 when unknown).
func (p *Pool) InFlight(id string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.eps {
		if e.ID == id {
			return e.InFlight
		}
	}
	return 0
}

// Serving reports whether some endpoint is healthy and not draining.
func (p *Pool) Serving() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.eps {
		if e.Healthy && !e.Draining {
			return true
		}
	}
	return false
}

// Capacity is the number of requests the serving endpoints run at once
// (the sum of their slots); known is false when some serving endpoint's
// slot count is unknown (0).
func (p *Pool) Capacity() (n int, known bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	known = true
	for _, e := range p.eps {
		if e.Healthy && !e.Draining {
			n += e.Slots
			known = known && e.Slots > 0
		}
	}
	return n, known
}

// Snapshot copies the endpoints.
func (p *Pool) Snapshot() []Endpoint {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Endpoint, len(p.eps))
	for i, e := range p.eps {
		out[i] = *e
	}
	return out
}
