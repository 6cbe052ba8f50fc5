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
			req := o.offeringRequest()
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

// TestOfferingClaimResentAfterAListing: a claim that ran dry and made an
// offer is recorded; sent again (its reply lost) after a job was listed
// (its wake deleted the flag and the offer), it answers from its record,
// no second offer made, but tells the worker to claim again at once
// (NextDue 0), not that the partition is dry: the worker may have heard
// the listing's wake-up before this answer (found by a review: it slept
// until IdlePoll). With the flag still there, the record's answer stands.
func TestOfferingClaimResentAfterAListing(t *testing.T) {
	t.Parallel()
	for _, b := range offerBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			o := newOffered(t, b)
			req := o.offeringRequest()
			if res, err := o.st.Claim(o.ctx, o.p, req); err != nil || !res.Dry || res.Scheduled {
				t.Fatalf("claim: %+v %v", res, err)
			}
			if res, err := o.st.Claim(o.ctx, o.p, req); err != nil || !res.Dry || res.Scheduled {
				t.Fatalf("claim re-sent with the offer standing: %+v %v; want its dry answer", res, err)
			}
			listed := plain("a")
			listed.Priority = 1 // not plain: listed, not pushed
			o.enqueue(listed)
			res, err := o.st.Claim(o.ctx, o.p, req)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Jobs) != 0 || !res.Scheduled || res.NextDue != 0 {
				t.Fatalf("claim re-sent after a listing: %+v; want no job (its record) and next due now", res)
			}
			if f := o.idleFlag(); f != "" {
				t.Fatalf("idle flag %q: the re-send made an offer again", f)
			}
		})
	}
}

// offeringRequest is a claim of 5 by worker w under nonce and call ID n1,
// offering 2 for a second.
func (o *offered) offeringRequest() store.ClaimRequest {
	return store.ClaimRequest{
		N: 5, Lease: 30 * time.Second, Worker: "w", Nonce: "n1", ID: "n1", PromoteLimit: 100,
		Offer: 2, OfferChannel: o.ch, OfferFor: time.Second,
	}
}
