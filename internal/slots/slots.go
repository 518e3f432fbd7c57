// Package slots owns llama.cpp slot affinity: the engine's /slots snapshot
// (cached RAY_LLAMA_CPP_SLOT_STATE_TTL_MS, each read bounded by
// RAY_LLAMA_CPP_SLOT_SNAPSHOT_TIMEOUT_MS), a bounded memory of which prompt
// prefix each slot last held (RAY_LLAMA_CPP_PROMPT_SCAFFOLD_CACHE_ENTRIES),
// and the choice of id_slot for a request so the engine can reuse the cached
// prompt (`"cache_prompt": true`).
//
// The handler uses it in two ways:
//
//	tr, err := slots.FromConfig(cfg, httpClient) // once
//	sched := admission.FromConfig(cfg, tr)       // tr scores slots for the scheduler
//	...
//	slot := ticket.Slot                          // the scheduler's free slot, if it tracks slots
//	if slot < 0 {
//		slot = tr.Pick(ctx, compiled.PrefixKey)  // free slot holding the prefix > free slot > holder > -1
//	}
//	// send "id_slot": slot (omit when -1) and "cache_prompt": true
//	tr.Remember(slot, compiled.PrefixKey)        // after the engine accepted the request
//
// A scheduler using tr as its admission.Affinity also calls Remember when it
// grants a slot, so the next decision already sees the prefix there; the
// second Remember is harmless.
//
// Tracker is safe for concurrent use.
package slots

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"

	"github.com/raygw/raygw/internal/admission"
	"github.com/raygw/raygw/internal/config"
)

var _ admission.Affinity = (*Tracker)(nil)

// ErrSnapshot wraps every failure to read /slots.
var ErrSnapshot = errors.New("slots: cannot read the engine's /slots")

// maxSlotsBody bounds one /slots answer (each slot carries its sampling params).
const maxSlotsBody = 1 << 20

// Slot is one engine slot as /slots reports it (other fields are ignored).
type Slot struct {
	ID           int  `json:"id"`
	NCtx         int  `json:"n_ctx"`
	IsProcessing bool `json:"is_processing"`
}

// Options configures a Tracker.
type Options struct {
	BaseURL         string        // llama-server base URL
	Client          *http.Client  // nil: http.DefaultClient
	StateTTL        time.Duration // how long a snapshot is reused
	SnapshotTimeout time.Duration // bound on one /slots read (0: 300ms)
	PrefixEntries   int           // prefixes remembered (min 1)
	Now             func() time.Time
	Logger          *slog.Logger
}

// Tracker remembers slot contents and reads slot state.
type Tracker struct {
	opts Options
	log  *slog.Logger
	sf   singleflight.Group

	mu      sync.Mutex
	snap    []Slot
	snapAt  time.Time
	holder  *lru.Cache[uint64, held] // prefix -> where it was last put
	lastSeq map[int]uint64           // slot -> seq of its latest Remember
	seq     uint64
}

type held struct {
	slot int
	seq  uint64
}

// FromConfig builds a tracker of the RAY_LLAMA_CPP_* settings.
func FromConfig(cfg *config.Config, client *http.Client) (*Tracker, error) {
	l := cfg.LlamaCpp
	base := l.BaseURL
	if base == "" {
		base = "http://" + cfg.LlamaAddr()
	}
	return New(Options{BaseURL: base, Client: client, StateTTL: config.Duration(l.SlotStateTTLMS),
		SnapshotTimeout: config.Duration(l.SlotSnapshotTimeoutMS), PrefixEntries: l.PromptScaffoldCacheEntries})
}

// New returns a tracker with opts.
func New(opts Options) (*Tracker, error) {
	if opts.Client == nil {
		opts.Client = http.DefaultClient
	}
	if opts.SnapshotTimeout <= 0 {
		opts.SnapshotTimeout = 300 * time.Millisecond
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	opts.BaseURL = strings.TrimRight(opts.BaseURL, "/")
	holder, err := lru.New[uint64, held](max(opts.PrefixEntries, 1))
	if err != nil {
		return nil, fmt.Errorf("slots: %w", err)
	}
	return &Tracker{opts: opts, log: opts.Logger.With("component", "slots"), holder: holder,
		lastSeq: map[int]uint64{}}, nil
}

// Remember records that slot now holds the prompt with prefixKey. Slot -1 or
// prefix 0 are ignored.
func (t *Tracker) Remember(slot int, prefixKey uint64) {
	if slot < 0 || prefixKey == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seq++
	t.lastSeq[slot] = t.seq
	t.holder.Add(prefixKey, held{slot: slot, seq: t.seq})
}

// Holder returns the slot that holds prefixKey now, or -1.
func (t *Tracker) Holder(prefixKey uint64) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.holderLocked(prefixKey)
}

