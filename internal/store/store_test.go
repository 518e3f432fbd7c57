package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestDeploymentsSurviveReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := db.Version(ctx); err != nil || v != 1 {
		t.Fatalf("schema version %d %v, want 1", v, err)
	}
	at := time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC)
	for _, name := range []string{"b", "a"} {
		if err := db.PutDeployment(ctx, Deployment{Name: name, Spec: []byte(`{"name":"` + name + `"}`), Generation: 1,
			Status: "running", StatusChangedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.PutDeployment(ctx, Deployment{Name: "a", Spec: []byte(`{"name":"a","replicas":3}`), Generation: 2,
		Status: "deploying", StatusChangedAt: at, Deleting: true}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	db, err = Open(ctx, dir) // migrations are not applied twice
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	list, err := db.ListDeployments(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "a" || list[1].Name != "b" {
		t.Fatalf("list: %+v %v", list, err)
	}
	a := list[0]
	if a.Generation != 2 || !a.Deleting || string(a.Spec) != `{"name":"a","replicas":3}` || !a.StatusChangedAt.Equal(at) {
		t.Fatalf("upsert lost fields: %+v", a)
	}
	if err := db.DeleteDeployment(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteDeployment(ctx, "a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if _, err := db.GetDeployment(ctx, "a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get deleted: %v", err)
	}
	if d, err := db.GetDeployment(ctx, "b"); err != nil || d.Status != "running" {
		t.Fatalf("get: %+v %v", d, err)
	}
}

func TestOpenNeedsADirectory(t *testing.T) {
	if _, err := Open(context.Background(), ""); err == nil {
		t.Fatal("empty state dir accepted")
	}
}
