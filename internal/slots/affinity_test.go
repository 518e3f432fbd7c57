package slots

import (
	"testing"

	"github.com/raygw/raygw/internal/admission"
)

// The scheduler remembers a prefix when it grants the slot and the handler
// again once the engine accepted: the second call changes nothing.
func TestRememberIdempotent(t *testing.T) {
	tr, _, _ := newTracker(t, twoFree)
	tr.Remember(1, 9)
	tr.Remember(1, 9)
	if tr.Holder(9) != 1 || tr.Score(1, 9) != 1 || tr.Score(0, 9) != 0 {
		t.Fatalf("holder = %d, want 1", tr.Holder(9))
	}
	tr.Remember(1, 10) // slot 1 moves on
	tr.Remember(1, 9)  // and back
	if tr.Holder(9) != 1 || tr.Holder(10) != -1 {
		t.Fatalf("holders 9=%d 10=%d, want 1 and -1", tr.Holder(9), tr.Holder(10))
	}
}

// A scheduler using the tracker records the prefix on the granted slot at
// once, before any engine call.
func TestSchedulerRemembersOnGrant(t *testing.T) {
	tr, _, _ := newTracker(t, twoFree)
	s := admission.New(admission.Options{Concurrency: 2, Slots: 2, Affinity: tr})
	a, err := s.Acquire(t.Context(), admission.Job{OutputCap: 1, PrefixKey: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	if a.Slot != 0 || tr.Holder(5) != 0 {
		t.Fatalf("slot %d, holder %d, want 0 and 0", a.Slot, tr.Holder(5))
	}
}
