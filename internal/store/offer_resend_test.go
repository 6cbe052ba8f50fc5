package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestOfferClaimResent: a claim that ran dry and left an offer, re-sent
// under its ID (its reply was lost: fetch.go failedClaim), answers from
// its record and makes no second offer. When it did (found by a review:
// claim.lua recorded only a claim that leased or archived), the offer
// was written afresh, k back at its start: the next push leased a job
// under a lease ID an earlier push had given to another job of the same
// partition on the same worker (a renewal's lost lease, store.Lost,
// names only the lease ID: both attempts cancelled), and the offer
// pushed more jobs than it offered.
func TestOfferClaimResent(t *testing.T) {
	t.Parallel()
	for _, b := range offerBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			o := newOffered(t, b)
			req := store.ClaimRequest{
				N: 5, Lease: 30 * time.Second, Worker: "w", Nonce: "n1", ID: "n1", PromoteLimit: 100,
				Offer: 2, OfferChannel: o.ch, OfferFor: time.Second,
			}
			if res, err := o.st.Claim(o.ctx, o.p, req); err != nil || !res.Dry {
				t.Fatalf("claim: %+v %v", res, err)
			}
			o.enqueue(plain("a"))
			// the worker did not get the first run's reply: it sends the
			// same claim again, under its ID
			if res, err := o.st.Claim(o.ctx, o.p, req); err != nil || !res.Dry || len(res.Jobs) != 0 {
				t.Fatalf("re-sent claim: %+v %v", res, err)
			}
			o.enqueue(plain("b"), plain("c"))
			got := o.pushes()
			leases, n := map[string]string{}, 0
			for _, p := range got {
				for _, j := range p.Jobs {
					if other, dup := leases[j.LeaseID]; dup {
						t.Errorf("jobs %s and %s both pushed under lease %s", other, j.Local, j.LeaseID)
					}
					leases[j.LeaseID] = j.Local
					n++
				}
			}
			if n > 2 {
				t.Errorf("an offer of 2 pushed %d jobs", n)
			}
		})
	}
}
