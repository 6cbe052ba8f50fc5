package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// TestClaimSetsCorruptWaitListAside: a claim that sets a job waiting on
// its concurrency key or rate class, whose wait list holds no list
// (corrupt data), sets that value aside and starts the list anew with the
// job. It raised at that push before: by then the claim had popped its
// batch and leased the job before the waiter, whose run-index entry was
// still deferred to flush(), so that job ran under a lease nobody held
// and was never reaped, the waiter was on no list, and every claim that
// met a waiter of the key failed the same way.
func TestClaimSetsCorruptWaitListAside(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		lim  store.Limits
		list func(p keys.Partition) string
		kind string // its value is set aside under kind, of name
		of   string
	}{
		{"concurrency wait list", store.Limits{ConcurrencyKey: "k", ConcurrencyLimit: 1},
			func(p keys.Partition) string { return p.ConcurrencyWait("k") }, keys.AsideCCWait, "k"},
		{"rate wait list", store.Limits{RateClass: "r", RateJobs: 1, RatePer: time.Hour, RateBurst: 1},
			func(p keys.Partition) string { return p.RateWait("r") }, keys.AsideRateWait, "r"},
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
				f.overwrite(tc.list(f.p))
				res, err := f.st.Claim(f.ctx, f.p, store.ClaimRequest{N: 10, Lease: 30 * time.Second, Worker: "w", Nonce: "n1", PromoteLimit: 100})
				if err != nil {
					_, inRun := f.score(f.p.Running(), "plain")
					t.Fatalf("claim: %v (want the waiter handled alone; plain is %q, in the run index: %v; waiter is %q, list 0 %v)",
						err, f.rawState("plain"), inRun, f.rawState("waiter"), f.availableOrder(0))
				}
				if len(res.Jobs) != 1 || res.Jobs[0].Local != "plain" {
					t.Fatalf("claimed %+v, want plain", res.Jobs)
				}
				if _, inRun := f.score(f.p.Running(), "plain"); !inRun {
					t.Error("plain is not in the run index")
				}
				if got := f.list(tc.list(f.p)); len(got) != 1 || got[0] != "waiter" {
					t.Errorf("wait list %v, want [waiter]", got)
				}
				if tc.lim.ConcurrencyKey != "" && f.ccWaiting("k") != 1 {
					t.Errorf("waiter count %d, want 1", f.ccWaiting("k"))
				}
				if got := f.rdb.Get(f.ctx, f.p.Aside(tc.kind, tc.of, 1)).Val(); got != "overwritten" {
					t.Errorf("set aside %q, want the corrupt value", got)
				}
			})
		}
	}
}
