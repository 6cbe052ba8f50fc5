package store_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// A rate class's passes behind a mark, suspects let go, and classes whose
// bucket is gone (lua/lib_limits.lua let_go, rate_take).

// TestRateSuspectPassedOverKeepsItsPlace: u1, u2, u3 wait on a class of 1
// a second; u1 has a crash on record. A token lets u1 go; a worker that
// runs a suspect already (NoSuspect) passes it over, and u1 keeps its
// promised token (a suspect passed over that gave it back, claimed next
// with no promise while the class had waiters, waited again at the back
// of the wait list, behind u3 and every later waiter). The next claim, by
// a worker that may run a suspect, runs u1, then u2 and u3.
func TestRateSuspectPassedOverKeepsItsPlace(t *testing.T) {
	for _, b := range backends(t)[:2] {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			rl := store.Limits{RateClass: "s", RateJobs: 1, RatePer: time.Second, RateBurst: 1}
			f.enqueue(store.NewJob{Local: "r0", Limits: rl})
			f.claim(10, "w")
			f.enqueue(store.NewJob{Local: "u1", Limits: rl}, store.NewJob{Local: "u2", Limits: rl},
				store.NewJob{Local: "u3", Limits: rl})
			if got := f.claim(10, "w"); len(got.Jobs) != 0 {
				t.Fatalf("claimed over the rate: %v", locals(got.Jobs))
			}
			if err := f.rdb.HSet(f.ctx, f.p.Job("u1"), keys.FieldCrashAttempt, 1).Err(); err != nil {
				t.Fatal(err)
			}
			f.clk.Advance(time.Second)
			res, err := f.st.Claim(f.ctx, f.p, store.ClaimRequest{N: 10, Lease: time.Minute, Worker: "busy",
				Nonce: "busy-1", PromoteLimit: 100, NoSuspect: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Jobs) != 0 {
				t.Fatalf("the worker with a suspect claimed %v", locals(res.Jobs))
			}
			var ran []string
			for range 5 {
				for _, j := range f.claim(1, "w").Jobs {
					ran = append(ran, j.Local)
				}
				f.clk.Advance(time.Second)
			}
			if !slices.Equal(ran, []string{"u1", "u2", "u3"}) && !slices.Equal(ran, []string{"u2", "u1", "u3"}) {
				wl, _ := f.rdb.LRange(f.ctx, f.p.RateWait("s"), 0, -1).Result()
				t.Fatalf("ran %v (wait list %v), want u1 before u3: passed over as a suspect, it lost its place and waits behind every later waiter", ran, wl)
			}
		})
	}
}

// TestRateReroutedWithNoBucketLeavesNoPromise: u1 is let go with a token
// promised; the class's bucket is gone (here deleted, as corrupt-data
// handling deletes it). A reroute of u1 renews its promise anyway
// (reroute.lua: PIN_GRACE when the class has no bucket), and the claim
// that leases u1 does not take it (rate_take returns before unpromise
// when there is no bucket): a promise stands on a running job
// (TestFlowModel's invariant), and once the bucket is defined again it
// holds one of the class's tokens for its second.
func TestRateReroutedWithNoBucketLeavesNoPromise(t *testing.T) {
	for _, b := range backends(t)[:2] {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			slowWaiters(t, f, store.NewJob{Local: "u1"}, store.NewJob{Local: "u2"})
			letFirstGo(t, f)
			if err := f.rdb.Del(f.ctx, f.p.RateBucket("slow")).Err(); err != nil {
				t.Fatal(err)
			}
			if _, err := f.st.Reroute(f.ctx, f.ref("u1"), store.Sticky{}); err != nil {
				t.Fatal(err)
			}
			if l := locals(f.claim(10, "w").Jobs); !l["u1"] {
				t.Fatalf("claimed %v, want u1", l)
			}
			if at, ok := f.score(f.p.RateLetGo("slow"), "u1"); ok && at > float64(f.clk.Now().UnixMilli()) {
				t.Fatalf("u1 is running and its class still promises it a token until %v (now %v)", at, f.clk.Now().UnixMilli())
			}
		})
	}
}

// TestRateLetGoBehindMarkCostIsLinear: a class of n a second (burst n)
// lets n waiters go, and the workers claim all but the last (the list's
// mark). 0.9 s later a claim's pass lets ~0.9n more go, each by a LINSERT
// after the one before: the i-th scans i entries, so the pass is
// quadratic in the waiters it lets go (n = 4000: some 7 million entries
// compared, in one script, Redis blocked meanwhile). The same pass with
// no mark (field g0 deleted: LPUSH to the front) is the baseline.
func TestRateLetGoBehindMarkCostIsLinear(t *testing.T) {
	b := backends(t)[1] // redis
	const n = 4000
	pass := func(mark bool) time.Duration {
		f := newFixture(t, b)
		rl := store.Limits{RateClass: "c", RateJobs: n, RatePer: time.Second, RateBurst: n}
		var first, ws []store.NewJob
		for i := range n {
			first = append(first, store.NewJob{Local: fmt.Sprintf("r%05d", i), Limits: rl})
		}
		f.enqueue(first...)
		if got := f.claim(n, "w"); len(got.Jobs) != n {
			t.Fatalf("first claim took %d", len(got.Jobs))
		}
		for i := range 2 * n {
			ws = append(ws, store.NewJob{Local: fmt.Sprintf("w%05d", i), Limits: rl})
		}
		f.enqueue(ws...)
		if got := f.claim(10, "w"); len(got.Jobs) != 0 {
			t.Fatalf("claimed over the rate: %d", len(got.Jobs))
		}
		f.clk.Advance(time.Second)
		f.enqueue(store.NewJob{Local: "x", Priority: 9})
		f.claim(1, "w") // the pass: w00000..w03999 let go, the mark w03999
		if got := f.claim(n-1, "w"); len(got.Jobs) != n-1 {
			t.Fatalf("claimed %d let go, want %d", len(got.Jobs), n-1)
		}
		if !mark {
			f.rdb.HDel(f.ctx, f.p.RateBucket("c"), "g0")
		}
		f.clk.Advance(900 * time.Millisecond)
		f.enqueue(store.NewJob{Local: "y", Priority: 9})
		start := time.Now()
		f.claim(1, "w") // the pass: ~3600 let go
		d := time.Since(start)
		sh := f.availableOrder(0)
		t.Logf("mark %v: pass took %v, list 0 holds %d", mark, d, len(sh))
		if mark {
			for i, id := range sh {
				if want := fmt.Sprintf("w%05d", n-1+i); id != want {
					t.Fatalf("list 0 [%d] = %s, want %s: the waiters behind the mark w%05d, in their order", i, id, want, n-1)
				}
			}
		}
		return d
	}
	front, behind := pass(false), pass(true)
	if behind > 5*front+50*time.Millisecond {
		t.Fatalf("a pass that lets ~%d waiters go behind a mark took %v, at the front %v: LINSERT after LINSERT is quadratic", n*9/10, behind, front)
	}
}
