package store_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// Liveness and order of a rate class's promises (lua/lib_limits.lua
// promise): its waiters keep its rate, and no promise stops the class.

// TestRateFastClassKeepsRate: a class of 1000 a second (burst 1000) with
// 4000 jobs; workers claim 10 at a time, one claim every tick. Over the
// simulated time the class leases its burst plus its rate, whatever the
// tick, as long as the workers' pace (10 per tick) is above the rate.
func TestRateFastClassKeepsRate(t *testing.T) {
	for _, c := range []struct {
		tick time.Duration
		n    int
	}{{time.Millisecond, 10}, {time.Millisecond, 2}, {3 * time.Millisecond, 10}, {7 * time.Millisecond, 10}, {50 * time.Millisecond, 100}} {
		tick, n := c.tick, c.n
		for _, b := range backends(t)[:2] {
			if b.name == "miniredis" && tick < 3*time.Millisecond {
				// 2,000 claims in gopher-lua: a minute of make test under
				// -race, for the pace the coarser ticks check there too
				continue
			}
			t.Run(fmt.Sprintf("%s/tick=%v/n=%d", b.name, tick, n), func(t *testing.T) {
				f := newFixture(t, b)
				rl := store.Limits{RateClass: "fast", RateJobs: 1000, RatePer: time.Second, RateBurst: 1000}
				var jobs []store.NewJob
				for i := range 4000 {
					jobs = append(jobs, store.NewJob{Local: fmt.Sprintf("j%04d", i), Limits: rl})
				}
				for i := 0; i < len(jobs); i += 500 {
					f.enqueue(jobs[i : i+500]...)
				}
				start := f.clk.Now()
				leased := 0
				span := 2 * time.Second
				for f.clk.Now().Sub(start) < span {
					leased += len(f.claim(n, fmt.Sprintf("w%d", leased%50)).Jobs)
					f.clk.Advance(tick)
				}
				want := 1000 + int(span/time.Millisecond) // burst + rate
				t.Logf("leased %d in %v, want about %d", leased, span, want)
				if leased < want*9/10 || leased > want+10 {
					t.Fatalf("leased %d in %v at one claim of %d per %v, want about %d (burst 1000 + 1000/s)", leased, span, n, tick, want)
				}
			})
		}
	}
}

// mixedWaiters spends the burst of class "m" (5 a second, burst 5) and
// makes 100 jobs wait on it, in order, alternately of priority 0 (l..)
// and 5 (h..).
func mixedWaiters(t *testing.T, f *fixture) store.Limits {
	t.Helper()
	rl := store.Limits{RateClass: "m", RateJobs: 5, RatePer: time.Second, RateBurst: 5}
	var first []store.NewJob
	for i := range 5 {
		first = append(first, store.NewJob{Local: fmt.Sprintf("r%d", i), Limits: rl})
	}
	f.enqueue(first...)
	if got := f.claim(10, "w"); len(got.Jobs) != 5 {
		t.Fatalf("first claim took %d jobs, want the burst of 5", len(got.Jobs))
	}
	// one at a time, so that they wait in this order (a claim pops the
	// higher priority first)
	for i := range 100 {
		j := store.NewJob{Local: fmt.Sprintf("l%02d", i), Limits: rl}
		if i%2 == 1 {
			j = store.NewJob{Local: fmt.Sprintf("h%02d", i), Limits: rl, Priority: 5}
		}
		f.enqueue(j)
		if got := f.claim(10, "w"); len(got.Jobs) != 0 {
			t.Fatalf("claimed over the rate: %v", locals(got.Jobs))
		}
	}
	return rl
}

