package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestHunt2ResentOfferingClaimStaleDry: a claim that ran dry and made an
// offer is now recorded; sent again (its reply lost) after a job was
// listed, it answers "dry" from its record with the job available, and
// sets no idle flag: the listing's wake deleted the flag with the offer,
// so the worker, told the partition is dry, sleeps, and enqueues after
// that publish no wake-up either (no flag). Before the change a dry claim
// was not recorded: the re-send ran again, claimed the job (or set the
// flag).
func TestHunt2ResentOfferingClaimStaleDry(t *testing.T) {
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
			listed := plain("a")
			listed.Priority = 1 // not plain: listed, not pushed
			o.enqueue(listed)
			res, err := o.st.Claim(o.ctx, o.p, req)
			if err != nil {
				t.Fatal(err)
			}
			if res.Dry && len(res.Jobs) == 0 {
				t.Errorf("re-sent claim answers dry with job a listed since (idle flag now %q)", o.idleFlag())
			}
		})
	}
}
