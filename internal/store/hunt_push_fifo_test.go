package store_test

import (
	"testing"

	"github.com/sluicehq/sluice/internal/store"
)

// TestHuntPushHandBacksReverseOrder: two plain jobs enqueued one after the
// other are pushed to an idle worker's offer; the worker, its slots taken
// meanwhile by claims elsewhere, hands both back (runtime/push.go
// handBack: a release ack each, in the order they came). Each release
// puts its job at the front of the list, so the later job is now listed,
// and claimed, before the earlier: FIFO order reversed in ordinary
// operation, where without the push both were listed in order.
func TestHuntPushHandBacksReverseOrder(t *testing.T) {
	t.Parallel()
	for _, b := range offerBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			o := newOffered(t, b)
			o.claimOffering(5, 2, "w", "n1")
			o.enqueue(plain("first"))
			o.enqueue(plain("second"))
			got := o.pushes()
			if len(got) != 2 {
				t.Fatalf("%d pushes, want 2", len(got))
			}
			for _, p := range got {
				if r := o.ack(p.Jobs[0], store.Ack{Code: store.CodeRelease}); r.Err != nil || r.State != "available" {
					t.Fatalf("hand-back of %s: %+v", p.Jobs[0].Local, r)
				}
			}
			if ids := o.availableOrder(0); len(ids) != 2 || ids[0] != "first" {
				t.Fatalf("available %v after both were handed back in order, want first, second", ids)
			}
		})
	}
}
