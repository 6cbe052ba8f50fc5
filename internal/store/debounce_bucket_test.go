package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestDebounceWithinBucketDryRun: a debounced duplicate that moves a
// scheduled holder's due time within the same bucket of later jobs leaves
// the job listed once there: a dry run of a delete by selector counts it
// once, as the real run deletes it once. A helper's audit found the move
// added a second entry to the bucket, which the dry run counted.
func TestDebounceWithinBucketDryRun(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			uq := store.Unique{Key: "u", OnDuplicate: "debounce"}
			f.enqueue(store.NewJob{Local: "j", Delay: time.Hour, Unique: uq})
			f.clk.Advance(time.Second)
			res, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{{Local: "j2", Kind: "k", Payload: []byte("x"), MaxAttempts: 3, Delay: time.Hour, Unique: uq}})
			if err != nil || res[0].Status != store.Held {
				t.Fatalf("duplicate: %+v %v", res, err)
			}
			if l := f.listAll("scheduled", 10); len(l) != 1 {
				t.Errorf("listing scheduled jobs: %v, want [j] once", l)
			}
			sel := store.Selector{State: "scheduled"}
			dry, _ := f.deleteScan(sel, 100, true)
			got, _ := f.deleteScan(sel, 100, false)
			if dry != got || got != 1 {
				t.Fatalf("dry run counted %d scheduled jobs, the real run deleted %d (one job exists)", dry, got)
			}
		})
	}
}
