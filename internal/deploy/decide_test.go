package deploy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecide(t *testing.T) {
	h, s, u := ReplicaHealthy, ReplicaStarting, ReplicaUnhealthy
	tests := []struct {
		name     string
		gen      int
		want     int
		deleting bool
		reps     []view
		acts     []action
	}{
		{"create starts all at once", 1, 3, false, nil,
			[]action{{Kind: actStart, Slot: 0}, {Kind: actStart, Slot: 1}, {Kind: actStart, Slot: 2}}},
		{"steady", 1, 2, false, []view{{"a", 1, 0, h, false}, {"b", 1, 1, u, false}}, nil},
		{"scale up fills free slots", 1, 3, false, []view{{"a", 1, 1, h, false}},
			[]action{{Kind: actStart, Slot: 0}, {Kind: actStart, Slot: 2}}},
		{"scale down stops unhealthy first, then highest slot", 1, 1, false,
			[]view{{"a", 1, 0, h, false}, {"b", 1, 1, h, false}, {"c", 1, 2, u, false}},
			[]action{{Kind: actStop, ID: "c"}, {Kind: actStop, ID: "b"}}},
		{"stopping replicas do not count", 1, 2, false, []view{{"a", 1, 0, h, false}, {"b", 1, 1, h, true}},
			[]action{{Kind: actStart, Slot: 2}}},
		{"rolling: first new replica", 2, 2, false, []view{{"a", 1, 0, h, false}, {"b", 1, 1, h, false}},
			[]action{{Kind: actStart, Slot: 2}}},
		{"rolling: wait while the new one starts", 2, 2, false,
			[]view{{"a", 1, 0, h, false}, {"b", 1, 1, h, false}, {"c", 2, 2, s, false}}, nil},
		{"rolling: new one healthy, stop the oldest", 2, 2, false,
			[]view{{"a", 1, 0, h, false}, {"b", 1, 1, h, false}, {"c", 2, 2, h, false}},
			[]action{{Kind: actStop, ID: "a"}}},
		{"rolling: next new one while the old drains", 2, 2, false,
			[]view{{"a", 1, 0, h, true}, {"b", 1, 1, h, false}, {"c", 2, 2, h, false}},
			[]action{{Kind: actStart, Slot: 3}}},
		{"rolling: one old stop at a time", 2, 2, false,
			[]view{{"a", 1, 0, h, true}, {"b", 1, 1, h, false}, {"c", 2, 2, h, false}, {"d", 2, 3, h, false}}, nil},
		{"rolling: last old one", 2, 2, false,
			[]view{{"b", 1, 1, h, false}, {"c", 2, 2, h, false}, {"d", 2, 3, h, false}},
			[]action{{Kind: actStop, ID: "b"}}},
		{"rolling: an unhealthy old replica goes first", 2, 2, false,
			[]view{{"a", 1, 0, h, false}, {"b", 1, 1, u, false}, {"c", 2, 2, h, false}},
			[]action{{Kind: actStop, ID: "b"}}},
		{"rolling with scale-down stops an old one first", 2, 1, false,
			[]view{{"a", 1, 0, h, false}, {"b", 1, 1, h, false}},
			[]action{{Kind: actStop, ID: "a"}}},
		{"delete stops everything not yet stopping", 1, 2, true,
			[]view{{"a", 1, 0, h, false}, {"b", 1, 1, h, true}},
			[]action{{Kind: actStop, ID: "a"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := decide(tc.gen, tc.want, tc.deleting, tc.reps)
			if diff := cmp.Diff(tc.acts, got); diff != "" {
				t.Fatalf("actions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStateOf(t *testing.T) {
	h, s, u := ReplicaHealthy, ReplicaStarting, ReplicaUnhealthy
	tests := []struct {
		name     string
		want     int
		deleting bool
		reps     []view
		state    State
	}{
		{"nothing yet", 2, false, nil, Deploying},
		{"starting", 2, false, []view{{ID: "a", State: s}, {ID: "b", State: s}}, Deploying},
		{"one of two up, other loading", 2, false, []view{{ID: "a", State: h}, {ID: "b", State: s}}, Deploying},
		{"all healthy", 2, false, []view{{ID: "a", State: h}, {ID: "b", State: h}}, Running},
		{"surge during a rolling update", 2, false, []view{{ID: "a", State: h}, {ID: "b", State: h}, {ID: "c", State: s}}, Running},
		{"one failed", 2, false, []view{{ID: "a", State: h}, {ID: "b", State: u}}, Degraded},
		{"all failed", 2, false, []view{{ID: "a", State: u}, {ID: "b", State: u}}, Unhealthy},
		{"draining replicas do not serve", 1, false, []view{{ID: "a", State: h, Stopping: true}, {ID: "b", State: u}}, Unhealthy},
		{"deleting", 2, true, []view{{ID: "a", State: h}}, Deleting},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := stateOf(tc.want, tc.deleting, tc.reps); got != tc.state {
				t.Fatalf("state = %s, want %s", got, tc.state)
			}
		})
	}
}
