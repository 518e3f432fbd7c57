package deploy

import "sort"

// view is what the pure decision functions see of one replica.
type view struct {
	ID         string
	Generation int
	Slot       int
	State      ReplicaState
	Stopping   bool
}

type actionKind int

const (
	actStart actionKind = iota + 1
	actStop
)

// action is one effect the owner goroutine carries out.
type action struct {
	Kind actionKind
	ID   string // stop: the replica
	Slot int    // start: the CPU/GPU slot
}

// decide compares the wanted replicas of generation gen with the observed
// ones and returns what to do now. A rolling update (replicas of an older
// generation exist) starts one new replica at a time, waits until it is
// healthy, then stops one old replica; plain scaling starts or stops the
// difference at once, stopping unhealthy and then the highest slots first.
func decide(gen, want int, deleting bool, reps []view) []action {
	var live, cur, old []view
	stoppingOld := false
	for _, r := range reps {
		switch {
		case r.Stopping:
			stoppingOld = stoppingOld || r.Generation != gen
		case r.Generation == gen:
			cur, live = append(cur, r), append(live, r)
		default:
			old, live = append(old, r), append(live, r)
		}
	}
	if deleting {
		out := make([]action, 0, len(live))
		for _, r := range live {
			out = append(out, action{Kind: actStop, ID: r.ID})
		}
		return out
	}
	if len(old) == 0 {
		return scale(want, cur, reps)
	}
	for _, r := range cur {
		if r.State != ReplicaHealthy {
			return nil // wait for the new replica before touching old ones
		}
	}
	switch {
	case (len(cur) >= want || len(cur)+len(old) > want) && !stoppingOld:
		return []action{{Kind: actStop, ID: pickStop(old, true)}}
	case len(cur) < want && len(cur)+len(old) <= want:
		return []action{{Kind: actStart, Slot: freeSlots(reps, 1)[0]}}
	}
	return nil
}

func scale(want int, cur, all []view) []action {
	var out []action
	switch {
	case len(cur) < want:
		for _, s := range freeSlots(all, want-len(cur)) {
			out = append(out, action{Kind: actStart, Slot: s})
		}
	case len(cur) > want:
		rest := append([]view(nil), cur...)
		for i := 0; i < len(cur)-want; i++ {
			id := pickStop(rest, false)
			out = append(out, action{Kind: actStop, ID: id})
			for j := range rest {
				if rest[j].ID == id {
					rest = append(rest[:j], rest[j+1:]...)
					break
				}
			}
		}
	}
	return out
}

// pickStop chooses the replica to stop: not-healthy first, then the oldest
// slot (rolling) or the highest slot (scale-down).
func pickStop(c []view, lowest bool) string {
	sorted := append([]view(nil), c...)
	sort.SliceStable(sorted, func(i, j int) bool {
		hi, hj := sorted[i].State == ReplicaHealthy, sorted[j].State == ReplicaHealthy
		if hi != hj {
			return !hi
		}
		if lowest {
			return sorted[i].Slot < sorted[j].Slot
		}
		return sorted[i].Slot > sorted[j].Slot
	})
	return sorted[0].ID
}

// freeSlots returns the n lowest slot numbers no replica uses.
func freeSlots(reps []view, n int) []int {
	used := map[int]bool{}
	for _, r := range reps {
		used[r.Slot] = true
	}
	var out []int
	for s := 0; len(out) < n; s++ {
		if !used[s] {
			out = append(out, s)
		}
	}
	return out
}

// stateOf is the deployment state for want replicas and the observed ones.
func stateOf(want int, deleting bool, reps []view) State {
	if deleting {
		return Deleting
	}
	healthy, unhealthy := 0, 0
	for _, r := range reps {
		if r.Stopping {
			continue
		}
		switch r.State {
		case ReplicaHealthy:
			healthy++
		case ReplicaUnhealthy:
			unhealthy++
		}
	}
	switch {
	case healthy >= want && healthy > 0:
		return Running
	case healthy == 0 && unhealthy > 0:
		return Unhealthy
	case healthy == 0:
		return Deploying
	case unhealthy > 0:
		return Degraded
	}
	return Deploying
}
