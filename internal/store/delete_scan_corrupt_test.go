package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestDeleteScanPassesCorruptLaterBucket: a delete by selector of
// scheduled jobs reads the sched zset, then the buckets of later jobs
// (bulkdelete.lua); a bucket whose key holds no list (corrupt data) is
// passed over, and the scan ends with the jobs it met deleted and
// uncounted. The bucket's LRANGE raised before, after the step had
// deleted the jobs it met in sched (remove_job deletes at once): their
// state counts, deferred to flush(), stayed, no cursor was answered,
// and every step from the start failed the same way: the scan never
// ended.
func TestDeleteScanPassesCorruptLaterBucket(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "soon", Delay: time.Second})
			// a job due in a minute makes its bucket of later jobs, which
			// then holds a string
			f.enqueue(store.NewJob{Local: "probe", Delay: time.Minute})
			bs := f.rdb.ZRange(f.ctx, f.p.Later(), 0, -1).Val()
			if len(bs) != 1 {
				t.Fatalf("buckets %v, want one", bs)
			}
			f.overwrite(f.p.LaterBucket(bs[0]))
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
			// probe, in the unreadable bucket, is still a scheduled job
			if got := f.stats(); got["scheduled"] != 1 {
				t.Errorf("state counts %v, want 1 scheduled", got)
			}
		})
	}
}
