package routing

import (
	"context"

	lru "github.com/hashicorp/golang-lru/v2"
)

// AffinityWeight is the prefix-affinity weight deployments use next to
// least pending (weight 1, score 1/(1+in flight)): a replica warm for the
// prefix wins over an idle cold one while it has at most one request in
// flight, and loses once it has two, so affinity never builds a queue.
const AffinityWeight = 0.6

// PrefixAffinity scores 1 for the endpoint that last served the request's
// prompt prefix and 0 for the others. Its index is bounded (least recently
// used prefixes are forgotten) and safe for concurrent use.
type PrefixAffinity struct {
	last *lru.Cache[uint64, string]
}

var (
	_ Scorer   = (*PrefixAffinity)(nil)
	_ Recorder = (*PrefixAffinity)(nil)
)

// NewPrefixAffinity remembers up to size prefixes (at least 1).
func NewPrefixAffinity(size int) *PrefixAffinity {
	c, _ := lru.New[uint64, string](max(1, size))
	return &PrefixAffinity{last: c}
}

// Score implements Scorer.
func (a *PrefixAffinity) Score(req *Request, eps []*Endpoint) []float64 {
	out := make([]float64, len(eps))
	if req.PrefixKey == 0 {
		return out
	}
	id, ok := a.last.Get(req.PrefixKey)
	if !ok {
		return out
	}
	for i, e := range eps {
		if e.ID == id {
			out[i] = 1
		}
	}
	return out
}

// Record implements Recorder: ep now holds the request's prefix.
func (a *PrefixAffinity) Record(req *Request, ep *Endpoint) {
	if req.PrefixKey != 0 {
		a.last.Add(req.PrefixKey, ep.ID)
	}
}

type prefixKey struct{}

// WithPrefix returns ctx carrying a prompt-prefix key for the router.
func WithPrefix(ctx context.Context, key uint64) context.Context {
	if key == 0 {
		return ctx
	}
	return context.WithValue(ctx, prefixKey{}, key)
}

// PrefixFrom returns the prompt-prefix key in ctx (0: none).
func PrefixFrom(ctx context.Context) uint64 {
	k, _ := ctx.Value(prefixKey{}).(uint64)
	return k
}
