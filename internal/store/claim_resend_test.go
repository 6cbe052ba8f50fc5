package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestResentClaimLeavesLapsedLeases: a claim sent again (its reply lost)
// answers from its record only the jobs whose leases still run by store
// time. One whose lease has run out since the first run (a kind with a
// short lease) is the reaper's: handed back, its handler would start on a
// lease every write of it finds over.
func TestResentClaimLeavesLapsedLeases(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "short", Kind: "short"}, store.NewJob{Local: "long", Kind: "long"})
			req := store.ClaimRequest{
				N: 2, Lease: time.Minute, KindLease: map[string]time.Duration{"short": 2 * time.Second},
				Worker: "w", Nonce: "w-1", ID: "w-1", PromoteLimit: 100,
			}
			first, err := f.st.Claim(f.ctx, f.p, req)
			if err != nil || len(first.Jobs) != 2 {
				t.Fatalf("claim: %d jobs, %v", len(first.Jobs), err)
			}
			f.clk.Advance(time.Second) // both leases run
			again, err := f.st.Claim(f.ctx, f.p, req)
			if err != nil || len(again.Jobs) != 2 {
				t.Fatalf("re-sent claim within both leases: %d jobs, %v; want both", len(again.Jobs), err)
			}
			f.clk.Advance(2 * time.Second) // short's lease is over, long's runs
			late, err := f.st.Claim(f.ctx, f.p, req)
			if err != nil {
				t.Fatal(err)
			}
			if len(late.Jobs) != 1 || late.Jobs[0].Local != "long" {
				var got []string
				for _, j := range late.Jobs {
					got = append(got, j.Local)
				}
				t.Fatalf("re-sent claim past short's lease answered %v, want [long]", got)
			}
			if late.Jobs[0].LeaseID != first.Jobs[1].LeaseID && late.Jobs[0].LeaseID != first.Jobs[0].LeaseID {
				t.Fatalf("long's lease %q is not one the first run drew", late.Jobs[0].LeaseID)
			}
			reaped, err := f.reap(10)
			if err != nil {
				t.Fatal(err)
			}
			if got := reapedStates(reaped); len(got) != 1 || got["short"] == "" {
				t.Fatalf("reaped %v, want short alone", got)
			}
		})
	}
}
