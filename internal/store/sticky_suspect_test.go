package store_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestPinnedSuspectPassedOverByItsWorker: a job pinned to worker A with
// FailAfter(30s) crashed once (its lease ran out, reaped), and A's claims
// pass it over as a suspect (A runs one already: NoSuspect). A came, every
// ten seconds: its fallback, for a worker that does not come, starts over
// at each of those claims, as it does for a job A sets waiting on its
// concurrency key, and the job is not archived sticky_unavailable. Before,
// A's fourth claim archived it.
func TestPinnedSuspectPassedOverByItsWorker(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "p", Sticky: store.Sticky{Worker: "A", Mode: "f", After: 30 * time.Second}})
			f.claimOne("A")
			f.clk.Advance(time.Minute) // its lease ran out: a crash
			if _, err := f.reap(10); err != nil {
				t.Fatal(err)
			}
			f.clk.Advance(2 * time.Second) // past the crash's delay
			for i := range 6 {
				res, err := f.st.Claim(f.ctx, f.p, store.ClaimRequest{N: 1, Lease: 30 * time.Second, Worker: "A",
					Nonce: "n" + strconv.Itoa(i), PromoteLimit: 100, NoSuspect: true})
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Parked) > 0 || len(res.Jobs) > 0 {
					t.Fatalf("claim %d of its own worker: parked %+v, leased %d", i, res.Parked, len(res.Jobs))
				}
				f.clk.Advance(10 * time.Second)
			}
			if got, _ := f.get("p"); got.State != "available" {
				t.Fatalf("the pinned suspect is %s (%s), want still available for its worker", got.State, got.Reason)
			}
			if j := f.claimOne("A"); j.Local != "p" { // a claim that takes suspects leases it
				t.Fatalf("claimed %s, want p", j.Local)
			}
		})
	}
}
