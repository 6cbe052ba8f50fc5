package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestConcurrencyTwoWokenWaitersArchivedInOneClaim: a limit of 2; two
// running jobs end and let two waiters go; both pass their deadline and
// one claim archives both. Each of them had a turn of the key, so both
// turns must go on: the next two waiters should run (nothing else runs),
// not one of them only.
func TestConcurrencyTwoWokenWaitersArchivedInOneClaim(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			lim := store.Limits{ConcurrencyKey: "k", ConcurrencyLimit: 2}
			f.enqueue(store.NewJob{Local: "a1", Limits: lim}, store.NewJob{Local: "a2", Limits: lim})
			f.enqueue(store.NewJob{Local: "w1", Limits: lim, Deadline: epoch.Add(time.Second)},
				store.NewJob{Local: "w2", Limits: lim, Deadline: epoch.Add(time.Second)},
				store.NewJob{Local: "w3", Limits: lim}, store.NewJob{Local: "w4", Limits: lim})
			first := f.claim(10, "w")
			if l := locals(first.Jobs); len(l) != 2 || !l["a1"] || !l["a2"] {
				t.Fatalf("first claim %v, want a1 a2", l)
			}
			acks := make([]store.Ack, len(first.Jobs))
			for i, j := range first.Jobs {
				acks[i] = store.Ack{Lease: lease(j), Code: store.CodeOK}
			}
			if _, _, err := f.st.Ack(f.ctx, f.p, acks); err != nil { // w1 and w2 go
				t.Fatal(err)
			}
			f.clk.Advance(2 * time.Second)
			res := f.claim(10, "w") // archives w1 and w2 (deadline passed)
			if len(res.Parked) != 2 {
				t.Fatalf("claim parked %v, want w1 w2", res.Parked)
			}
			got := claimRounds(f, 0)
			for _, j := range res.Jobs {
				got[j.Local] = true
			}
			if !got["w3"] || !got["w4"] {
				n, _ := f.rdb.HGet(f.ctx, f.p.Concurrency(), "k").Int()
				t.Fatalf("running %v (key count %d) with the limit 2 and nothing else running: w4 stays on the wait list with a slot free", got, n)
			}
		})
	}
}

// TestRateClassClockStepBack: store time that steps back (a failover to a
// replica whose clock is behind, an NTP step) mints no token: a claim made
// while the clock is behind leaves the bucket's refill time where it was.
// Before, it wrote that earlier time, and once the clock was back the
// same interval was refilled a second time: two jobs started at one
// instant of a class that allows one per 10 s.
func TestRateClassClockStepBack(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			rl := store.Limits{RateClass: "c", RateJobs: 1, RatePer: 10 * time.Second, RateBurst: 1}
			f.enqueue(store.NewJob{Local: "r0", Limits: rl})
			started := locals(f.claim(10, "w").Jobs)
			if len(started) != 1 || !started["r0"] {
				t.Fatalf("first claim %v, want r0", started)
			}
			f.clk.Advance(-10 * time.Second) // the store's clock steps back
			f.enqueue(store.NewJob{Local: "r2", Limits: rl})
			if got := f.claim(10, "w").Jobs; len(got) != 0 {
				t.Fatalf("claimed %v with no token", locals(got))
			}
			f.clk.Advance(10 * time.Second) // and is back at the instant r0 started
			if got := f.claim(10, "w").Jobs; len(got) != 0 {
				t.Fatalf("claimed %v at the same store time as r0, rate 1 per 10s: a token minted by the clock step", locals(got))
			}
		})
	}
}

// TestConcurrencyTurnLostToRateWait: a waiter a freed slot lets go that
// then waits on its rate class (no token) does not take the slot; the
// key's next waiter, which has no rate class, must get it instead of
// waiting, with the slot free, until the first one's token comes (an
// hour here).
func TestConcurrencyTurnLostToRateWait(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			rl := store.Limits{RateClass: "slow", RateJobs: 1, RatePer: time.Hour, RateBurst: 1}
			lim := store.Limits{ConcurrencyKey: "k", ConcurrencyLimit: 1}
			both := withRate(lim, rl)
			f.enqueue(store.NewJob{Local: "r0", Limits: rl}, store.NewJob{Local: "a", Limits: lim},
				store.NewJob{Local: "w1", Limits: both}, store.NewJob{Local: "w2", Limits: lim})
			first := f.claim(10, "w") // r0 spends the class's token, a takes k's slot, w1 and w2 wait on k
			if l := locals(first.Jobs); len(l) != 2 || !l["r0"] || !l["a"] {
				t.Fatalf("first claim %v, want r0 a", l)
			}
			for _, j := range first.Jobs {
				if j.Local == "a" {
					f.ack(j, store.Ack{Code: store.CodeOK}) // w1 goes
				}
			}
			got := claimRounds(f, time.Second)
			if !got["w2"] {
				n, _ := f.rdb.HGet(f.ctx, f.p.Concurrency(), "k").Int()
				w, _ := f.rdb.LRange(f.ctx, f.p.ConcurrencyWait("k"), 0, -1).Result()
				t.Fatalf("claimed %v; k runs %d of 1 and w2 still waits on it (wait list %v): w1, parked on its rate class, holds k's turn", got, n, w)
			}
		})
	}
}

