package store_test

import (
	"slices"
	"testing"

	"github.com/sluicehq/sluice/internal/store"
)

// TestOfferHandBacksKeepOrder: the jobs one enqueue pushes come in one
// message, in the call's order; a worker that can run none of them
// releases them newest first (runtime/push.go handBack), and the first
// pushed is first in its list again, as without the push. (Found by a
// review: one release per job in the order they came put the last in
// front.)
func TestOfferHandBacksKeepOrder(t *testing.T) {
	t.Parallel()
	for _, b := range offerBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			o := newOffered(t, b)
			o.claimOffering(5, 3, "w", "n1")
			o.enqueue(plain("first"), plain("second"), plain("third"))
			got := o.pushes()
			if len(got) != 1 || len(got[0].Jobs) != 3 {
				t.Fatalf("pushes %+v, want one message of 3 jobs", got)
			}
			for _, j := range slices.Backward(got[0].Jobs) {
				if r := o.ack(j, store.Ack{Code: store.CodeRelease}); r.Err != nil || r.State != "available" {
					t.Fatalf("hand-back of %s: %+v", j.Local, r)
				}
			}
			if ids := o.availableOrder(0); !slices.Equal(ids, []string{"first", "second", "third"}) {
				t.Fatalf("available %v after the hand-backs, want first, second, third", ids)
			}
		})
	}
}
