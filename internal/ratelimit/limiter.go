// Package ratelimit owns per-client request limits: a sliding-window counter
// per client key, at most MaxKeys keys tracked (least recently seen evicted
// first, so a flood of distinct keys cannot grow memory), the key strategies
// (ip, api-key, ip+api-key) and the HTTP middleware that answers 429.
//
// Why a sliding-window counter rather than golang.org/x/time/rate: the
// setting is "MaxRequests per WindowMS", and the X-RateLimit-* headers speak
// in requests left and seconds to reset; a window counter answers both
// exactly, while a token bucket refills continuously and would have to be
// translated back. A plain fixed window lets a client send 2×MaxRequests
// across a window boundary; weighting the previous window's count by how much
// of it still overlaps the sliding window removes that burst. The state is
// two counters and a start time per key — a few dozen bytes.
package ratelimit

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// ErrOptions is returned by New for unusable options.
var ErrOptions = errors.New("ratelimit: invalid options")

// Options configure a Limiter.
type Options struct {
	Window  time.Duration    // length of one window (RAY_RATE_LIMIT_WINDOW_MS)
	Max     int              // requests allowed per window (RAY_RATE_LIMIT_MAX_REQUESTS)
	MaxKeys int              // client keys tracked at once (RAY_RATE_LIMIT_MAX_KEYS)
	Now     func() time.Time // clock; time.Now when nil
}

// Decision is the outcome of one Allow.
type Decision struct {
	Allowed    bool
	Limit      int           // Max
	Remaining  int           // requests still allowed now
	Reset      time.Duration // until the key's count is back to zero
	RetryAfter time.Duration // until the next request would be allowed (0 when Allowed)
}

// Stats are counters for metrics and tests.
type Stats struct {
	Tracked   int    // keys currently tracked
	Evictions uint64 // keys dropped to stay within MaxKeys
	Allowed   uint64
	Denied    uint64
}

// Limiter is a set of sliding windows keyed by client. Safe for concurrent use.
type Limiter struct {
	window int64 // ns
	max    int64
	now    func() time.Time

	mu    sync.Mutex
	lru   *simplelru.LRU[string, counter]
	stats Stats
}

// counter is one key's state: requests in the window starting at start and
// in the window before it.
type counter struct {
	start     int64 // unix ns, a multiple of the window length
	cur, prev int64
}

// New returns a Limiter for opts.
func New(opts Options) (*Limiter, error) {
	if opts.Window <= 0 || opts.Max < 1 || opts.MaxKeys < 1 {
		return nil, fmt.Errorf("%w: window %v, max %d, max keys %d must all be positive", ErrOptions, opts.Window, opts.Max, opts.MaxKeys)
	}
	if int64(opts.Max) > math.MaxInt64/int64(opts.Window)/2 {
		return nil, fmt.Errorf("%w: max %d × window %v is too large", ErrOptions, opts.Max, opts.Window)
	}
	l := &Limiter{window: int64(opts.Window), max: int64(opts.Max), now: opts.Now}
	if l.now == nil {
		l.now = time.Now
	}
	lru, err := simplelru.NewLRU[string, counter](opts.MaxKeys, func(string, counter) { l.stats.Evictions++ })
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrOptions, err)
	}
	l.lru = lru
	return l, nil
}

// Allow counts one request for key if the key is under its limit. Denied
// requests are not counted, so a client that retries after RetryAfter gets in.
func (l *Limiter) Allow(key string) Decision {
	now := l.now().UnixNano()
	l.mu.Lock()
	defer l.mu.Unlock()
	c, _ := l.lru.Get(key)
	d := l.decide(&c, now)
	l.lru.Add(key, c)
	if d.Allowed {
		l.stats.Allowed++
	} else {
		l.stats.Denied++
	}
	return d
}

// decide rolls c forward to now, admits one request if the weighted count
// allows it, and computes the headers' numbers. All arithmetic is integer:
// the sliding estimate prev×(W−e)/W + cur is compared as
// prev×(W−e) + cur×W ≤ (max−1)×W, where e is the time into the window.
func (l *Limiter) decide(c *counter, now int64) Decision {
	W := l.window
	start := now - mod(now, W)
	switch {
	case c.start == start:
	case c.start == start-W:
		c.prev, c.cur = c.cur, 0
	default:
		c.prev, c.cur = 0, 0
	}
	c.start = start
	e := now - start
	d := Decision{Limit: int(l.max)}
	weighted := c.prev*(W-e) + c.cur*W
	if weighted+W <= l.max*W {
		c.cur++
		weighted += W
		d.Allowed = true
		d.Remaining = int((l.max*W - weighted) / W)
	} else {
		d.RetryAfter = time.Duration(l.retryAfter(c, e))
	}
	switch {
	case c.cur > 0:
		d.Reset = time.Duration(2*W - e)
	case c.prev > 0:
		d.Reset = time.Duration(W - e)
	}
	return d
}

// retryAfter is the time from e until prev×(W−e')+cur×W ≤ (max−1)×W holds.
func (l *Limiter) retryAfter(c *counter, e int64) int64 {
	W, m := l.window, l.max-1
	if c.cur <= m {
		// Within this window, once enough of prev has slid out (prev > 0 here).
		need := W - (m-c.cur)*W/c.prev
		return max(need-e, 1)
	}
	// In the next window, where cur becomes prev and the new cur is 0.
	need := W - m*W/c.cur
	return max(W-e+need, 1)
}

func mod(a, b int64) int64 {
	r := a % b
	if r < 0 {
		r += b
	}
	return r
}

// Stats returns a snapshot of the counters.
func (l *Limiter) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.stats
	s.Tracked = l.lru.Len()
	return s
}