// TestRateStarvedLowPriorityWaiterHoldsClass: a class of 5 a second has
// waiters of priority 0 and 5, alternately. The workers are kept busy
// with plain jobs of priority 3 (they never reach list 0), and claim
// every 200 ms. The priority-0 waiters let go stay on list 0, and their
// promises lapse after a token's refill time (a second at least), so the
// class's tokens go on to its priority-5 waiters: about 25 of them run in
// 10 s (with promises of a minute, or no pass while one stands, the
// class ran nothing for a minute).
func TestRateStarvedLowPriorityWaiterHoldsClass(t *testing.T) {
	for _, b := range backends(t)[:2] {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			mixedWaiters(t, f)
			high := 0
			for i := range 50 { // 10 s
				var busy []store.NewJob
				for k := range 10 {
					busy = append(busy, store.NewJob{Local: fmt.Sprintf("x%d-%d", i, k), Priority: 3})
				}
				f.enqueue(busy...)
				f.clk.Advance(200 * time.Millisecond)
				for _, j := range f.claim(10, "w").Jobs {
					if strings.HasPrefix(j.Local, "h") {
						high++
					}
					if strings.HasPrefix(j.Local, "l") {
						t.Fatalf("claim reached list 0: %s", j.Local)
					}
				}
			}
			t.Logf("high=%d list0=%v", high, f.availableOrder(0))
			if high < 15 {
				t.Fatalf("in 10 s the class ran %d of its priority-5 waiters, want about 25 (5 a second, every other waiter): "+
					"waiters let go to list 0, which the busy workers never reach, hold back every later pass (list 0: %v)",
					high, f.availableOrder(0))
			}
		})
	}
}

// TestRateSuspectLetGoWaiterHoldsClass: u00..u09 wait on a class of 1 a
// second; u00 has a crash on record (a suspect). The only worker runs a
// suspect already (NoSuspect), and claims every 100 ms: it passes u00
// over each time, and u00's promise lapses after a token's time (a
// second), so u01.. still run at the class's rate.
func TestRateSuspectLetGoWaiterHoldsClass(t *testing.T) {
	for _, b := range backends(t)[:2] {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			rl := store.Limits{RateClass: "s", RateJobs: 1, RatePer: time.Second, RateBurst: 1}
			f.enqueue(store.NewJob{Local: "r0", Limits: rl})
			f.claim(10, "w")
			var ws []store.NewJob
			for i := range 10 {
				ws = append(ws, store.NewJob{Local: fmt.Sprintf("u%02d", i), Limits: rl})
			}
			f.enqueue(ws...)
			if got := f.claim(10, "w"); len(got.Jobs) != 0 {
				t.Fatalf("claimed over the rate: %v", locals(got.Jobs))
			}
			if err := f.rdb.HSet(f.ctx, f.p.Job("u00"), keys.FieldCrashAttempt, 1).Err(); err != nil {
				t.Fatal(err)
			}
			ran := 0
			for i := 0; i < 100; i++ { // 10 s
				f.clk.Advance(100 * time.Millisecond)
				res, err := f.st.Claim(f.ctx, f.p, store.ClaimRequest{N: 10, Lease: time.Minute, Worker: "w",
					Nonce: fmt.Sprintf("n%d", i), PromoteLimit: 100, NoSuspect: true})
				if err != nil {
					t.Fatal(err)
				}
				ran += len(res.Jobs)
			}
			if ran < 7 {
				t.Fatalf("in 10 s at 1 a second the class ran %d jobs, want about 9: the suspect u00, let go and "+
					"passed over, holds back every later pass for its promise's minute (list 0: %v)", ran, f.availableOrder(0))
			}
		})
	}
}