func (t *Tracker) holderLocked(prefixKey uint64) int {
	if prefixKey == 0 {
		return -1
	}
	h, ok := t.holder.Peek(prefixKey)
	if !ok || t.lastSeq[h.slot] != h.seq {
		return -1 // forgotten, or the slot has run another prompt since
	}
	return h.slot
}

// Score implements admission.Affinity: 1 when slot holds prefixKey, else 0.
func (t *Tracker) Score(slot int, prefixKey uint64) float64 {
	if t.Holder(prefixKey) == slot && slot >= 0 {
		return 1
	}
	return 0
}

// Pick chooses id_slot for a request: a free slot holding its prefix, else
// the free slot idle longest, else the busy slot holding the prefix (the
// engine queues the request for it), else -1 (engine's choice). Without a
// snapshot it falls back to the holder or -1.
func (t *Tracker) Pick(ctx context.Context, prefixKey uint64) int {
	snap, err := t.Snapshot(ctx)
	t.mu.Lock()
	defer t.mu.Unlock()
	hold := t.holderLocked(prefixKey)
	if err != nil {
		t.log.Debug("no slot snapshot; picking from memory", "err", err)
		return hold
	}
	best := -1
	for _, s := range snap {
		if s.IsProcessing {
			continue
		}
		if s.ID == hold {
			return hold
		}
		if best < 0 || t.lastSeq[s.ID] < t.lastSeq[best] {
			best = s.ID
		}
	}
	if best >= 0 {
		return best
	}
	return hold
}

// Snapshot returns the engine's slots, reusing a read younger than the state
// TTL. Concurrent refreshes share one request.
func (t *Tracker) Snapshot(ctx context.Context) ([]Slot, error) {
	t.mu.Lock()
	if t.snap != nil && t.opts.Now().Sub(t.snapAt) < t.opts.StateTTL {
		s := t.snap
		t.mu.Unlock()
		return s, nil
	}
	t.mu.Unlock()
	ch := t.sf.DoChan("slots", func() (any, error) {
		// Not bound to one caller's cancellation: others may share this read.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.opts.SnapshotTimeout)
		defer cancel()
		snap, err := t.fetch(rctx)
		if err != nil {
			return nil, err
		}
		t.mu.Lock()
		t.snap, t.snapAt = snap, t.opts.Now()
		t.mu.Unlock()
		return snap, nil
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.([]Slot), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %w", ErrSnapshot, ctx.Err())
	}
}

func (t *Tracker) fetch(ctx context.Context) ([]Slot, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.opts.BaseURL+"/slots", nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSnapshot, err)
	}
	resp, err := t.opts.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSnapshot, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxSlotsBody+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSnapshot, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: status %d (is the engine started with --slots?)", ErrSnapshot, resp.StatusCode)
	}
	return ParseSlots(body)
}

// ParseSlots decodes a /slots answer: a JSON list of slots with distinct,
// non-negative ids.
func ParseSlots(body []byte) ([]Slot, error) {
	if len(body) > maxSlotsBody {
		return nil, fmt.Errorf("%w: answer larger than %d bytes", ErrSnapshot, maxSlotsBody)
	}
	var slots []Slot
	if err := json.Unmarshal(body, &slots); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSnapshot, err)
	}
	if slots == nil {
		return nil, fmt.Errorf("%w: expected a JSON list", ErrSnapshot)
	}
	seen := map[int]bool{}
	for _, s := range slots {
		if s.ID < 0 || seen[s.ID] {
			return nil, fmt.Errorf("%w: bad or repeated slot id %d", ErrSnapshot, s.ID)
		}
		seen[s.ID] = true
	}
	return slots, nil
}
