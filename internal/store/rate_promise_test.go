package store_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// The tests of a rate class's promises (lua/lib_limits.lua promise,
// docs/design/rate-waiters.md): a waiter let go holds its token until its
// claim, so passes before that claim let no more waiters go, newcomers
// wait behind the waiters, and a waiter that leaves its ready list
// without running gives its token to the next one at once.

// TestRateWaitersRunInOrderWhileWorkersBusy: 20 jobs wait on a class of 5
// per 20 s (burst 5: a token refills in 4 s, as long as the class
// promises a token to a waiter it lets go). For 3.6 s the workers take
// only higher-priority work, each claim a pass of the class: they let 5
// waiters go, not 20, and the waiters then run in their order, the rest
// one a token (before, each pass let 5 more go to the front of the list,
// and the last let go ran first).
func TestRateWaitersRunInOrderWhileWorkersBusy(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			rl := store.Limits{RateClass: "c", RateJobs: 5, RatePer: 20 * time.Second, RateBurst: 5}
			_, want := waitersOn(t, f, rl, 20)
			f.clk.Advance(20 * time.Second) // the bucket full again
			for i := range 4 {
				f.enqueue(store.NewJob{Local: fmt.Sprintf("hi%d", i), Priority: 9})
				if j := f.claimOne("w"); j.Local != fmt.Sprintf("hi%d", i) {
					t.Fatalf("busy claim %d took %s", i, j.Local)
				}
				f.clk.Advance(900 * time.Millisecond)
			}
			if sh := f.availableOrder(0); len(sh) != 5 {
				t.Fatalf("four passes with no claim of the class between them let %d waiters go (%v), want 5: one bucket of tokens", len(sh), sh)
			}
			var ran []string
			for range 20 {
				for _, j := range f.claim(30, "w").Jobs {
					ran = append(ran, j.Local)
				}
				f.clk.Advance(4 * time.Second)
			}
			if !slices.Equal(ran, want) {
				t.Fatalf("ran %v, want the waiters in their order %v", ran, want)
			}
		})
	}
}

// TestNewcomerWaitsBehindLetGoWaiter: u1 waits on a class of 1 an hour.
// When the token comes, a job n of the class enqueued at a higher
// priority meets the class's pass in the same claim: the token is
// promised to u1, so n waits, and u1 runs (before, n took the token and
// u1, claimed with none, waited again behind it).
func TestNewcomerWaitsBehindLetGoWaiter(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			rl := slowWaiters(t, f, store.NewJob{Local: "u1"})
			f.clk.Advance(time.Hour)
			f.enqueue(store.NewJob{Local: "n", Priority: 9, Limits: rl})
			if l := locals(f.claim(10, "w").Jobs); len(l) != 1 || !l["u1"] {
				t.Fatalf("claimed %v, want [u1]: the token was promised to the waiter", l)
			}
			f.clk.Advance(time.Hour)
			if l := locals(f.claim(10, "w").Jobs); len(l) != 1 || !l["n"] {
				t.Fatalf("an hour later claimed %v, want [n]", l)
			}
		})
	}
}

// TestArchivedLetGoWaiterPassesToken: u1, u2 wait on a class of 1 an
// hour; the token lets u1 go, and u1's deadline passes 10 s later, while
// its promise stands (a minute). The claim that archives u1 gives its
// token back: it tells the worker to claim again at once, and that claim
// runs u2, not an hour later.
func TestArchivedLetGoWaiterPassesToken(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			dl := f.clk.Now().Add(time.Hour + 10*time.Second)
			slowWaiters(t, f, store.NewJob{Local: "u1", Deadline: dl}, store.NewJob{Local: "u2"})
			letFirstGo(t, f)
			f.clk.Advance(20 * time.Second) // u1's deadline passes; its promise stands
			got := f.claim(10, "w")
			if f.reason("u1") != "deadline_exceeded" {
				t.Fatalf("u1 archived for %q", f.reason("u1"))
			}
			if len(got.Jobs) == 0 && !(got.Scheduled && got.NextDue == 0) {
				t.Fatalf("claimed none, next due %v (scheduled %v): want u2 now, or a claim again at once", got.NextDue, got.Scheduled)
			}
			if len(got.Jobs) == 0 {
				got = f.claim(10, "w")
			}
			if l := locals(got.Jobs); len(l) != 1 || !l["u2"] {
				t.Fatalf("claimed %v, want [u2]: u1's token goes to it", l)
			}
		})
	}
}

