package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestLaterBucketReturn: a job that leaves its bucket of later jobs
// before the bucket comes due (run now, a signal) and comes back to the
// same bucket (snoozed, or asleep on the same timer) is listed there
// once, however many times it does, and still runs at its due time. A
// second entry listed it twice (a delete's dry run counted it twice), and
// a job woken and put back many times filled the bucket. Once the bucket
// came due and its stale entry went, the job is listed anew, even with
// the store's clock gone back.
func TestLaterBucketReturn(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "j", Delay: time.Hour})
			bucket := f.rdb.ZRange(f.ctx, f.p.Later(), 0, -1).Val()
			if len(bucket) != 1 {
				t.Fatalf("buckets %v, want one", bucket)
			}
			for range 3 {
				if _, err := f.st.RunNow(f.ctx, f.ref("j")); err != nil {
					t.Fatal(err)
				}
				f.ack(f.claimOne("w"), store.Ack{Code: store.CodeSnooze, Delay: time.Hour})
			}
			if got := f.rdb.LRange(f.ctx, f.p.LaterBucket(bucket[0]), 0, -1).Val(); len(got) != 1 {
				t.Fatalf("the bucket lists %v, want j once", got)
			}
			if l := f.listAll("scheduled", 10); len(l) != 1 {
				t.Errorf("listing scheduled jobs: %v, want [j] once", l)
			}
			if n, _ := f.deleteScan(store.Selector{State: "scheduled"}, 100, true); n != 1 {
				t.Errorf("a dry run counted %d, want 1", n)
			}
			f.clk.Advance(time.Hour)
			j := f.claimOne("w")
			if j.Local != "j" {
				t.Fatalf("claimed %s at the due time, want j", j.Local)
			}

			// out of its bucket again, which then comes due: its stale
			// entry goes, and so does the note of it; with the clock gone
			// back, the job put in that bucket is listed there anew
			f.ack(j, store.Ack{Code: store.CodeSnooze, Delay: time.Hour})
			if _, err := f.st.RunNow(f.ctx, f.ref("j")); err != nil {
				t.Fatal(err)
			}
			j = f.claimOne("w")
			f.clk.Advance(time.Hour)
			if _, err := f.promote(100); err != nil {
				t.Fatal(err)
			}
			f.clk.Advance(-time.Hour)
			f.ack(j, store.Ack{Code: store.CodeSnooze, Delay: time.Hour})
			f.clk.Advance(time.Hour)
			if j := f.claimOne("w"); j.Local != "j" {
				t.Fatalf("claimed %s at the due time after the clock went back, want j", j.Local)
			}
		})
	}
}
