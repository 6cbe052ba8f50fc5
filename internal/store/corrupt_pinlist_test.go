package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestClaimWithOwnPinListCorrupt: a claim pops the claiming worker's own
// pin list first (claim.lua take(pin_key(worker))) with redis.call LPOP;
// when that key holds no list it raises, after promote, promote_rated and
// promote_pinned wrote: a due job was promoted but the state counters and
// the FailAfter job's terminal/death index entries (deferred to flush)
// are lost, and no claim of that worker ever succeeds again.
// (TestOperatorCallsPassCorruptKeys covers another worker's pin list
// only.) Want: the claim sets the list aside and leases the due job.
func TestClaimWithOwnPinListCorrupt(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "due", Delay: time.Second},
				store.NewJob{Local: "pinf", Sticky: store.Sticky{Worker: "gone", Mode: "f", After: time.Second}})
			f.overwrite(f.p.Pinned("w"))
			f.clk.Advance(2 * time.Second)
			for try := range 2 {
				res, err := f.st.Claim(f.ctx, f.p, store.ClaimRequest{N: 10, Lease: 30 * time.Second, Worker: "w", Nonce: "n" + string(rune('0'+try)), PromoteLimit: 100})
				if err != nil {
					_, dead := f.score(f.p.Terminal("archived"), "pinf")
					t.Fatalf("claim %d: %v (pinf is %q, in the archived set: %v; stats %v)", try, err, f.rawState("pinf"), dead, f.stats())
				}
				if try == 0 && (len(res.Jobs) != 1 || res.Jobs[0].Local != "due") {
					t.Fatalf("claimed %+v, want due", res.Jobs)
				}
			}
		})
	}
}
