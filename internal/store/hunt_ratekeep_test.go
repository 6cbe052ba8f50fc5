package store_test

import (
	"sort"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestHuntClaimHugeRateLimit: the rate limit of TestEnqueueHugeRateLimit
// (a burst of 1e8 per 1,000 h), whose enqueue was fixed by clamping the
// bucket's PEXPIRE in rate_define, is claimed. flush() (lib_batch.lua)
// writes the bucket back with its own PEXPIRE,
// math.max(math.ceil(per * burst / n) * 2, RATE_KEEP), neither clamped
// nor formatted as an integer: Lua hands PEXPIRE '7.2e+17', which Redis
// refuses, at the very end of the claim, after the leases were written
// and indexed. The worker gets an error and not its jobs, which run
// under leases nobody holds until the reaper charges each a crash (the
// crash limit quarantines them), and every claim that meets the class
// does it again. Want: the claim succeeds and leases both jobs.
func TestHuntClaimHugeRateLimit(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "a"}, store.NewJob{Local: "b",
				Limits: store.Limits{RateClass: "r", RateJobs: 1, RatePer: 1000 * time.Hour, RateBurst: 100_000_000}})
			res, err := f.st.Claim(f.ctx, f.p, store.ClaimRequest{N: 10, Lease: 30 * time.Second, Worker: "w", Nonce: "n1", PromoteLimit: 100})
			if err != nil {
				t.Fatalf("claim: %v (a is %q, b is %q, run index %v)", err, f.rawState("a"), f.rawState("b"),
					f.rdb.ZRange(f.ctx, f.p.Running(), 0, -1).Val())
			}
			var got []string
			for _, j := range res.Jobs {
				got = append(got, j.Local)
			}
			sort.Strings(got)
			if len(got) != 2 || got[0] != "a" || got[1] != "b" {
				t.Fatalf("claimed %v, want a and b", got)
			}
		})
	}
}
