package ratelimit

import (
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"
)

// discard is a ResponseWriter that keeps nothing.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(int)             {}

// TestMillionKeysStayBounded sends 1,000,000 distinct clients (distinct IPs
// and Bearer values) through the middleware with the 1b profile's limits and
// checks that tracked keys, the heap and RSS stay bounded.
func TestMillionKeysStayBounded(t *testing.T) {
	const n, maxKeys = 1_000_000, 4096
	if testing.Short() {
		t.Skip("floods a million keys")
	}
	l, err := New(Options{Window: time.Minute, Max: 75, MaxKeys: maxKeys})
	if err != nil {
		t.Fatal(err)
	}
	key, _ := KeyFor(StrategyIPAPIKey, false)
	h := l.Middleware(key, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))

	heap0, rss0 := memNow(t)
	r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
	w := &discard{h: http.Header{}}
	var ip [4]byte
	for i := range n {
		ip = [4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}
		r.RemoteAddr = strconv.Itoa(int(ip[0])) + "." + strconv.Itoa(int(ip[1])) + "." + strconv.Itoa(int(ip[2])) + "." + strconv.Itoa(int(ip[3])) + ":9"
		r.Header.Set("Authorization", "Bearer flood-"+strconv.Itoa(i))
		h.ServeHTTP(w, r)
	}
	heap1, rss1 := memNow(t)
	s := l.Stats()
	t.Logf("after %d distinct keys: tracked %d, evictions %d; heap %.1f -> %.1f MiB; RSS %.1f -> %.1f MiB",
		n, s.Tracked, s.Evictions, mib(heap0), mib(heap1), mib(rss0), mib(rss1))
	if s.Tracked != maxKeys || s.Evictions != n-maxKeys || s.Allowed != n {
		t.Fatalf("stats = %+v, want %d tracked, %d evictions, %d allowed", s, maxKeys, n-maxKeys, n)
	}
	// 4096 entries cost well under 2 MiB; allow slack for the runtime.
	if growth := int64(heap1) - int64(heap0); growth > 8<<20 {
		t.Fatalf("live heap grew by %.1f MiB for %d tracked keys", mib(uint64(growth)), maxKeys)
	}
	if rss0 > 0 && rss1 > rss0+64<<20 {
		t.Fatalf("RSS grew by %.1f MiB", mib(rss1-rss0))
	}
}

func memNow(t *testing.T) (heap, rss uint64) {
	t.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return ms.HeapAlloc, 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			rss = kb << 10
		}
	}
	return ms.HeapAlloc, rss
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
