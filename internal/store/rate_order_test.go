package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// threeWaiters makes u1, u2, u3 wait, in that order, on a class of one job
// an hour whose token was just spent, and returns the class's limits.
func threeWaiters(t *testing.T, f *fixture) store.Limits {
	t.Helper()
	return slowWaiters(t, f, store.NewJob{Local: "u1"}, store.NewJob{Local: "u2"}, store.NewJob{Local: "u3"})
}

// slowWaiters makes jobs wait, in their order, on class "slow" of one job
// an hour whose token was just spent, and returns the class's limits.
func slowWaiters(t *testing.T, f *fixture, jobs ...store.NewJob) store.Limits {
	t.Helper()
	return classWaiters(t, f, store.Limits{RateClass: "slow", RateJobs: 1, RatePer: time.Hour, RateBurst: 1}, jobs...)
}

// classWaiters makes jobs wait, in their order, on rate class rl (a burst
// of 1) whose token a job r0 just spent, and returns rl.
func classWaiters(t *testing.T, f *fixture, rl store.Limits, jobs ...store.NewJob) store.Limits {
	t.Helper()
	f.enqueue(store.NewJob{Local: "r0", Limits: rl})
	f.claim(10, "w")
	for i := range jobs {
		jobs[i].Limits = rl
	}
	f.enqueue(jobs...)
	if got := f.claim(10, "w"); len(got.Jobs) != 0 {
		t.Fatalf("claimed over the rate: %v", locals(got.Jobs))
	}
	return rl
}

// inOrder checks that ran is x, then u1, u2, u3: one token an hour, in the
// waiters' order.
func inOrder(t *testing.T, f *fixture, ran []string) {
	t.Helper()
	if len(ran) != 4 || ran[0] != "x" || ran[1] != "u1" || ran[2] != "u2" || ran[3] != "u3" {
		wl, _ := f.rdb.LRange(f.ctx, f.p.RateWait("slow"), 0, -1).Result()
		t.Fatalf("ran %v (wait list %v); want [x u1 u2 u3]: one token an hour, in the waiters' order", ran, wl)
	}
}

// TestParkedNonWaiterPassesNoToken: u1, u2, u3 wait on a class of 1 an
// hour; a token lets u1 go. A job d of the class that never waited
// (enqueued while a token was there) passes its deadline and is archived
// by a claim: that lets no other waiter go beside u1 on the one token, and
// the class runs u1 u2 u3 in their order.
func TestParkedNonWaiterPassesNoToken(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			rl := threeWaiters(t, f)
			f.clk.Advance(time.Hour) // one token
			f.enqueue(store.NewJob{Local: "d", Priority: 9, Limits: rl, Deadline: f.clk.Now().Add(time.Second)},
				store.NewJob{Local: "x", Priority: 9})
			f.clk.Advance(2 * time.Second)
			var ran []string
			for h := 0; h < 5; h++ { // the first claim lets u1 go, archives d, leases x
				for _, j := range f.claim(1, "w").Jobs {
					ran = append(ran, j.Local)
				}
				if h > 0 {
					f.clk.Advance(time.Hour)
				}
			}
			inOrder(t, f, ran)
		})
	}
}

// TestUnpinOfUnpinnedWaiterPassesNoToken: u1, u2, u3 wait on a class of 1
// an hour; a token lets u1 go to the shared list. An operator unpins u1,
// which was never pinned (the CLI's "already unpinned" still calls
// Reroute): it stays where it is, no other waiter goes beside it, and the
// class runs u1 u2 u3 in their order.
func TestUnpinOfUnpinnedWaiterPassesNoToken(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			threeWaiters(t, f)
			f.clk.Advance(time.Hour) // one token
			f.enqueue(store.NewJob{Local: "x", Priority: 9})
			var ran []string
			claim := func() {
				for _, j := range f.claim(1, "w").Jobs {
					ran = append(ran, j.Local)
				}
			}
			claim() // u1 let go; x leased
			if sh := f.availableOrder(0); len(sh) != 1 || sh[0] != "u1" {
				t.Fatalf("shared %v, want [u1]", sh)
			}
			if _, err := f.st.Reroute(f.ctx, f.ref("u1"), store.Sticky{}); err != nil { // unpin: a no-op
				t.Fatal(err)
			}
			for h := 0; h < 4; h++ {
				claim()
				f.clk.Advance(time.Hour)
			}
			inOrder(t, f, ran)
		})
	}
}
