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
// a second (burst 5). For four seconds the workers take only
// higher-priority work, each claim a pass of the class: they let 5
// waiters go, not 20, and the waiters then run 5 a second in their order
// (before, each pass let 5 more go to the front of the list, and the last
// let go ran first).
func TestRateWaitersRunInOrderWhileWorkersBusy(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			rl := store.Limits{RateClass: "c", RateJobs: 5, RatePer: time.Second, RateBurst: 5}
			var first, ws []store.NewJob
			var want []string
			for i := range 5 {
				first = append(first, store.NewJob{Local: fmt.Sprintf("r%d", i), Limits: rl})
			}
			f.enqueue(first...)
			if got := f.claim(10, "w"); len(got.Jobs) != 5 {
				t.Fatalf("first claim took %d jobs, want the burst of 5", len(got.Jobs))
			}
			for i := range 20 {
				ws = append(ws, store.NewJob{Local: fmt.Sprintf("w%02d", i), Limits: rl})
				want = append(want, fmt.Sprintf("w%02d", i))
			}
			f.enqueue(ws...)
			if got := f.claim(30, "w"); len(got.Jobs) != 0 {
				t.Fatalf("claimed over the rate: %v", locals(got.Jobs))
			}
			for i := range 4 {
				f.enqueue(store.NewJob{Local: fmt.Sprintf("hi%d", i), Priority: 9})
				f.clk.Advance(time.Second)
				if j := f.claimOne("w"); j.Local != fmt.Sprintf("hi%d", i) {
					t.Fatalf("busy claim %d took %s", i, j.Local)
				}
			}
			if sh := f.availableOrder(0); len(sh) != 5 {
				t.Fatalf("four passes with no claim of the class between them let %d waiters go (%v), want 5: one bucket of tokens", len(sh), sh)
			}
			var ran []string
			for range 6 {
				for _, j := range f.claim(30, "w").Jobs {
					ran = append(ran, j.Local)
				}
				f.clk.Advance(time.Second)
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
// hour; the token lets u1 go, and u1's deadline passes before a claim
// leases it. The claim that archives u1 gives its promised token to u2,
// which runs at once, not an hour later.
func TestArchivedLetGoWaiterPassesToken(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			dl := f.clk.Now().Add(time.Hour + time.Minute)
			slowWaiters(t, f, store.NewJob{Local: "u1", Deadline: dl}, store.NewJob{Local: "u2"})
			letFirstGo(t, f)
			f.clk.Advance(2 * time.Minute) // u1's deadline passes
			got := f.claim(10, "w")
			if l := locals(got.Jobs); len(l) != 1 || !l["u2"] {
				t.Fatalf("claimed %v (parked %v), want [u2]: u1's token goes to it", l, got.Parked)
			}
			if f.reason("u1") != "deadline_exceeded" {
				t.Fatalf("u1 archived for %q", f.reason("u1"))
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
			if _, err := f.st.Reroute(f.ctx, f.ref("u1"), store.Sticky{Worker: "gone", Mode: "w"}); err != nil {
				t.Fatal(err)
			}
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
