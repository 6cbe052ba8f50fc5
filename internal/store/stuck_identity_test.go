package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestStuckEvidenceLandsOnReenqueuedJob: an attempt of a job deleted and
// enqueued again under the same ID (a new job: its fence starts over)
// does not record its stuck evidence on the new job. stuck.lua took a
// report on the fence alone once the job held no lease ID (reaped), and
// the new job's reaped attempt had the old attempt's fence again; the
// reaper now keeps the ended lease's ID (orphan_lease).
func TestStuckEvidenceLandsOnReenqueuedJob(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "j"})
			old := f.claimOne("wa") // fence 1, then stalls
			f.clk.Advance(31 * time.Second)
			if _, err := f.reap(10); err != nil {
				t.Fatal(err)
			}
			if _, err := f.st.Delete(f.ctx, keys.Ref{Partition: f.p, Local: "j"}); err != nil {
				t.Fatal(err)
			}
			// a new job under the same ID, whose first attempt is reaped too
			f.enqueue(store.NewJob{Local: "j"})
			nj := f.claimOne("wc")
			f.clk.Advance(31 * time.Second)
			if _, err := f.reap(10); err != nil {
				t.Fatal(err)
			}
			before, _ := f.get("j")
			rep := sluicetype.StuckInfo{Case: "ignored_stop", Why: "old attempt", Since: f.clk.Now()}
			ok, err := f.st.Stuck(f.ctx, f.p, lease(old), rep)
			if err != nil {
				t.Fatal(err)
			}
			after, _ := f.get("j")
			if ok || after.Stuck != nil {
				t.Errorf("the deleted job's attempt (lease %s, fence %d) wrote its evidence on the new job (whose attempt was lease %s, fence %d; evidence before %+v): written %v, evidence %+v",
					old.LeaseID, old.Fence, nj.LeaseID, nj.Fence, before.Stuck, ok, after.Stuck)
			}
		})
	}
}

// TestStuckEvidenceAfterOperatorCancel: runtime.Stuck records evidence
// on the job "while no newer attempt has claimed the job". An operator's
// cancel is no newer attempt, and a handler that ignores the cancellation
// is the 'ignored_stop' case; cancel.lua raises the fence (every later
// write of the attempt is refused), so stuck.lua refused the evidence
// too: it now knows the attempt by its lease ID, which cancel keeps.
func TestStuckEvidenceAfterOperatorCancel(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "j"})
			a := f.claimOne("wa")
			if _, err := f.st.Cancel(f.ctx, keys.Ref{Partition: f.p, Local: "j"}, 0); err != nil {
				t.Fatal(err)
			}
			rep := sluicetype.StuckInfo{Case: "ignored_stop", Why: "told to stop (cancelled)", Since: f.clk.Now()}
			ok, err := f.st.Stuck(f.ctx, f.p, lease(a), rep)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				got, _ := f.get("j")
				t.Errorf("evidence of the cancelled attempt (no newer claim: job %s, fence %d -> %d) refused", got.State, a.Fence, got.Fence)
			}
		})
	}
}
