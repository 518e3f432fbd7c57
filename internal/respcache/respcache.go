// Package respcache owns the exact-match response cache: complete answers to
// deterministic requests (temperature 0 or a fixed seed), keyed per
// RAY_CACHE_KEY_STRATEGY and always scoped by a tenant, bounded by
// RAY_CACHE_MAX_ENTRIES and RAY_CACHE_MAX_BYTES, each entry living
// RAY_CACHE_TTL_MS.
//
// The handler calls it after the prompt compiler (so the key sees the
// compiled prompt) and before the in-flight dedupe:
//
//	cache, err := respcache.FromConfig(cfg) // once; nil when RAY_CACHE_ENABLED=false
//	key, ok := cache.ChatKey(tenant, req)   // tenant: API-key fingerprint, or "" without auth
//	if ok {
//		if e, hit := cache.Get(key); hit {
//			// stream: e.Replay(openai.NewSSEWriter(w)); else write e.Body with e.ContentType
//		}
//	}
//	... run the request; on a complete 200 answer:
//	cache.Put(key, &respcache.Entry{ContentType: ct, Body: body})     // JSON answer
//	cache.Put(key, &respcache.Entry{ContentType: ct, Events: events}) // SSE payloads, without [DONE]
//
// A nil *Cache is valid: ChatKey/CompletionKey report false, Get misses and
// Put does nothing. Entries returned by Get are shared and must not be
// modified. Stats feeds the metrics.
package respcache

import (
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/raygw/raygw/internal/config"
	"github.com/raygw/raygw/internal/openai"
)

// entryOverhead approximates the bookkeeping bytes of one entry and one event.
const (
	entryOverhead = 160
	eventOverhead = 24
)

// Entry is one cached answer.
type Entry struct {
	ContentType string
	Body        []byte   // the complete response body (non-streaming answers)
	Events      [][]byte // SSE data payloads in order, without the final [DONE]
}

// Size is the entry's weight against MaxBytes.
func (e *Entry) Size() int64 {
	n := int64(entryOverhead + len(e.ContentType) + len(e.Body))
	for _, ev := range e.Events {
		n += int64(eventOverhead + len(ev))
	}
	return n
}

// Replay writes the cached events followed by data: [DONE].
func (e *Entry) Replay(w *openai.SSEWriter) error {
	for _, ev := range e.Events {
		if err := w.Data(ev); err != nil {
			return fmt.Errorf("respcache: replay: %w", err)
		}
	}
	return w.Done()
}

// Options configures a Cache.
type Options struct {
	MaxEntries int
	MaxBytes   int64
	TTL        time.Duration
	Strategy   Strategy
	Now        func() time.Time // nil: time.Now
}

// Stats are the cache's counters and gauges.
type Stats struct {
	Hits, Misses       uint64
	Evictions, Expired uint64 // removed for room, removed for age
	Rejected           uint64 // Put of an entry larger than MaxBytes
	Entries            int
	Bytes              int64
}

// Cache is safe for concurrent use.
type Cache struct {
	opts Options
	mu   sync.Mutex
	lru  *simplelru.LRU[Key, *item]
	st   Stats
}

type item struct {
	e       *Entry
	size    int64
	expires time.Time
}

// FromConfig builds the cache of the RAY_CACHE_* settings; it returns nil
// (a valid, always-missing cache) when RAY_CACHE_ENABLED is false.
func FromConfig(cfg *config.Config) (*Cache, error) {
	c := cfg.Cache
	if !c.Enabled {
		return nil, nil
	}
	s, err := ParseStrategy(c.KeyStrategy)
	if err != nil {
		return nil, err
	}
	return New(Options{MaxEntries: c.MaxEntries, MaxBytes: c.MaxBytes, TTL: config.Duration(c.TTLMS), Strategy: s})
}

// New returns a cache bounded by opts.
func New(opts Options) (*Cache, error) {
	if opts.MaxEntries < 1 || opts.MaxBytes < 1 || opts.TTL <= 0 {
		return nil, fmt.Errorf("respcache: max entries, max bytes and TTL must be positive (got %d, %d, %s)",
			opts.MaxEntries, opts.MaxBytes, opts.TTL)
	}
	if opts.Strategy == "" {
		opts.Strategy = InputParams
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &Cache{opts: opts}
	lru, err := simplelru.NewLRU(opts.MaxEntries, func(_ Key, it *item) { c.st.Bytes -= it.size })
	if err != nil {
		return nil, fmt.Errorf("respcache: %w", err)
	}
	c.lru = lru
	return c, nil
}

// ChatKey is the package's ChatKey with the cache's strategy.
func (c *Cache) ChatKey(tenant string, r *openai.ChatRequest) (Key, bool) {
	if c == nil {
		return Key{}, false
	}
	return ChatKey(c.opts.Strategy, tenant, r)
}

// CompletionKey is the package's CompletionKey with the cache's strategy.
func (c *Cache) CompletionKey(tenant string, r *openai.CompletionRequest) (Key, bool) {
	if c == nil {
		return Key{}, false
	}
	return CompletionKey(c.opts.Strategy, tenant, r)
}

// Get returns the live entry for k.
func (c *Cache) Get(k Key) (*Entry, bool) {
	if c == nil {
		return nil, false
	}
	now := c.opts.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	it, ok := c.lru.Get(k)
	if ok && !now.Before(it.expires) {
		c.lru.Remove(k)
		c.st.Expired++
		ok = false
	}
	if !ok {
		c.st.Misses++
		return nil, false
	}
	c.st.Hits++
	return it.e, true
}

// Put stores e under k, replacing any older entry, and evicts the least
// recently used entries until both bounds hold. It reports false when e alone
// is larger than MaxBytes.
func (c *Cache) Put(k Key, e *Entry) bool {
	if c == nil || e == nil {
		return false
	}
	size := e.Size()
	now := c.opts.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if size > c.opts.MaxBytes {
		c.st.Rejected++
		return false
	}
	c.lru.Remove(k)
	c.dropExpiredLocked(now)
	for c.st.Bytes+size > c.opts.MaxBytes {
		if _, _, ok := c.lru.RemoveOldest(); !ok {
			break
		}
		c.st.Evictions++
	}
	c.st.Bytes += size
	if c.lru.Add(k, &item{e: e, size: size, expires: now.Add(c.opts.TTL)}) {
		c.st.Evictions++
	}
	return true
}

// dropExpiredLocked removes expired entries from the least recently used end.
func (c *Cache) dropExpiredLocked(now time.Time) {
	for {
		k, it, ok := c.lru.GetOldest()
		if !ok || now.Before(it.expires) {
			return
		}
		c.lru.Remove(k)
		c.st.Expired++
	}
}

// Stats returns a snapshot of the counters.
func (c *Cache) Stats() Stats {
	if c == nil {
		return Stats{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.st
	st.Entries = c.lru.Len()
	return st
}
