package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestFinishBoundAtTheEpoch: a finish-time bound that comes to the epoch's
// first millisecond went to the scan scripts as 0, which they read as no
// bound: "finished before 1970-01-01T00:00:00.0005Z" selected every job
// of the state, and a real run deleted them (found by an audit). Such a
// before selects none now, such an after every job, in a dry run and a
// real one alike; a bound a millisecond later selects as it did.
func TestFinishBoundAtTheEpoch(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "a"}, store.NewJob{Local: "b"})
			for range 2 {
				f.ack(f.claimOne("w"), store.Ack{Code: store.CodeOK})
			}
			epoch := time.Unix(0, 0)
			for _, c := range []struct {
				name string
				sel  store.Selector
				want int
			}{
				{"before the epoch", store.Selector{State: "completed", Before: epoch}, 0},
				{"before half a millisecond in", store.Selector{State: "completed", Before: epoch.Add(500 * time.Microsecond)}, 0},
				{"before 1969", store.Selector{State: "completed", Before: epoch.Add(-time.Hour)}, 0},
				{"after the epoch", store.Selector{State: "completed", After: epoch}, 2},
				{"before a millisecond in", store.Selector{State: "completed", Before: epoch.Add(time.Millisecond)}, 0},
			} {
				if n, _ := f.deleteScan(c.sel, 10, true); n != c.want {
					t.Errorf("%s: a dry run matched %d, want %d", c.name, n, c.want)
				}
			}
			if n, _ := f.deleteScan(store.Selector{State: "completed", Before: epoch}, 10, false); n != 0 {
				t.Fatalf("deleted %d jobs finished before the epoch", n)
			}
			if s := f.stats(); s["completed"] != 2 {
				t.Fatalf("after the scans: %v, want both jobs completed", s)
			}
		})
	}
}
