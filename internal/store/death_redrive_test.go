package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// TestDoneDeathKeepsNewDeathAfterRedrivePark: a death handler that
// finishes after its job was redriven and died again without an attempt
// in between (a claim parks it again: deadline exceeded) does not drop
// the new death's pending report. A park does not raise the fence: the
// redrive count tells the two deaths apart.
func TestDoneDeathKeepsNewDeathAfterRedrivePark(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "d", Deadline: epoch.Add(time.Second)})
			f.clk.Advance(2 * time.Second)
			res := f.claim(1, "w1")
			if len(res.Parked) != 1 || res.Parked[0].Reason != "deadline_exceeded" {
				t.Fatalf("first claim: parked %+v, want d deadline_exceeded", res.Parked)
			}
			first, _ := f.get("d")
			// the first death's handler starts (it holds the snapshot's fence)
			// ... meanwhile an operator redrives the job, and a claim parks it
			// again: a second death
			errs, err := f.st.RedriveIDs(f.ctx, f.p, store.ActionRedrive, []string{"d"})
			if err != nil || errs[0] != nil {
				t.Fatalf("redrive: %v %v", err, errs)
			}
			f.clk.Advance(time.Second)
			res = f.claim(1, "w2")
			if len(res.Parked) != 1 {
				t.Fatalf("second claim: parked %+v, want d", res.Parked)
			}
			second, _ := f.get("d")
			if _, err := f.rdb.ZScore(f.ctx, f.p.Deaths(), "d").Result(); err != nil {
				t.Fatalf("second death has no pending report: %v", err)
			}
			// the first handler finishes: it drops the report of its death
			if err := f.st.DoneDeath(f.ctx, f.p, "d", first.Fence, first.Redrives, first.LeaseID); err != nil {
				t.Fatal(err)
			}
			if _, err := f.rdb.ZScore(f.ctx, f.p.Deaths(), "d").Result(); err != nil {
				t.Fatalf("the first death's DoneDeath (fence %d) dropped the pending report of the second death (fence %d, redriven %d): %v",
					first.Fence, second.Fence, second.Redrives, err)
			}
			// the second death's handler drops its own report
			if err := f.st.DoneDeath(f.ctx, f.p, "d", second.Fence, second.Redrives, second.LeaseID); err != nil {
				t.Fatal(err)
			}
			if n := f.rdb.ZCard(f.ctx, f.p.Deaths()).Val(); n != 0 {
				t.Errorf("%d death reports left after both handlers ran", n)
			}
		})
	}
}

// TestDoneDeathKeepsReenqueuedJobsReport: the handler of a death of a job
// that was then deleted and enqueued again under its ID, and died again,
// does not drop the new job's pending report when it finishes: the new
// job's fences start over, its lease IDs are its own.
func TestDoneDeathKeepsReenqueuedJobsReport(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "d"})
			old := f.claimOne("w1")
			if r := f.ack(old, store.Ack{Code: store.CodeSkip}); r.State != "archived" {
				t.Fatalf("skip: %+v", r)
			}
			// its death handler starts; an operator deletes the job, which is
			// enqueued again and dies again
			if _, err := f.st.Delete(f.ctx, keys.Ref{Partition: f.p, Local: "d"}); err != nil {
				t.Fatal(err)
			}
			f.enqueue(store.NewJob{Local: "d"})
			nj := f.claimOne("w2")
			if r := f.ack(nj, store.Ack{Code: store.CodeSkip}); r.State != "archived" {
				t.Fatalf("skip: %+v", r)
			}
			if err := f.st.DoneDeath(f.ctx, f.p, "d", old.Fence, old.Redrives, old.LeaseID); err != nil {
				t.Fatal(err)
			}
			if _, err := f.rdb.ZScore(f.ctx, f.p.Deaths(), "d").Result(); err != nil {
				t.Fatalf("the deleted job's DoneDeath (fence %d) dropped the new job's pending report (fence %d): %v",
					old.Fence, nj.Fence, err)
			}
			if err := f.st.DoneDeath(f.ctx, f.p, "d", nj.Fence, nj.Redrives, nj.LeaseID); err != nil {
				t.Fatal(err)
			}
			if n := f.rdb.ZCard(f.ctx, f.p.Deaths()).Val(); n != 0 {
				t.Errorf("%d death reports left after both handlers ran", n)
			}
		})
	}
}
