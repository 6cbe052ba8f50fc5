package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/sluicetype"
)

// TestStuckEvidenceAfterReap: an attempt whose lease expired and was
// reaped (the reaper deletes the job's lease ID) records its stuck
// evidence on the job while no newer attempt has claimed it, as
// runtime.Stuck promises: the job's fence is still the attempt's. Once a
// newer attempt claimed the job, the stale attempt's evidence is refused.
func TestStuckEvidenceAfterReap(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			j := f.runningJob()
			f.clk.Advance(31 * time.Second)
			if reaped, err := f.reap(10); err != nil || len(reaped) != 1 {
				t.Fatalf("reap: %+v %v", reaped, err)
			}
			rep := sluicetype.StuckInfo{Case: "ignored_stop", Why: "told to stop (lease lost)", Since: f.clk.Now()}
			if ok, err := f.st.Stuck(f.ctx, f.p, lease(j), rep); err != nil || !ok {
				got, _ := f.get("job")
				t.Fatalf("evidence of the reaped attempt (job now %s, fence %d, no newer claim): written %v, %v", got.State, got.Fence, ok, err)
			}
			if got, _ := f.get("job"); got.Stuck == nil || got.Stuck.Case != "ignored_stop" || got.Stuck.Fence != j.Fence {
				t.Fatalf("job's stuck evidence %+v, want the reaped attempt's", got.Stuck)
			}
			f.clk.Advance(time.Minute) // past the crash delay
			if n := len(f.claim(1, "w2").Jobs); n != 1 {
				t.Fatalf("claimed %d jobs, want the reaped one again", n)
			}
			if ok, err := f.st.Stuck(f.ctx, f.p, lease(j), rep); err != nil || ok {
				t.Fatalf("evidence of the old attempt after a newer claim: written %v, %v; want refused", ok, err)
			}
		})
	}
}
