package deploy

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/raygw/raygw/internal/engine/openaicompat"
	"github.com/raygw/raygw/internal/routing"
)

// routeTransport sends each request to the deployment's healthy replica
// chosen by least pending and prompt-prefix affinity (the prefix key rides
// in the request context, see routing.WithPrefix), counts it in flight
// until its body is closed, and tries one other replica when the first
// could not be connected to (no byte sent).
type routeTransport struct {
	d    *deployment
	base http.RoundTripper
	// addrs caches replica base URLs parsed by retarget; obs the metric
	// series observe updates. Both fill lazily.
	addrs addrCache
	obs   observers
}

// errNoReplica is returned when no replica may serve.
var errNoReplica = errors.New("no healthy replica")

// routed is one request's routing state and its tracked answer body,
// allocated together.
type routed struct {
	rr routing.Request
	tb trackedBody
}

// RoundTrip implements http.RoundTripper.
func (t *routeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	d := t.d
	start := d.m.opt.Now()
	c := &routed{rr: routing.Request{PrefixKey: routing.PrefixFrom(req.Context())}}
	rr := &c.rr
	var lastErr error
	for attempt := 0; attempt < 2; attempt++ {
		lease, err := d.pool.Acquire(rr)
		if err != nil {
			if lastErr != nil {
				return nil, lastErr
			}
			return nil, errNoReplica
		}
		base, err := t.addrs.parse(lease.Address())
		if err != nil {
			lease.Release()
			return nil, err
		}
		out, err := retarget(req, base, attempt == 0)
		if err != nil {
			lease.Release()
			return nil, err
		}
		resp, err := t.base.RoundTrip(out)
		if err != nil {
			lease.Release()
			if openaicompat.IsConnectError(err) && attempt == 0 {
				d.log.Warn("replica refused the connection; retrying on another", "replica", lease.ID(), "err", err)
				rr.Exclude = append(rr.Exclude, lease.ID())
				lastErr = err
				continue
			}
			t.observe(lease.ID(), http.StatusBadGateway, 0, d.m.opt.Now().Sub(start))
			return nil, err
		}
		c.tb = trackedBody{ReadCloser: resp.Body, t: t, lease: lease, status: resp.StatusCode, start: start}
		resp.Body = &c.tb
		return resp, nil
	}
	return nil, lastErr
}

// retarget copies req onto the replica's base URL. The copy shares req's
// header, which no transport modifies. The first try sends req's own
// unread body; a retry rewinds it with GetBody.
func retarget(req *http.Request, base *url.URL, first bool) (*http.Request, error) {
	out := new(http.Request)
	*out = *req
	u := *req.URL
	u.Scheme, u.Host = base.Scheme, base.Host
	out.URL, out.Host = &u, ""
	if req.Body != nil && req.GetBody != nil && !first {
		var err error
		if out.Body, err = req.GetBody(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// addrCache maps replica addresses to their parsed URLs. It is bounded:
// when full (replicas come and go over a long run) it starts over.
type addrCache struct {
	mu sync.RWMutex
	m  map[string]*url.URL
}

const addrCacheSize = 64

// parse returns address parsed; the result is shared and read-only.
func (c *addrCache) parse(address string) (*url.URL, error) {
	c.mu.RLock()
	u, ok := c.m[address]
	c.mu.RUnlock()
	if ok {
		return u, nil
	}
	u, err := url.Parse(address)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= addrCacheSize {
		c.m = make(map[string]*url.URL)
	}
	c.m[address] = u
	c.mu.Unlock()
	return u, nil
}

// observers caches a deployment's metric series so a request does not hash
// its labels: the latency histograms and a counter per replica and code.
type observers struct {
	e2eOnce, ttftOnce sync.Once
	e2e, ttft         prometheus.Observer
	mu                sync.RWMutex
	requests          map[replicaCode]prometheus.Counter
}

type replicaCode struct {
	replica string
	code    int
}

// counter returns the requests counter of replica and code.
func (o *observers) counter(pm *promMetrics, dep, replica string, code int) prometheus.Counter {
	k := replicaCode{replica, code}
	o.mu.RLock()
	c, ok := o.requests[k]
	o.mu.RUnlock()
	if ok {
		return c
	}
	c = pm.requests.WithLabelValues(dep, replica, strconv.Itoa(code))
	o.mu.Lock()
	if o.requests == nil || len(o.requests) >= maxCachedCounters {
		o.requests = make(map[replicaCode]prometheus.Counter)
	}
	o.requests[k] = c
	o.mu.Unlock()
	return c
}

// maxCachedCounters bounds observers.requests (replicas are replaced over
// a long run); past it the cache starts over.
const maxCachedCounters = 256

func (t *routeTransport) observe(replica string, status int, ttft, e2e time.Duration) {
	d := t.d
	d.win.record(replica, status, ttft, e2e)
	pm := d.m.metrics
	o := &t.obs
	o.counter(pm, d.name, replica, status).Inc()
	if status < 400 {
		// Each series appears at its first observation, as before caching.
		o.e2eOnce.Do(func() { o.e2e = pm.e2e.WithLabelValues(d.name) })
		o.e2e.Observe(e2e.Seconds())
		if ttft > 0 {
			o.ttftOnce.Do(func() { o.ttft = pm.ttft.WithLabelValues(d.name) })
			o.ttft.Observe(ttft.Seconds())
		}
	}
}

// trackedBody releases the replica and records metrics when closed.
type trackedBody struct {
	io.ReadCloser
	t      *routeTransport
	lease  *routing.Lease
	status int
	start  time.Time
	first  time.Duration
	once   sync.Once
}

func (b *trackedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 && b.first == 0 {
		b.first = b.t.d.m.opt.Now().Sub(b.start)
	}
	return n, err
}

func (b *trackedBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(func() {
		b.lease.Release()
		b.t.observe(b.lease.ID(), b.status, b.first, b.t.d.m.opt.Now().Sub(b.start))
	})
	return err
}
