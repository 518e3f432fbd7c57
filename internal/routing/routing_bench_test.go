package routing

import (
	"fmt"
	"testing"
)

// TestServingFilterLeavesInputAlone checks the filter never writes into the
// pool's slice, whether it drops endpoints or keeps them all.
func TestServingFilterLeavesInputAlone(t *testing.T) {
	for _, spec := range [][]string{{"h0", "h1"}, {"u0", "h1", "d2", "h3"}, {"h0", "u1"}} {
		t.Run(fmt.Sprint(spec), func(t *testing.T) {
			in := eps(spec...)
			orig := append([]*Endpoint(nil), in...)
			out := Serving{}.Filter(nil, in)
			for i := range in {
				if in[i] != orig[i] {
					t.Fatalf("input changed at %d", i)
				}
			}
			var want []string
			for _, e := range in {
				if e.Healthy && !e.Draining {
					want = append(want, e.ID)
				}
			}
			var got []string
			for _, e := range out {
				got = append(got, e.ID)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("kept %v, want %v", got, want)
			}
		})
	}
}

// TestAcquireSingleRecordsAffinity checks a pool of one healthy endpoint
// still teaches the affinity index its pick.
func TestAcquireSingleRecordsAffinity(t *testing.T) {
	a := NewPrefixAffinity(8)
	p := NewPool(WithAffinity(a, AffinityWeight))
	p.Upsert("r0", "http://a", true, 1)
	p.Upsert("r1", "http://b", false, 1)
	l, err := p.Acquire(&Request{PrefixKey: 7})
	if err != nil || l.ID() != "r0" {
		t.Fatalf("picked %v (%v)", l, err)
	}
	l.Release()
	if id, ok := a.last.Get(7); !ok || id != "r0" {
		t.Fatalf("affinity index has %q, %v", id, ok)
	}
}

// BenchmarkAcquire measures one pick and release on a deployment's router
// (least pending plus prefix affinity) for pools of one and three replicas.
func BenchmarkAcquire(b *testing.B) {
	for _, n := range []int{1, 3} {
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			p := NewPool(WithAffinity(NewPrefixAffinity(64), AffinityWeight))
			for i := 0; i < n; i++ {
				p.Upsert(fmt.Sprintf("r%d", i), "http://x", true, 4)
			}
			req := &Request{}
			b.ReportAllocs()
			for b.Loop() {
				l, err := p.Acquire(req)
				if err != nil {
					b.Fatal(err)
				}
				l.Release()
			}
		})
	}
}
