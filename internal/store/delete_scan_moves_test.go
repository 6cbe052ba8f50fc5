package store_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestDeleteScanAcrossBucketMoves: a delete by selector of scheduled jobs
// made over several steps deletes every job that was scheduled when it
// began, even when a worker moves a bucket of later jobs into the near
// index between two steps (their time nears). The scan read the near
// index first and the buckets after it, so a bucket moved once the near
// index was read was missed; and a bucket's head moved under its cursor
// shifted the entries the cursor counted.
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
			for _, dry := range []bool{true, false} {
				var cur store.ScanCursor
				matched := 0
				for step := 0; ; step++ {
					st, err := f.st.DeleteStep(f.ctx, f.p, store.Selector{State: "scheduled"}, cur, 2, dry)
					if err != nil {
						t.Fatal(err)
					}
					matched, cur = matched+st.Matched, st.Cursor
					if st.Done {
						break
					}
					if step == 1 && !dry {
						// the scan is in the soon jobs' bucket (the late
						// ones' is read first now), which comes within the
						// near index's horizon: maintenance moves it
						f.clk.Advance(16 * time.Second)
						if _, err := f.promote(100); err != nil {
							t.Fatal(err)
						}
						if n := f.rdb.ZCard(f.ctx, f.p.Sched()).Val(); n < 3 {
							t.Fatalf("the near index holds %d entries after the move, want the soon jobs", n)
						}
					}
				}
				if matched != len(jobs) {
					t.Fatalf("dry run %v: matched %d, want %d", dry, matched, len(jobs))
				}
			}
			if left := f.stats()["scheduled"]; left != 0 {
				t.Fatalf("%d scheduled jobs left after the delete", left)
			}
		})
	}
}
