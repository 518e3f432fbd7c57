package deploy

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/raygw/raygw/internal/runtime"
)

func TestCreateToRunningThenDegradedAndBack(t *testing.T) {
	rt := newFakeRuntime()
	st := &memStore{}
	m, clk := newTestManager(t, rt, st)
	created, err := m.Create(context.Background(), testSpec(t, "web", 2))
	if err != nil {
		t.Fatal(err)
	}
	if created.Status != Deploying || created.Cluster != "local" {
		t.Fatalf("created: %s cluster %q", created.Status, created.Cluster)
	}
	eventually(t, "two starts", func() bool { return len(rt.log()) == 2 })
	clk.Add(time.Minute)
	rt.replica("web-1").set(runtime.Healthy, 0)
	eventually(t, "still deploying with one healthy", func() bool {
		s := statusOf(t, m, "web")
		return s.Status == Deploying && s.ReplicasStatus[0].Status == ReplicaHealthy
	})
	rt.replica("web-2").set(runtime.Healthy, 0)
	eventually(t, "running", func() bool { return statusOf(t, m, "web").Status == Running })
	s := statusOf(t, m, "web")
	if !s.StatusChangedAt.Equal(clk.Now()) || s.Endpoint != "/d/web/v1" {
		t.Fatalf("running at %v endpoint %q, want the injected clock's time", s.StatusChangedAt, s.Endpoint)
	}
	// A crash: the runtime reports unhealthy, then starting again (restart 1).
	rt.replica("web-2").set(runtime.Unhealthy, 1)
	rt.replica("web-2").set(runtime.Starting, 1)
	eventually(t, "degraded", func() bool { return statusOf(t, m, "web").Status == Degraded })
	if rec, ok := st.get("web"); !ok || rec.Status != string(Degraded) {
		t.Fatalf("stored state: %+v", rec)
	}
	rt.replica("web-2").set(runtime.Healthy, 1)
	eventually(t, "running again", func() bool { return statusOf(t, m, "web").Status == Running })
	rt.replica("web-1").set(runtime.Unhealthy, 1)
	rt.replica("web-2").set(runtime.Unhealthy, 2)
	eventually(t, "unhealthy", func() bool { return statusOf(t, m, "web").Status == Unhealthy })
	if got := rt.log(); !slices.Equal(got, []string{"start web-1", "start web-2"}) {
		t.Fatalf("the reconciler must leave restarts to the runtime: %v", got)
	}
}

func TestRollingUpdateOrder(t *testing.T) {
	rt := newFakeRuntime()
	m, _ := newTestManager(t, rt, nil)
	if _, err := m.Create(context.Background(), testSpec(t, "api", 2)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "starts", func() bool { return len(rt.log()) == 2 })
	rt.replica("api-1").set(runtime.Healthy, 0)
	rt.replica("api-2").set(runtime.Healthy, 0)
	eventually(t, "running", func() bool { return statusOf(t, m, "api").Status == Running })
	patch, _ := json.Marshal(map[string]any{"engine_config": map[string]any{"ctx_size": 1024}})
	st, err := m.Update(context.Background(), "api", patch)
	if err != nil {
		t.Fatal(err)
	}
	if st.Generation != 2 || st.EngineConfig.CtxSize != 1024 {
		t.Fatalf("update: generation %d ctx %d", st.Generation, st.EngineConfig.CtxSize)
	}
	eventually(t, "first new replica", func() bool { return len(rt.log()) == 3 })
	time.Sleep(50 * time.Millisecond) // several reconcile passes: nothing stops before it is healthy
	if got := rt.log(); len(got) != 3 {
		t.Fatalf("acted before the new replica was healthy: %v", got)
	}
	rt.replica("api-3").set(runtime.Healthy, 0)
	eventually(t, "old stopped, next started", func() bool { return len(rt.log()) == 5 })
	rt.replica("api-4").set(runtime.Healthy, 0)
	eventually(t, "second old stopped", func() bool { return len(rt.log()) == 6 })
	want := []string{"start api-1", "start api-2", "start api-3", "stop api-1", "start api-4", "stop api-2"}
	got := rt.log()
	// Stopping api-1 (drain) and starting api-4 run concurrently.
	if got[3] == "start api-4" {
		got[3], got[4] = got[4], got[3]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("effects (-want +got):\n%s", diff)
	}
	eventually(t, "two gen-2 replicas running", func() bool {
		s := statusOf(t, m, "api")
		return s.Status == Running && slices.Equal(replicaIDs(s), []string{"api-3:healthy:g2", "api-4:healthy:g2"})
	})
	// A replica-count change scales without a new generation.
	st, err = m.Update(context.Background(), "api", []byte(`{"replicas":1}`))
	if err != nil || st.Generation != 2 {
		t.Fatalf("scale: %v generation %d", err, st.Generation)
	}
	eventually(t, "scaled down", func() bool { return len(statusOf(t, m, "api").ReplicasStatus) == 1 })
	got = rt.log()
	left := statusOf(t, m, "api").ReplicasStatus[0].ID
	if last := got[len(got)-1]; len(got) != 7 || (last != "stop api-3" && last != "stop api-4") || "stop "+left == last {
		t.Fatalf("scale-down should stop exactly one gen-2 replica: %v (left %s)", got, left)
	}
}