// TestRateTurnLostToConcurrencyWait: the mirror image: a rate waiter let
// go by a token that then waits on its concurrency key does not spend the
// token; the class's next waiter must get it, instead of waiting for the
// next token (an hour here) with one in the bucket.
func TestRateTurnLostToConcurrencyWait(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			rl := store.Limits{RateClass: "slow", RateJobs: 1, RatePer: time.Hour, RateBurst: 1}
			lim := store.Limits{ConcurrencyKey: "k", ConcurrencyLimit: 1}
			both := withRate(lim, rl)
			f.enqueue(store.NewJob{Local: "r0", Limits: rl}, store.NewJob{Local: "w1", Limits: both},
				store.NewJob{Local: "a", Limits: lim}, store.NewJob{Local: "w2", Limits: rl})
			// r0 spends the token; w1 (k free) and w2 wait on the class; a takes k
			if l := locals(f.claim(10, "w").Jobs); len(l) != 2 || !l["r0"] || !l["a"] {
				t.Fatalf("first claim %v, want r0 a", l)
			}
			f.clk.Advance(time.Hour) // a token: w1 goes, and waits on k (a runs)
			got := claimRounds(f, time.Second)
			if !got["w2"] {
				t.Fatalf("claimed %v in the 3 s after a token came; w2 waits on the class for the next token, an hour on, with this one unspent", got)
			}
		})
	}
}

// TestRateTurnLostToCancel: a rate waiter a token let go, still on its
// ready list (the claim that let it go leased a job of higher priority),
// is cancelled: the token it did not spend goes to the class's next
// waiter now, not at the class's next wake an hour on.
func TestRateTurnLostToCancel(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			rl := store.Limits{RateClass: "slow", RateJobs: 1, RatePer: time.Hour, RateBurst: 1}
			f.enqueue(store.NewJob{Local: "r0", Limits: rl}, store.NewJob{Local: "w1", Limits: rl}, store.NewJob{Local: "w2", Limits: rl})
			if l := locals(f.claim(10, "w").Jobs); len(l) != 1 || !l["r0"] { // w1 and w2 wait on the class
				t.Fatalf("first claim %v, want r0", l)
			}
			f.clk.Advance(time.Hour)
			f.enqueue(store.NewJob{Local: "hp", Priority: 5})
			if l := locals(f.claim(1, "w").Jobs); len(l) != 1 || !l["hp"] { // lets w1 go, leases hp
				t.Fatalf("second claim %v, want hp", l)
			}
			if _, err := f.st.Cancel(f.ctx, f.ref("w1"), time.Hour); err != nil {
				t.Fatal(err)
			}
			if got := claimRounds(f, time.Second); !got["w2"] {
				t.Fatalf("claimed %v in the 3 s after w1, let go by a token, was cancelled; w2 waits for the next token, an hour on, with this one unspent", got)
			}
		})
	}
}

// TestRateClassRaisedStrandsWaiters: a class's rate is the latest
// enqueue's (lib_limits.lua rate_define). Raised from 1 per hour to 100
// per second, the class lets the job that waited on it go too. Before, a
// new job started at once, ahead of the waiter, which stayed parked until
// the wake-up computed under the old rate, an hour on.
func TestRateClassRaisedStrandsWaiters(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			slow := store.Limits{RateClass: "api", RateJobs: 1, RatePer: time.Hour, RateBurst: 1}
			fast := store.Limits{RateClass: "api", RateJobs: 100, RatePer: time.Second, RateBurst: 100}
			f.enqueue(store.NewJob{Local: "r0", Limits: slow}, store.NewJob{Local: "w1", Limits: slow})
			if l := locals(f.claim(10, "w").Jobs); len(l) != 1 || !l["r0"] {
				t.Fatalf("first claim %v, want r0", l)
			}
			f.clk.Advance(time.Second)
			f.enqueue(store.NewJob{Local: "n", Limits: fast}) // the class's rate raised
			got := claimRounds(f, time.Second)
			if !got["w1"] {
				t.Fatalf("claimed %v at 100 jobs/s; w1, which waited first, stays parked for the old rate's next token", got)
			}
		})
	}
}

// TestConcurrencyWaiterCountCorrupt: the waiter counts (cwn) are derived
// data; when the hash holds another type, a call sets it aside and counts
// every key's waiters as none, while the wait lists themselves are intact.
// A freed slot still lets the list's waiter go. Before, it let none go,
// and w waited, available on no ready list, for ever.
func TestConcurrencyWaiterCountCorrupt(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			lim := store.Limits{ConcurrencyKey: "k", ConcurrencyLimit: 1}
			f.enqueue(store.NewJob{Local: "a", Limits: lim}, store.NewJob{Local: "w", Limits: lim})
			first := f.claim(10, "w") // a runs, w waits on k
			if l := locals(first.Jobs); len(l) != 1 || !l["a"] {
				t.Fatalf("first claim %v, want a", l)
			}
			f.damage(f.p.ConcurrencyWaiting(), "garbage")
			f.ack(first.Jobs[0], store.Ack{Code: store.CodeOK})
			got := claimRounds(f, time.Minute)
			if !got["w"] {
				l := f.rdb.LRange(f.ctx, f.p.ConcurrencyWait("k"), 0, -1).Val()
				t.Fatalf("claimed %v; w stays on k's wait list %v with k free", got, l)
			}
		})
	}
}

// claimRounds claims three times, advancing the clock by step after each,
// and returns the jobs leased.
func claimRounds(f *fixture, step time.Duration) map[string]bool {
	got := map[string]bool{}
	for range 3 {
		for _, j := range f.claim(10, "w").Jobs {
			got[j.Local] = true
		}
		f.clk.Advance(step)
	}
	return got
}

// withRate is lim with rl's rate class.
func withRate(lim, rl store.Limits) store.Limits {
	lim.RateClass, lim.RateJobs, lim.RatePer, lim.RateBurst = rl.RateClass, rl.RateJobs, rl.RatePer, rl.RateBurst
	return lim
}
