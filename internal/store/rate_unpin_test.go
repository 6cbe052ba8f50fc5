package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestUnpinOfUnpinnedWaiterPassesNoToken: u1, u2, u3 wait on a class of 1
// an hour; a token lets u1 go to the shared list. An operator unpins u1,
// which was never pinned (the CLI's "already unpinned" still calls
// Reroute): it stays where it is, no other waiter goes beside it, and the
// class runs u1 u2 u3 in their order.
func TestUnpinOfUnpinnedWaiterPassesNoToken(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			rl := store.Limits{RateClass: "slow", RateJobs: 1, RatePer: time.Hour, RateBurst: 1}
			f.enqueue(store.NewJob{Local: "r0", Limits: rl})
			f.claim(10, "w")
			f.enqueue(store.NewJob{Local: "u1", Limits: rl}, store.NewJob{Local: "u2", Limits: rl}, store.NewJob{Local: "u3", Limits: rl})
			if got := f.claim(10, "w"); len(got.Jobs) != 0 {
				t.Fatalf("claimed over the rate: %v", locals(got.Jobs))
			}
			f.clk.Advance(time.Hour) // one token
			f.enqueue(store.NewJob{Local: "x", Priority: 9})
			var ran []string
			claim := func(n int) {
				for _, j := range f.claim(n, "w").Jobs {
					ran = append(ran, j.Local)
				}
			}
			claim(1) // u1 let go; x leased
			if sh := f.availableOrder(0); len(sh) != 1 || sh[0] != "u1" {
				t.Fatalf("shared %v, want [u1]", sh)
			}
			if _, err := f.st.Reroute(f.ctx, f.ref("u1"), store.Sticky{}); err != nil { // unpin: a no-op
				t.Fatal(err)
			}
			for h := 0; h < 4; h++ {
				claim(1)
				f.clk.Advance(time.Hour)
			}
			if len(ran) != 4 || ran[1] != "u1" || ran[2] != "u2" || ran[3] != "u3" {
				t.Fatalf("ran %v; want [x u1 u2 u3]: one token an hour, in the waiters' order", ran)
			}
		})
	}
}
