package store_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// deleteScanBetween runs a delete scan of scheduled jobs to its end in
// batches of two, calling between after each step but the last; it
// returns the matches.
func (f *fixture) deleteScanBetween(dry bool, between func(step int)) int {
	f.t.Helper()
	var cur store.ScanCursor
	matched := 0
	for step := 0; ; step++ {
		st, err := f.st.DeleteStep(f.ctx, f.p, store.Selector{State: "scheduled"}, cur, 2, dry)
		if err != nil {
			f.t.Fatal(err)
		}
		matched, cur = matched+st.Matched, st.Cursor
		if st.Done {
			return matched
		}
		between(step)
	}
}

// TestDeleteScanAcrossBucketMoves: a delete by selector of scheduled jobs
// made over several steps deletes every job that was scheduled when it
// began, even when a worker moves a bucket of later jobs into the near
// index between two steps (their time nears). The scan read the near
// index first and the buckets after it, so a bucket moved once the near
// index was read was missed; and a bucket's head moved under its cursor
// shifted the entries the cursor counted (it counts from the tail now).
func TestDeleteScanAcrossBucketMoves(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			var jobs []store.NewJob
			for i := range 5 {
				jobs = append(jobs, store.NewJob{Local: fmt.Sprintf("soon%d", i), Delay: 20 * time.Second})
			}
			for i := range 3 {
				jobs = append(jobs, store.NewJob{Local: fmt.Sprintf("late%d", i), Delay: time.Hour})
			}
			f.enqueue(jobs...)
			if n := f.deleteScanBetween(true, func(int) {}); n != len(jobs) {
				t.Fatalf("dry run: matched %d, want %d", n, len(jobs))
			}
			n := f.deleteScanBetween(false, func(step int) {
				if step == 0 {
					// the scan is in the soon jobs' bucket, which comes
					// within the near index's horizon: maintenance moves
					// the rest of it under the scan's cursor
					f.clk.Advance(16 * time.Second)
					if _, err := f.promote(100); err != nil {
						t.Fatal(err)
					}
					if n := f.rdb.ZCard(f.ctx, f.p.Sched()).Val(); n < 3 {
						t.Fatalf("the near index holds %d entries after the move, want the soon jobs", n)
					}
				}
			})
			if left := f.stats()["scheduled"]; n != len(jobs) || left != 0 {
				t.Fatalf("deleted %d of %d, %d scheduled jobs left", n, len(jobs), left)
			}
		})
	}
}

// TestDeleteScanAcrossDebounce: a delete by selector of scheduled jobs
// deletes a job that a debounced duplicate puts off during the scan,
// from one bucket of later jobs to a later one, or from the near index
// to a bucket. A helper's review of the scan's first fix (buckets from
// the last, then the near index) found it missed both.
func TestDeleteScanAcrossDebounce(t *testing.T) {
	t.Parallel()
	uq := store.Unique{Key: "u", OnDuplicate: "debounce"}
	for _, b := range backends(t) {
		for name, jobs := range map[string][]store.NewJob{
			"from a bucket": {{Local: "a0", Delay: 20 * time.Second}, {Local: "a1", Delay: 20 * time.Second},
				{Local: "deb", Delay: time.Minute, Unique: uq}, {Local: "late0", Delay: time.Hour}},
			"from the near index": {{Local: "late0", Delay: time.Hour}, {Local: "a1", Delay: time.Second},
				{Local: "a2", Delay: 2 * time.Second}, {Local: "deb", Delay: 4 * time.Second, Unique: uq}},
		} {
			t.Run(b.name+"/"+name, func(t *testing.T) {
				f := newFixture(t, b)
				f.enqueue(jobs...)
				n := f.deleteScanBetween(false, func(step int) {
					if step == 0 {
						f.duplicate(store.NewJob{Local: "deb2", Delay: 2 * time.Hour, Unique: uq})
					}
				})
				if left := f.stats()["scheduled"]; n != len(jobs) || left != 0 {
					t.Fatalf("deleted %d of %d, %d scheduled jobs left", n, len(jobs), left)
				}
			})
		}
	}
}