// TestReroutedLetGoWaiterHoldsTokenForPinGrace: u1, u2 wait on a class of
// 1 an hour; the token lets u1 go, and an operator pins u1 to a worker
// that never comes. Its promise lapses after the pin grace (a second),
// when the token goes to u2, as it would for a waiter let go to a pinned
// list; the hour's token is not held for u1.
func TestReroutedLetGoWaiterHoldsTokenForPinGrace(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			slowWaiters(t, f, store.NewJob{Local: "u1"}, store.NewJob{Local: "u2"})
			letFirstGo(t, f)
			pinAway(t, f, "u1")
			if l := locals(f.claim(10, "w").Jobs); len(l) != 0 {
				t.Fatalf("within the grace claimed %v, want none: the token is u1's", l)
			}
			f.clk.Advance(1100 * time.Millisecond)
			if l := locals(f.claim(10, "w").Jobs); len(l) != 1 || !l["u2"] {
				t.Fatalf("after the grace claimed %v, want [u2]", l)
			}
		})
	}
}

// TestRatePromisesOfAnotherType: a class's promises key holds a string
// (corrupt data). It promises nothing, so the class lets its waiters go
// by its tokens alone; the first promise sets the value aside for the
// operator (x:k:rg:<class>) and starts the key anew, and the waiters run
// one a token, in their order.
func TestRatePromisesOfAnotherType(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			slowWaiters(t, f, store.NewJob{Local: "u1"}, store.NewJob{Local: "u2"})
			f.damage(f.p.RateLetGo("slow"), "promises")
			var ran []string
			for range 3 {
				f.clk.Advance(time.Hour)
				for _, j := range f.claim(10, "w").Jobs {
					ran = append(ran, j.Local)
				}
			}
			if !slices.Equal(ran, []string{"u1", "u2"}) {
				t.Fatalf("ran %v, want [u1 u2], one an hour", ran)
			}
			f.wantAsides(map[string]string{"promises": f.p.Aside(keys.AsideShared, "rg:slow", 1)})
		})
	}
}

// letFirstGo runs the clock an hour on, to the next token of slowWaiters'
// class, and claims a job x of priority 9 enqueued then: that claim is the
// class's pass, which lets the first waiter, u1, go to the shared list.
func letFirstGo(t *testing.T, f *fixture) {
	t.Helper()
	f.clk.Advance(time.Hour)
	f.enqueue(store.NewJob{Local: "x", Priority: 9})
	if j := f.claimOne("w"); j.Local != "x" {
		t.Fatalf("busy claim took %s", j.Local)
	}
	if sh := f.availableOrder(0); !slices.Equal(sh, []string{"u1"}) {
		t.Fatalf("shared list %v, want [u1] let go", sh)
	}
}

// burstWaiters spends the burst of class "c" (5 a second, burst 5) and
// makes n jobs w00.. wait on it, in order; it returns the class's limits
// and the waiters' names.
func burstWaiters(t *testing.T, f *fixture, n int) (store.Limits, []string) {
	t.Helper()
	return waitersOn(t, f, store.Limits{RateClass: "c", RateJobs: 5, RatePer: time.Second, RateBurst: 5}, n)
}

// waitersOn spends the burst of rate class rl (5) and makes n jobs w00..
// wait on it, in order; it returns rl and the waiters' names.
func waitersOn(t *testing.T, f *fixture, rl store.Limits, n int) (store.Limits, []string) {
	t.Helper()
	var first, ws []store.NewJob
	var names []string
	for i := range 5 {
		first = append(first, store.NewJob{Local: fmt.Sprintf("r%d", i), Limits: rl})
	}
	f.enqueue(first...)
	if got := f.claim(10, "w"); len(got.Jobs) != 5 {
		t.Fatalf("first claim took %d jobs, want the burst of 5", len(got.Jobs))
	}
	for i := range n {
		ws = append(ws, store.NewJob{Local: fmt.Sprintf("w%02d", i), Limits: rl})
		names = append(names, fmt.Sprintf("w%02d", i))
	}
	f.enqueue(ws...)
	if got := f.claim(30, "w"); len(got.Jobs) != 0 {
		t.Fatalf("claimed over the rate: %v", locals(got.Jobs))
	}
	return rl, names
}

