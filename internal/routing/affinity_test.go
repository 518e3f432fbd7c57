package routing

import (
	"context"
	"testing"
)

// TestPrefixAffinityPick: a warm replica wins while it has at most one
// request in flight more than an idle cold one, then load wins; unknown
// prefixes and prefix 0 fall back to least pending.
func TestPrefixAffinityPick(t *testing.T) {
	const warm = 42
	tests := []struct {
		name   string
		eps    []*Endpoint
		prefix uint64
		want   string
	}{
		{"warm and idle", eps("h0", "h0"), warm, "r1"},
		{"warm with one in flight beats idle cold", eps("h0", "h1"), warm, "r1"},
		{"warm with two in flight loses to idle cold", eps("h0", "h2"), warm, "r0"},
		{"warm with two beats cold with one", eps("h1", "h2"), warm, "r1"},
		{"unknown prefix: least pending", eps("h0", "h1"), 7, "r0"},
		{"no prefix: least pending", eps("h0", "h1"), 0, "r0"},
		{"warm replica unhealthy", eps("h1", "u0"), warm, "r0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := NewPrefixAffinity(16)
			a.Record(&Request{PrefixKey: warm}, &Endpoint{ID: "r1"})
			got, err := WithAffinity(a, AffinityWeight).Pick(&Request{PrefixKey: tc.prefix}, tc.eps, 0)
			if err != nil || got.ID != tc.want {
				t.Fatalf("picked %v (%v), want %s", got, err, tc.want)
			}
		})
	}
}

// TestPoolLearnsPrefixes: sequential requests of two prefixes on an idle
// two-replica pool each stay on the replica that first served them, where
// least pending alone alternates.
func TestPoolLearnsPrefixes(t *testing.T) {
	run := func(r *Router) map[uint64]map[string]int {
		p := NewPool(r)
		p.Upsert("a", "http://a", true, 1)
		p.Upsert("b", "http://b", true, 1)
		seen := map[uint64]map[string]int{1: {}, 2: {}}
		for i := 0; i < 8; i++ {
			key := uint64(1 + (i/2)%2) // 1 1 2 2 1 1 2 2: out of step with the rotation
			l, err := p.Acquire(&Request{PrefixKey: key})
			if err != nil {
				t.Fatal(err)
			}
			seen[key][l.ID()]++
			l.Release()
		}
		return seen
	}
	for key, by := range run(WithAffinity(NewPrefixAffinity(16), AffinityWeight)) {
		if len(by) != 1 {
			t.Errorf("prefix %d spread over %v with affinity", key, by)
		}
	}
	spread := 0
	for _, by := range run(Default()) {
		spread += len(by)
	}
	if spread == 2 {
		t.Error("least pending alone kept every prefix on one replica; the test shows nothing")
	}
}

func TestPrefixContext(t *testing.T) {
	ctx := context.Background()
	if PrefixFrom(ctx) != 0 || PrefixFrom(WithPrefix(ctx, 0)) != 0 {
		t.Fatal("no prefix should read as 0")
	}
	if PrefixFrom(WithPrefix(ctx, 99)) != 99 {
		t.Fatal("prefix lost")
	}
}

func TestPrefixAffinityIsBounded(t *testing.T) {
	a := NewPrefixAffinity(2)
	for k := uint64(1); k <= 3; k++ {
		a.Record(&Request{PrefixKey: k}, &Endpoint{ID: "r"})
	}
	if a.last.Len() != 2 || a.last.Contains(1) {
		t.Fatalf("index holds %v", a.last.Keys())
	}
}
