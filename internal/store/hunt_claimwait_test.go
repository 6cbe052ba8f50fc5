package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestHuntClaimCorruptWaitList: a claim that must set a job waiting on its
// concurrency key (cc_wait) or rate class (rate_wait), whose wait list
// holds no list, raises at that RPUSH (lib_limits.lua: redis.call, not
// pcall as cc_release, unlist and promote_rated use on the same keys).
// By then the claim has popped the jobs of its batch off their list and
// written the lease of the job before it (state running), its run-index
// entry still deferred to flush(): that job runs under no lease the
// worker knows and is never reaped, and the popped waiter is on no list.
// Every claim that meets a waiter of that key fails the same way.
// Want: the claim succeeds and leases the other job; the waiter is dealt
// with alone.
func TestHuntClaimCorruptWaitList(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		lim     store.Limits
		corrupt func(f *fixture)
	}{
		{"concurrency wait list", store.Limits{ConcurrencyKey: "k", ConcurrencyLimit: 1},
			func(f *fixture) { f.overwrite(f.p.ConcurrencyWait("k")) }},
		{"rate wait list", store.Limits{RateClass: "r", RateJobs: 1, RatePer: time.Hour, RateBurst: 1},
			func(f *fixture) { f.overwrite(f.p.RateWait("r")) }},
	}
	for _, b := range backends(t) {
		for _, tc := range cases {
			t.Run(b.name+"/"+tc.name, func(t *testing.T) {
				f := newFixture(t, b)
				f.enqueue(store.NewJob{Local: "first", Limits: tc.lim})
				if got := f.claimed("n0"); len(got) != 1 || got[0] != "first" {
					t.Fatalf("claimed %v, want first (it takes the key's slot, or the class's token)", got)
				}
				f.enqueue(store.NewJob{Local: "plain"}, store.NewJob{Local: "waiter", Limits: tc.lim})
				tc.corrupt(f)
				res, err := f.st.Claim(f.ctx, f.p, store.ClaimRequest{N: 10, Lease: 30 * time.Second, Worker: "w", Nonce: "n1", PromoteLimit: 100})
				if err != nil {
					_, inRun := f.score(f.p.Running(), "plain")
					t.Fatalf("claim: %v (want the waiter handled alone; plain is %q, in the run index: %v; waiter is %q, list 0 %v)",
						err, f.rawState("plain"), inRun, f.rawState("waiter"), f.availableOrder(0))
				}
				if len(res.Jobs) != 1 || res.Jobs[0].Local != "plain" {
					t.Fatalf("claimed %+v, want plain", res.Jobs)
				}
			})
		}
	}
}
