package store_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// TestStateCounts: the per-state counters of several partitions (in
// different slots on a cluster) are read in one call; a partition without
// jobs has none.
func TestStateCounts(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "a"}, store.NewJob{Local: "b"}, store.NewJob{Local: "c", Delay: time.Hour})
			f.ack(f.claimOne("w"), store.Ack{Code: store.CodeOK})
			other := f.st.Partition("other", 3)
			got, err := f.st.StateCounts(f.ctx, []keys.Partition{f.p, other})
			if err != nil {
				t.Fatal(err)
			}
			want := []map[string]int64{{"available": 1, "scheduled": 1, "completed": 1, "running": 0}, {}}
			// A counter that went back to zero may be kept or removed.
			if _, ok := got[0]["running"]; !ok {
				delete(want[0], "running")
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("counts (-want +got):\n%s", d)
			}
		})
	}
}
