package respcache

import (
	"bytes"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/raygw/raygw/internal/config"
	"github.com/raygw/raygw/internal/openai"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newCache(t testing.TB, entries int, bytes int64) (*Cache, *clock) {
	t.Helper()
	clk := &clock{t: time.Unix(1000, 0)}
	c, err := New(Options{MaxEntries: entries, MaxBytes: bytes, TTL: time.Minute, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	return c, clk
}

func key(i int) Key { return Key{byte(i), byte(i >> 8)} }

func body(n int) *Entry {
	return &Entry{ContentType: "application/json", Body: bytes.Repeat([]byte("x"), n)}
}

func TestFromConfig(t *testing.T) {
	cfg := &config.Config{Cache: config.Cache{Enabled: false}}
	if c, err := FromConfig(cfg); c != nil || err != nil {
		t.Fatalf("disabled: %v, %v", c, err)
	}
	cfg.Cache = config.Cache{Enabled: true, MaxEntries: 256, MaxBytes: 2097152, TTLMS: 120000, KeyStrategy: "input"}
	c, err := FromConfig(cfg)
	if err != nil || c.opts.Strategy != Input || c.opts.TTL != 2*time.Minute {
		t.Fatalf("got %+v, %v", c, err)
	}
	cfg.Cache.KeyStrategy = "bogus"
	if _, err := FromConfig(cfg); err == nil {
		t.Fatal("accepted a bad strategy")
	}
}

func TestNilCacheMisses(t *testing.T) {
	var c *Cache
	if _, ok := c.ChatKey("", chat(t, baseChat)); ok {
		t.Fatal("nil cache made a key")
	}
	if _, ok := c.Get(key(1)); ok || c.Put(key(1), body(1)) || c.Stats() != (Stats{}) {
		t.Fatal("nil cache is not inert")
	}
}

func TestHitMissAndTenantIsolation(t *testing.T) {
	c, _ := newCache(t, 8, 1<<20)
	r := chat(t, baseChat)
	ka, _ := c.ChatKey("tenant-a", r)
	kb, _ := c.ChatKey("tenant-b", r)
	c.Put(ka, body(10))
	if _, ok := c.Get(kb); ok {
		t.Fatal("tenant b read tenant a's answer")
	}
	e, ok := c.Get(ka)
	if !ok || len(e.Body) != 10 {
		t.Fatalf("tenant a miss: %v", e)
	}
	if st := c.Stats(); st.Hits != 1 || st.Misses != 1 || st.Entries != 1 {
		t.Fatalf("stats = %+v", st)
	}
}

func TestEntryBound(t *testing.T) {
	c, _ := newCache(t, 3, 1<<20)
	for i := range 5 {
		c.Put(key(i), body(1))
	}
	c.Get(key(2)) // most recent now; 3 is the oldest
	c.Put(key(5), body(1))
	for i, want := range []bool{false, false, true, false, true, true} {
		if _, ok := c.Get(key(i)); ok != want {
			t.Errorf("key %d present = %v, want %v", i, ok, want)
		}
	}
	if st := c.Stats(); st.Entries != 3 || st.Evictions != 3 {
		t.Fatalf("stats = %+v", st)
	}
}

func TestByteBound(t *testing.T) {
	one := body(1000).Size()
	c, _ := newCache(t, 100, 3*one)
	for i := range 4 {
		c.Put(key(i), body(1000))
	}
	st := c.Stats()
	if st.Entries != 3 || st.Bytes != 3*one || st.Evictions != 1 {
		t.Fatalf("stats = %+v (one entry = %d bytes)", st, one)
	}
	if _, ok := c.Get(key(0)); ok {
		t.Fatal("oldest entry survived the byte bound")
	}
	if c.Put(key(9), body(int(3*one))) {
		t.Fatal("stored an entry larger than MaxBytes")
	}
	// Replacing a key does not double count its bytes.
	c.Put(key(3), body(1000))
	if st := c.Stats(); st.Bytes != 3*one || st.Rejected != 1 {
		t.Fatalf("after replace: %+v", st)
	}
}

func TestTTL(t *testing.T) {
	c, clk := newCache(t, 8, 1<<20)
	c.Put(key(1), body(1))
	clk.t = clk.t.Add(time.Minute - time.Nanosecond)
	if _, ok := c.Get(key(1)); !ok {
		t.Fatal("expired early")
	}
	clk.t = clk.t.Add(time.Nanosecond)
	if _, ok := c.Get(key(1)); ok {
		t.Fatal("served an expired entry")
	}
	c.Put(key(2), body(1))
	clk.t = clk.t.Add(2 * time.Minute)
	c.Put(key(3), body(1)) // sweeps the expired key 2
	if st := c.Stats(); st.Expired != 2 || st.Entries != 1 || st.Bytes != body(1).Size() {
		t.Fatalf("stats = %+v", st)
	}
}

func TestReplayStream(t *testing.T) {
	e := &Entry{Events: [][]byte{[]byte(`{"a":1}`), []byte(`{"b":2}`)}}
	rec := httptest.NewRecorder()
	if err := e.Replay(openai.NewSSEWriter(rec)); err != nil {
		t.Fatal(err)
	}
	want := "data: {\"a\":1}\n\ndata: {\"b\":2}\n\ndata: [DONE]\n\n"
	if diff := cmp.Diff(want, rec.Body.String()); diff != "" {
		t.Fatalf("replay (-want +got):\n%s", diff)
	}
}

func FuzzChatKey(f *testing.F) {
	f.Add([]byte(baseChat))
	f.Add([]byte(`{"model":"m","seed":3,"tools":[{"b":1,"a":[1,2]}],"top_k":2,"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := openai.DecodeChat(b, openai.DefaultLimits)
		if err != nil {
			return
		}
		k1, ok := ChatKey(InputParams, "a", r)
		if !ok {
			return
		}
		// Re-encoding with other whitespace keeps the key.
		var ind bytes.Buffer
		if err := jsonIndent(&ind, b); err != nil {
			t.Fatal(err)
		}
		r2, err := openai.DecodeChat(ind.Bytes(), openai.DefaultLimits)
		if err != nil {
			t.Fatalf("indented body no longer decodes: %v", err)
		}
		if k2, _ := ChatKey(InputParams, "a", r2); k1 != k2 {
			t.Fatal("key depends on JSON whitespace")
		}
		if k3, _ := ChatKey(InputParams, "b", r); k1 == k3 {
			t.Fatal("tenants share a key")
		}
	})
}

func BenchmarkLookupHit(b *testing.B) {
	c, _ := newCache(b, 256, 2<<20)
	for i := range 256 {
		c.Put(key(i), body(2000))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, ok := c.Get(key(i % 256)); !ok {
			b.Fatal("miss")
		}
		i++
	}
}

func BenchmarkLookupMiss(b *testing.B) {
	c, _ := newCache(b, 256, 2<<20)
	for i := range 256 {
		c.Put(key(i), body(2000))
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := c.Get(key(1000)); ok {
			b.Fatal("hit")
		}
	}
}

// BenchmarkChatKey is the per-request cost of building the key.
func BenchmarkChatKey(b *testing.B) {
	msgs := ""
	for i := range 6 {
		msgs += fmt.Sprintf(`{"role":"user","content":"message %d %s"},`, i, bytes.Repeat([]byte("word "), 60))
	}
	r := chat(b, `{"model":"m","temperature":0,"max_tokens":64,"top_k":1,"stop":["\n\n"],"messages":[`+msgs[:len(msgs)-1]+`]}`)
	b.ReportAllocs()
	for b.Loop() {
		ChatKey(InputParams, "tenant", r)
	}
}
