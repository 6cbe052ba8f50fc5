package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestHandedRerouteHandedAgainListedOnce: a pinned job (After) that its
// fallback handed to every worker (shared list) is rerouted to another
// worker with After: its shared entry leaves with the reroute, so that
// when the new fallback hands it again it is listed once, and with its
// concurrency key full claims set it waiting once.
func TestHandedRerouteHandedAgainListedOnce(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			lim := store.Limits{ConcurrencyKey: "k", ConcurrencyLimit: 1}
			f.enqueue(store.NewJob{Local: "a", Limits: lim})
			if j := f.claimOne("w"); j.Local != "a" { // a holds k
				t.Fatalf("claimed %s", j.Local)
			}
			hi := func(l string) store.NewJob { return store.NewJob{Local: l, Priority: 9} }
			f.enqueue(store.NewJob{Local: "j", Limits: lim, Sticky: store.Sticky{Worker: "gone1", Mode: "a", After: time.Second}},
				store.NewJob{Local: "z", Sticky: store.Sticky{Worker: "gone3", Mode: "a", After: 3 * time.Second}},
				hi("x1"), hi("x2"), hi("x3"))
			f.clk.Advance(2 * time.Second)
			if j := f.claimOne("w"); j.Local != "x1" { // hands j to every worker
				t.Fatalf("claimed %s", j.Local)
			}
			if _, err := f.st.Reroute(f.ctx, f.ref("j"), store.Sticky{Worker: "gone2", Mode: "a", After: 2 * time.Second}); err != nil {
				t.Fatal(err)
			}
			f.clk.Advance(1500 * time.Millisecond)
			if j := f.claimOne("w"); j.Local != "x2" { // hands z
				t.Fatalf("claimed %s", j.Local)
			}
			f.clk.Advance(time.Second)
			if j := f.claimOne("w"); j.Local != "x3" { // hands j again
				t.Fatalf("claimed %s", j.Local)
			}
			entries := f.availableOrder(0)
			n := 0
			for _, e := range entries {
				if e == "j" {
					n++
				}
			}
			f.claim(1, "w") // j (k full: waits), then z leased
			f.claim(1, "w") // the other entry of j
			wl, _ := f.rdb.LRange(f.ctx, f.p.ConcurrencyWait("k"), 0, -1).Result()
			waiting, _ := f.rdb.HGet(f.ctx, f.p.ConcurrencyWaiting(), "k").Result()
			if n != 1 || len(wl) != 1 {
				t.Fatalf("shared list %v holds j %d times; k's wait list %v, waiter count %q; want j once", entries, n, wl, waiting)
			}
		})
	}
}

// TestPinnedRateWaiterKeepsTurn: waiters p (pinned to the live worker
// "pw"), u0, u1 queue on a class of 1 a hour, in that order; each hour
// another worker polls, then pw. The token lets p go alone (it holds the
// token PIN_GRACE for pw), and the class runs them in their order.
func TestPinnedRateWaiterKeepsTurn(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			rl := store.Limits{RateClass: "slow", RateJobs: 1, RatePer: time.Hour, RateBurst: 1}
			f.enqueue(store.NewJob{Local: "r0", Limits: rl})
			if l := locals(f.claim(10, "other").Jobs); !l["r0"] {
				t.Fatalf("first claim %v", l)
			}
			f.enqueue(store.NewJob{Local: "p", Limits: rl, Sticky: store.Sticky{Worker: "pw", Mode: "w"}})
			f.claim(10, "pw")
			f.enqueue(store.NewJob{Local: "u0", Limits: rl})
			f.claim(10, "other")
			f.enqueue(store.NewJob{Local: "u1", Limits: rl})
			f.claim(10, "other")
			ran := []string{}
			for hour := 0; hour < 3; hour++ {
				f.clk.Advance(time.Hour)
				for _, w := range []string{"other", "pw"} {
					for _, j := range f.claim(10, w).Jobs {
						ran = append(ran, j.Local)
					}
				}
			}
			if len(ran) != 3 || ran[0] != "p" || ran[1] != "u0" || ran[2] != "u1" {
				t.Fatalf("one token an hour ran %v; want the waiters' order p u0 u1", ran)
			}
		})
	}
}

// TestHugeRateLiftKeepsWaiters: a class's rate raised to a huge one (an
// operator lifting the limit) while jobs wait on it: its waiters go (at
// most MAX_POP a pass); the wait list is not taken for one of another
// type (an LPOP count past 1e17, written in exponent form, is refused).
func TestHugeRateLiftKeepsWaiters(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			rl := store.Limits{RateClass: "slow", RateJobs: 1, RatePer: time.Hour, RateBurst: 1}
			f.enqueue(store.NewJob{Local: "r0", Limits: rl})
			f.claim(10, "w")
			f.enqueue(store.NewJob{Local: "u", Limits: rl})
			f.claim(10, "w") // u waits
			huge := store.Limits{RateClass: "slow", RateJobs: 1 << 62, RatePer: time.Second, RateBurst: 1 << 62}
			f.enqueue(store.NewJob{Local: "v", Limits: huge})
			f.clk.Advance(time.Second)
			got := claimRounds(f, time.Second)
			if !got["u"] {
				wl, _ := f.rdb.LRange(f.ctx, f.p.RateWait("slow"), 0, -1).Result()
				t.Fatalf("the rate lifted, claimed %v; u is not claimed (wait list %v, asides %v)", got, wl, f.asides())
			}
		})
	}
}