// TestRateStalePromiseFarAheadStallsClass: a promise scored far past
// NOW + PROMISE_KEEP (corrupt data, or promises made before the store's
// clock stepped back an hour, whose jobs a script of an older release
// ended) stands for nothing: the class's waiters run one a second, not an
// hour on.
func TestRateStalePromiseFarAheadStallsClass(t *testing.T) {
	for _, b := range backends(t)[:2] {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			classWaiters(t, f, store.Limits{RateClass: "s", RateJobs: 1, RatePer: time.Second, RateBurst: 1},
				store.NewJob{Local: "u1"}, store.NewJob{Local: "u2"})
			at := float64(f.clk.Now().Add(time.Hour).UnixMilli())
			if err := f.rdb.ZAdd(f.ctx, f.p.RateLetGo("s"), redis.Z{Score: at, Member: "gone"}).Err(); err != nil {
				t.Fatal(err)
			}
			ran := 0
			for range 10 {
				f.clk.Advance(time.Second)
				ran += len(f.claim(10, "w").Jobs)
			}
			if ran != 2 {
				t.Fatalf("in 10 s at 1 a second ran %d of the 2 waiters: a promise an hour ahead holds the class", ran)
			}
		})
	}
}

// TestRateLoweredWaitersKeepOrderAcrossClaims: w00..w04 are let go with a
// token each; the class is lowered to 1 a second (burst 1). A claim of one
// job meets w00 (set waiting again at the front) and then leases a plain
// job y queued behind it; the next claim meets w01..w04, which it sets
// waiting again too. The waiters still run in their order.
func TestRateLoweredWaitersKeepOrderAcrossClaims(t *testing.T) {
	for _, b := range backends(t)[:2] {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			_, want := burstWaiters(t, f, 5)
			f.clk.Advance(time.Second)
			f.enqueue(store.NewJob{Local: "x", Priority: 9})
			if j := f.claimOne("w"); j.Local != "x" {
				t.Fatalf("busy claim took %s", j.Local)
			}
			// a plain job y sits right behind w00 on the shared list
			f.enqueue(store.NewJob{Local: "y"})
			if err := f.rdb.LRem(f.ctx, f.p.Available(0), -1, "y").Err(); err != nil {
				t.Fatal(err)
			}
			if err := f.rdb.LInsert(f.ctx, f.p.Available(0), "AFTER", "w00", "y").Err(); err != nil {
				t.Fatal(err)
			}
			slow := store.Limits{RateClass: "c", RateJobs: 1, RatePer: time.Second, RateBurst: 1}
			f.enqueue(store.NewJob{Local: "n", Limits: slow})
			var ran []string
			for range 12 {
				for _, j := range f.claim(1, "w").Jobs {
					ran = append(ran, j.Local)
				}
				f.clk.Advance(time.Second)
			}
			var class []string
			for _, l := range ran {
				if strings.HasPrefix(l, "w") {
					class = append(class, l)
				}
			}
			if fmt.Sprint(class) != fmt.Sprint(want) {
				t.Fatalf("ran %v; the waiters ran %v, want their order %v", ran, class, want)
			}
		})
	}
}

// TestRateInfPromiseNextDue: a promise scored +inf (corrupt data) stands
// for nothing: the class's wake is not its lapse (+inf on real Redis; on
// gopher-lua, which reads no number from '+inf', NOW, which would make
// every dry claim say "claim again at once" and idle workers spin), and
// its waiters run one a second.
func TestRateInfPromiseNextDue(t *testing.T) {
	for _, b := range backends(t)[:2] {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			classWaiters(t, f, store.Limits{RateClass: "s", RateJobs: 1, RatePer: time.Second, RateBurst: 1},
				store.NewJob{Local: "u1"}, store.NewJob{Local: "u2"})
			if err := f.rdb.ZAdd(f.ctx, f.p.RateLetGo("s"), redis.Z{Score: math.Inf(1), Member: "gone"}).Err(); err != nil {
				t.Fatal(err)
			}
			ran := 0
			var dues []string
			for range 5 {
				f.clk.Advance(time.Second)
				got := f.claim(10, "w")
				ran += len(got.Jobs)
				dues = append(dues, fmt.Sprintf("%v/%v", got.Scheduled, got.NextDue))
			}
			t.Logf("ran %d, next dues %v", ran, dues)
			if ran != 2 {
				t.Fatalf("in 5 s at 1 a second ran %d of the 2 waiters (next dues %v): a promise at +inf holds the class for ever", ran, dues)
			}
		})
	}
}
