package slots

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raygw/raygw/internal/config"
)

type fakeEngine struct {
	body  atomic.Value // string
	hits  atomic.Int32
	block chan struct{}
}

func (f *fakeEngine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.hits.Add(1)
	if f.block != nil {
		select {
		case <-f.block:
		case <-r.Context().Done():
			return
		}
	}
	w.Write([]byte(f.body.Load().(string)))
}

func newTracker(t *testing.T, body string) (*Tracker, *fakeEngine, *time.Time) {
	t.Helper()
	f := &fakeEngine{}
	f.body.Store(body)
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	now := time.Unix(0, 0)
	tr, err := New(Options{BaseURL: srv.URL + "/", StateTTL: 250 * time.Millisecond,
		SnapshotTimeout: 5 * time.Second, PrefixEntries: 2, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return tr, f, &now
}

const twoFree = `[{"id":0,"n_ctx":256,"is_processing":false,"params":{}},{"id":1,"n_ctx":256,"is_processing":false}]`

func TestFromConfig(t *testing.T) {
	cfg := &config.Config{}
	cfg.LlamaCpp = config.LlamaCpp{Host: "127.0.0.1", Port: 8081, SlotStateTTLMS: 250, SlotSnapshotTimeoutMS: 300, PromptScaffoldCacheEntries: 384}
	tr, err := FromConfig(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tr.opts.BaseURL != "http://127.0.0.1:8081" || tr.opts.StateTTL != 250*time.Millisecond || tr.opts.SnapshotTimeout != 300*time.Millisecond {
		t.Fatalf("opts = %+v", tr.opts)
	}
}

func TestSnapshotCachedForTTL(t *testing.T) {
	tr, f, now := newTracker(t, twoFree)
	ctx := context.Background()
	for range 3 {
		s, err := tr.Snapshot(ctx)
		if err != nil || len(s) != 2 || s[1].NCtx != 256 {
			t.Fatalf("snapshot = %+v, %v", s, err)
		}
	}
	if f.hits.Load() != 1 {
		t.Fatalf("engine read %d times within the TTL", f.hits.Load())
	}
	*now = now.Add(250 * time.Millisecond)
	if _, err := tr.Snapshot(ctx); err != nil || f.hits.Load() != 2 {
		t.Fatalf("after TTL: %d reads, %v", f.hits.Load(), err)
	}
}

func TestSnapshotBoundedByTimeout(t *testing.T) {
	tr, f, _ := newTracker(t, twoFree)
	f.block = make(chan struct{})
	defer close(f.block)
	tr.opts.SnapshotTimeout = 20 * time.Millisecond
	_, err := tr.Snapshot(context.Background())
	if !errors.Is(err, ErrSnapshot) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrSnapshot wrapping DeadlineExceeded", err)
	}
}

func TestSnapshotErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "slots disabled", http.StatusNotImplemented)
	}))
	defer srv.Close()
	tr, _ := New(Options{BaseURL: srv.URL, PrefixEntries: 4})
	if _, err := tr.Snapshot(context.Background()); !errors.Is(err, ErrSnapshot) {
		t.Fatalf("err = %v", err)
	}
	// Without a snapshot Pick falls back to memory.
	tr.Remember(1, 42)
	if got := tr.Pick(context.Background(), 42); got != 1 {
		t.Fatalf("Pick = %d, want remembered 1", got)
	}
	if got := tr.Pick(context.Background(), 7); got != -1 {
		t.Fatalf("Pick unknown = %d, want -1", got)
	}
}

func TestParseSlots(t *testing.T) {
	for _, bad := range []string{`{}`, `null`, `[{"id":-1}]`, `[{"id":0},{"id":0}]`, `[{"id":"x"}]`} {
		if _, err := ParseSlots([]byte(bad)); !errors.Is(err, ErrSnapshot) {
			t.Errorf("ParseSlots(%s) = %v, want ErrSnapshot", bad, err)
		}
	}
	if s, err := ParseSlots([]byte(`[]`)); err != nil || len(s) != 0 {
		t.Errorf("empty list: %v %v", s, err)
	}
}

func TestPick(t *testing.T) {
	cases := []struct {
		name     string
		slots    string
		remember [][2]int // slot, prefix in order
		prefix   uint64
		want     int
	}{
		{"free holder wins", twoFree, [][2]int{{0, 5}, {1, 9}}, 9, 1},
		{"free slot idle longest", twoFree, [][2]int{{1, 5}, {0, 6}}, 9, 1},
		{"never-used slot first", twoFree, [][2]int{{0, 5}}, 9, 1},
		{"holder busy, other free", `[{"id":0,"is_processing":false},{"id":1,"is_processing":true}]`, [][2]int{{1, 9}}, 9, 0},
		{"all busy: holder", `[{"id":0,"is_processing":true},{"id":1,"is_processing":true}]`, [][2]int{{1, 9}}, 9, 1},
		{"all busy, unknown prefix", `[{"id":0,"is_processing":true},{"id":1,"is_processing":true}]`, nil, 9, -1},
		{"slot moved on", twoFree, [][2]int{{0, 9}, {0, 5}, {1, 6}}, 9, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr, _, _ := newTracker(t, tc.slots)
			for _, r := range tc.remember {
				tr.Remember(r[0], uint64(r[1]))
			}
			if got := tr.Pick(context.Background(), tc.prefix); got != tc.want {
				t.Fatalf("Pick = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestScoreAndBoundedMemory(t *testing.T) {
	tr, _, _ := newTracker(t, twoFree) // PrefixEntries: 2
	tr.Remember(0, 1)
	tr.Remember(1, 2)
	if tr.Score(0, 1) != 1 || tr.Score(1, 1) != 0 || tr.Score(1, 2) != 1 {
		t.Fatal("scores wrong")
	}
	tr.Remember(0, 3) // slot 0 moves on; prefix 1 is also evicted (2 entries)
	if tr.Score(0, 1) != 0 || tr.Holder(1) != -1 || tr.Holder(3) != 0 {
		t.Fatal("stale prefix still scored")
	}
	tr.Remember(-1, 4)
	tr.Remember(0, 0)
	if tr.holder.Len() != 2 {
		t.Fatalf("memory holds %d prefixes, bound is 2", tr.holder.Len())
	}
}

func FuzzParseSlots(f *testing.F) {
	f.Add([]byte(twoFree))
	f.Add([]byte(`[{"id":3,"n_ctx":1e3}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseSlots(b)
		if err != nil {
			return
		}
		seen := map[int]bool{}
		for _, x := range s {
			if x.ID < 0 || seen[x.ID] {
				t.Fatalf("accepted bad ids: %+v", s)
			}
			seen[x.ID] = true
		}
	})
}

func BenchmarkPickCached(b *testing.B) {
	f := &fakeEngine{}
	f.body.Store(twoFree)
	srv := httptest.NewServer(f)
	defer srv.Close()
	tr, _ := New(Options{BaseURL: srv.URL, StateTTL: time.Hour, PrefixEntries: 384})
	for i := range 384 {
		tr.Remember(i%2, uint64(i+1))
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		tr.Pick(ctx, 383)
	}
}
