package jobs

import (
	"context"
	"testing"
)

// BenchmarkSubmit measures one durable submit (a committed, fsynced
// insert) followed by the tenant-scoped read a poller makes.
func BenchmarkSubmit(b *testing.B) {
	q, err := Open(context.Background(), Options{Config: testConfig(b.TempDir()), Executor: &fakeExec{},
		Statfs: func(string) (uint64, error) { return 1 << 40, nil }})
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	q.cfg.MaxJobs = 1 << 30
	sub := Submission{Endpoint: EndpointChat, Body: []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		j, err := q.Submit(ctx, "t", sub)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := q.Get(ctx, "t", j.ID); err != nil {
			b.Fatal(err)
		}
	}
}