func TestDeleteDrainsThenForgets(t *testing.T) {
	rt := newFakeRuntime()
	st := &memStore{}
	m, _ := newTestManager(t, rt, st)
	if _, err := m.Create(context.Background(), testSpec(t, "gone", 1)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "start", func() bool { return len(rt.log()) == 1 })
	rt.replica("gone-1").set(runtime.Healthy, 0)
	eventually(t, "running", func() bool { return statusOf(t, m, "gone").Status == Running })
	tgt, err := m.ByName("gone")
	if err != nil {
		t.Fatal(err)
	}
	lease, err := tgt.d.pool.Acquire(&routingRequest)
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.Delete(context.Background(), "gone")
	if err != nil || s.Status != Deleting {
		t.Fatalf("delete: %v %s", err, s.Status)
	}
	if _, err := m.Lookup("gone-model"); err == nil {
		t.Fatal("a deleting deployment still routes")
	}
	time.Sleep(50 * time.Millisecond)
	if got := rt.log(); len(got) != 1 {
		t.Fatalf("stopped with a request in flight: %v", got)
	}
	lease.Release()
	select {
	case <-m.Done("gone"):
	case <-time.After(5 * time.Second):
		t.Fatal("not gone after the drain")
	}
	if got := rt.log(); got[len(got)-1] != "stop gone-1" {
		t.Fatalf("effects: %v", got)
	}
	if _, ok := st.get("gone"); ok {
		t.Fatal("still stored")
	}
}

func TestRestoreFromStore(t *testing.T) {
	st := &memStore{}
	rt := newFakeRuntime()
	m, _ := newTestManager(t, rt, st)
	if _, err := m.Create(context.Background(), testSpec(t, "kept", 2)); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Update(context.Background(), "kept", []byte(`{"replicas":3}`)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := st.get("kept"); !ok {
		t.Fatal("shutdown removed the stored deployment")
	}
	rt2 := newFakeRuntime()
	m2, _ := newTestManager(t, rt2, st)
	if err := m2.Restore(context.Background()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "restored replicas start", func() bool { return len(rt2.log()) == 3 })
	if s := statusOf(t, m2, "kept"); s.Replicas != 3 || s.ModelName != "kept-model" {
		t.Fatalf("restored: %+v", s.Spec)
	}
}

func TestCreateConflicts(t *testing.T) {
	m, _ := newTestManager(t, newFakeRuntime(), nil)
	if _, err := m.Create(context.Background(), testSpec(t, "one", 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create(context.Background(), testSpec(t, "one", 1)); !errorsIs(err, ErrExists) {
		t.Fatalf("same name: %v", err)
	}
	s := testSpec(t, "two", 1)
	s.ModelName = "one-model"
	var ve ValidationError
	if _, err := m.Create(context.Background(), s); !errorsAs(err, &ve) || ve[0].Field != "model_name" {
		t.Fatalf("same model: %v", err)
	}
	if _, err := m.Update(context.Background(), "one", []byte(`{"name":"other"}`)); !errorsAs(err, &ve) || ve[0].Field != "name" {
		t.Fatalf("rename: %v", err)
	}
	if _, err := m.Update(context.Background(), "nope", []byte(`{}`)); !errorsIs(err, ErrNotFound) {
		t.Fatalf("missing: %v", err)
	}
}
