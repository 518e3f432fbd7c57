package deploy

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

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
}

// errNoReplica is returned when no replica may serve.
var errNoReplica = errors.New("no healthy replica")

// RoundTrip implements http.RoundTripper.
func (t *routeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	d := t.d
	start := d.m.opt.Now()
	rr := &routing.Request{PrefixKey: routing.PrefixFrom(req.Context())}
	var lastErr error
	for attempt := 0; attempt < 2; attempt++ {
		lease, err := d.pool.Acquire(rr)
		if err != nil {
			if lastErr != nil {
				return nil, lastErr
			}
			return nil, errNoReplica
		}
		out, err := retarget(req, lease.Address())
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
		resp.Body = &trackedBody{ReadCloser: resp.Body, t: t, lease: lease, status: resp.StatusCode, start: start}
		return resp, nil
	}
	return nil, lastErr
}

// retarget copies req onto the replica's base URL, rewinding the body.
func retarget(req *http.Request, address string) (*http.Request, error) {
	u, err := url.Parse(address)
	if err != nil {
		return nil, err
	}
	out := req.Clone(req.Context())
	out.URL.Scheme, out.URL.Host, out.Host = u.Scheme, u.Host, ""
	if req.Body != nil && req.GetBody != nil {
		if out.Body, err = req.GetBody(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (t *routeTransport) observe(replica string, status int, ttft, e2e time.Duration) {
	d := t.d
	d.win.record(replica, status, ttft, e2e)
	pm := d.m.metrics
	pm.requests.WithLabelValues(d.name, replica, strconv.Itoa(status)).Inc()
	if status < 400 {
		pm.e2e.WithLabelValues(d.name).Observe(e2e.Seconds())
		if ttft > 0 {
			pm.ttft.WithLabelValues(d.name).Observe(ttft.Seconds())
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
