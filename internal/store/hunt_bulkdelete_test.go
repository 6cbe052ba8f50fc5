package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestHuntDeleteScanCorruptLaterBucket: a delete by selector of scheduled
// jobs reads the sched zset, then the buckets of later jobs with
// redis.call LRANGE (bulkdelete.lua); a bucket key that holds no list (the
// corruption sched_near sets aside) raises after the step deleted the
// jobs it met in sched (remove_job deletes at once): their state counts,
// deferred to flush(), are never taken off (the queue reports scheduled
// jobs that do not exist), the step's cursor is never answered, and
// every step from the start fails the same way, so the scan never ends.
// Want: the step succeeds (the bucket passed over or named as
// unreadable), and the scan ends with the counts right.
func TestHuntDeleteScanCorruptLaterBucket(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "soon", Delay: time.Second})
			f.corruptBucketOf(time.Minute) // enqueues "probe" there first
			var cur store.ScanCursor
			for step := 0; ; step++ {
				st, err := f.st.DeleteStep(f.ctx, f.p, store.Selector{State: "scheduled"}, cur, 10, false)
				if err != nil {
					t.Fatalf("step %d: %v (soon is %q; stats %v)", step, err, f.rawState("soon"), f.stats())
				}
				cur = st.Cursor
				if st.Done || step > 10 {
					break
				}
			}
			if f.rawState("soon") != "" {
				t.Errorf("soon is %q, want deleted", f.rawState("soon"))
			}
		})
	}
}
