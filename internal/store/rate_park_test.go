package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestParkedNonWaiterPassesNoToken: u1, u2, u3 wait on a class of 1 an
// hour; a token lets u1 go. A job d of the class that never waited
// (enqueued while a token was there) passes its deadline and is archived
// by a claim: that lets no other waiter go beside u1 on the one token, and
// the class runs u1 u2 u3 in their order.
func TestParkedNonWaiterPassesNoToken(t *testing.T) {
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
			f.enqueue(store.NewJob{Local: "d", Priority: 9, Limits: rl, Deadline: f.clk.Now().Add(time.Second)},
				store.NewJob{Local: "x", Priority: 9})
			f.clk.Advance(2 * time.Second)
			var ran []string
			claim := func(n int) {
				res := f.claim(n, "w")
				for _, j := range res.Jobs {
					ran = append(ran, j.Local)
				}
			}
			claim(1) // u1 let go; d archived (deadline); x leased
			t.Logf("after the claim that archived d: shared %v, ran %v", f.availableOrder(0), ran)
			claim(1)
			t.Logf("next claim: shared %v, ran %v", f.availableOrder(0), ran)
			for h := 0; h < 4; h++ {
				claim(10)
				f.clk.Advance(time.Hour)
			}
			want := []string{"x", "u1", "u2", "u3"}
			if len(ran) != 4 || ran[1] != "u1" || ran[2] != "u2" || ran[3] != "u3" {
				wl, _ := f.rdb.LRange(f.ctx, f.p.RateWait("slow"), 0, -1).Result()
				t.Fatalf("ran %v (wait list %v); want %v: one token an hour, in the waiters' order", ran, wl, want)
			}
		})
	}
}