// TestRateLetGoWaitersKeepOrderAtTokenPace: 10 jobs wait on a class of 5
// a second (burst 5). The workers come back after a second, when a pass
// lets w00..w04 go with 5 tokens promised, and from then on take one job
// per token (a worker of one slot whose jobs take a token's time). Each
// token a claim spends refills before the next claim, whose pass lets the
// next waiter go to the FRONT of the shared list, ahead of the waiters let
// go before and still promised: w05, w06 ... run before w01..w04, which
// keep their tokens until their promises lapse (a minute) and then, claimed
// with no promise behind a wait list, wait again at its back. (With 400
// waiters and the same pace, w01 ran 396th, some 79 s late, after every
// later waiter.)
func TestRateLetGoWaitersKeepOrderAtTokenPace(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			_, want := burstWaiters(t, f, 10)
			f.clk.Advance(time.Second)
			var ran []string
			for range 10 {
				for _, j := range f.claim(1, "w").Jobs {
					ran = append(ran, j.Local)
				}
				f.clk.Advance(200 * time.Millisecond)
			}
			if !slices.Equal(ran, want) {
				t.Fatalf("ran %v (shared list %v), want the waiters in their order %v", ran, f.availableOrder(0), want)
			}
		})
	}
}

// TestRateLoweredLetGoWaitersKeepOrder: w00..w04 wait on a class of 5 a
// second and a pass lets all five go with a token promised each; then an
// enqueue lowers the class to 1 a second (burst 1). Each waiter's claim
// finds its promised token spent (the bucket holds 1 and the others'
// promises 4, 3 ...) and waits again "at the front" of the wait list: one
// after the other, each ahead of the one before, so w04, the last let go,
// runs first and the rest run in reverse order.
func TestRateLoweredLetGoWaitersKeepOrder(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			_, want := burstWaiters(t, f, 5)
			f.clk.Advance(time.Second)
			f.enqueue(store.NewJob{Local: "x", Priority: 9})
			if j := f.claimOne("w"); j.Local != "x" {
				t.Fatalf("busy claim took %s", j.Local)
			}
			if sh := f.availableOrder(0); !slices.Equal(sh, want) {
				t.Fatalf("shared list %v, want %v let go", sh, want)
			}
			slow := store.Limits{RateClass: "c", RateJobs: 1, RatePer: time.Second, RateBurst: 1}
			f.enqueue(store.NewJob{Local: "n", Limits: slow})
			var ran []string
			for range 8 {
				for _, j := range f.claim(10, "w").Jobs {
					ran = append(ran, j.Local)
				}
				f.clk.Advance(time.Second)
			}
			if !slices.Equal(ran, append(slices.Clone(want), "n")) {
				t.Fatalf("ran %v, want the waiters in their order, then n: %v", ran, append(slices.Clone(want), "n"))
			}
		})
	}
}

// TestUnpinnedLetGoWaiterKeepsToken: u1, u2 wait on a class of 1 an hour;
// the token lets u1 go to the shared list (promised for a minute). An
// operator pins u1 to a worker that never comes (its promise now lapses
// after a second) and, a moment later, unpins it again: back on the
// shared list, it keeps its token as a waiter let go there does, and a
// claim 1.1 s later runs u1, not u2 (before, the one-second promise of
// the pin stood, the token went to u2, and u1 waited again at the back).
func TestUnpinnedLetGoWaiterKeepsToken(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			slowWaiters(t, f, store.NewJob{Local: "u1"}, store.NewJob{Local: "u2"})
			letFirstGo(t, f)
			pinAway(t, f, "u1")
			if _, err := f.st.Reroute(f.ctx, f.ref("u1"), store.Sticky{}); err != nil {
				t.Fatal(err)
			}
			if sh := f.availableOrder(0); !slices.Equal(sh, []string{"u1"}) {
				t.Fatalf("shared list %v, want [u1] back on it", sh)
			}
			f.clk.Advance(1100 * time.Millisecond)
			if l := locals(f.claim(10, "w").Jobs); len(l) != 1 || !l["u1"] {
				wl, _ := f.rdb.LRange(f.ctx, f.p.RateWait("slow"), 0, -1).Result()
				t.Fatalf("claimed %v (wait list %v), want [u1]: unpinned, it keeps its token as a shared waiter does", l, wl)
			}
		})
	}
}

// pinAway reroutes job local to a worker that never comes (sticky.Wait).
func pinAway(t *testing.T, f *fixture, local string) {
	t.Helper()
	if _, err := f.st.Reroute(f.ctx, f.ref(local), store.Sticky{Worker: "gone", Mode: "w"}); err != nil {
		t.Fatal(err)
	}
}
