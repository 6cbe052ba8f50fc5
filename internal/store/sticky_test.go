package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestStickyRouting: a pinned job is claimed only by its preferred worker,
// never hides unpinned work from others, keeps its preference on retry and
// after a crash, and follows its fallback when that worker does not come.
func TestStickyRouting(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			pin := func(mode string, after time.Duration) store.Sticky {
				return store.Sticky{Worker: "worker-b", Mode: mode, After: after}
			}
			f.enqueue(store.NewJob{Local: "wait", Priority: 9, Sticky: pin("w", 0)},
				store.NewJob{Local: "after", Priority: 9, Sticky: pin("a", time.Minute)},
				store.NewJob{Local: "fail", Priority: 9, Sticky: pin("f", time.Minute)},
				store.NewJob{Local: "free"})
			first := f.claim(10, "worker-a")
			if got := locals(first.Jobs); len(got) != 1 || !got["free"] {
				t.Fatalf("worker A claimed %v, want only the unpinned job", got)
			}
			f.ack(first.Jobs[0], store.Ack{Code: store.CodeOK})
			f.clk.Advance(time.Minute)
			res := f.claim(10, "worker-a")
			if got := locals(res.Jobs); len(got) != 1 || !got["after"] {
				t.Fatalf("after the fallback delay A claimed %v, want the After job", got)
			}
			f.ack(res.Jobs[0], store.Ack{Code: store.CodeOK})
			if len(res.Parked) != 1 || res.Parked[0].Local != "fail" || res.Parked[0].Reason != "sticky_unavailable" {
				t.Fatalf("parked %+v, want the FailAfter job archived", res.Parked)
			}
			if got := locals(f.claim(10, "worker-c").Jobs); len(got) != 0 {
				t.Fatalf("worker C claimed %v, want nothing (Wait keeps its job for B)", got)
			}
			j := f.claimOne("worker-b")
			if j.Local != "wait" {
				t.Fatalf("worker B claimed %s", j.Local)
			}
			f.ack(j, store.Ack{Code: store.CodeRetry, Reason: "error", Message: "x"}) // retry: still pinned
			f.clk.Advance(time.Hour)
			if got := locals(f.claim(10, "worker-a").Jobs); len(got) != 0 {
				t.Fatalf("retried pinned job went to A: %v", got)
			}
			j = f.claimOne("worker-b")
			f.clk.Advance(time.Hour) // B's lease expires: crash recovery keeps the pin
			if _, err := f.reap(10); err != nil {
				t.Fatal(err)
			}
			f.clk.Advance(time.Minute) // past the crash delay
			if got := locals(f.claim(10, "worker-a").Jobs); len(got) != 0 {
				t.Fatalf("reaped pinned job went to A: %v", got)
			}
			if j2 := f.claimOne("worker-b"); j2.Local != j.Local || j2.CrashAttempt != 1 {
				t.Fatalf("B got %s with crash %d", j2.Local, j2.CrashAttempt)
			}
		})
	}
}

// TestRerouteUnpinnedJob: pinning an available job that was not pinned
// leaves its entry on the shared list, which no worker may take it from
// any more: only the new preferred worker claims it, until its fallback
// hands it to every worker.
func TestRerouteUnpinnedJob(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "j"})
			if _, err := f.st.Reroute(f.ctx, f.ref("j"), store.Sticky{Worker: "worker-b", Mode: "a", After: time.Minute}); err != nil {
				t.Fatal(err)
			}
			if got := locals(f.claim(10, "worker-a").Jobs); len(got) != 0 {
				t.Fatalf("worker A claimed %v, want nothing: the job prefers B", got)
			}
			f.clk.Advance(time.Minute)
			j := f.claimOne("worker-a")
			if j.Local != "j" {
				t.Fatalf("after the fallback A claimed %s", j.Local)
			}
			f.ack(j, store.Ack{Code: store.CodeRetry, Reason: "error", Message: "x"}) // pinned to B again
			f.clk.Advance(time.Hour)
			if got := locals(f.claim(10, "worker-a").Jobs); len(got) != 0 {
				t.Fatalf("the retried job went to A at once: %v", got)
			}
			if j := f.claimOne("worker-b"); j.Local != "j" {
				t.Fatalf("B claimed %s", j.Local)
			}
		})
	}
}

// TestStaleEntryDoesNotHideLiveOne: a job pinned to B and then unpinned
// has a stale entry on B's pin list and a live one on the shared list.
// B's claim meets the stale entry first, and must still take the job
// from the shared list in the same claim.
func TestStaleEntryDoesNotHideLiveOne(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "j", Sticky: store.Sticky{Worker: "worker-b", Mode: "w"}})
			if _, err := f.st.Reroute(f.ctx, f.ref("j"), store.Sticky{}); err != nil {
				t.Fatal(err)
			}
			if got := locals(f.claim(10, "worker-b").Jobs); len(got) != 1 || !got["j"] {
				t.Fatalf("worker B claimed %v, want the unpinned job", got)
			}
		})
	}
}

// TestRerouteCompletedRefused: a completed job never runs again, so
// rerouting it is a state error that writes nothing; an archived one,
// which a redrive may run again, takes the new preference.
func TestRerouteCompletedRefused(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "done"})
			f.ack(f.claimOne("w"), store.Ack{Code: store.CodeOK})
			_, err := f.st.Reroute(f.ctx, f.ref("done"), store.Sticky{Worker: "worker-b", Mode: "a", After: time.Minute})
			var se *sluicetype.StateError
			if !errors.As(err, &se) || se.State != "completed" || !errors.Is(err, sluicetype.ErrWrongState) {
				t.Fatalf("reroute of a completed job: %v", err)
			}
			if n, _ := f.rdb.HExists(f.ctx, f.p.Job("done"), keys.FieldStickyWorker).Result(); n {
				t.Fatal("the refused reroute wrote the completed job's preferred worker")
			}
			f.enqueue(store.NewJob{Local: "dead", MaxAttempts: 1})
			f.ack(f.claimOne("w"), store.Ack{Code: store.CodeRetry, Reason: "error", Message: "x"})
			if _, err := f.st.Reroute(f.ctx, f.ref("dead"), store.Sticky{Worker: "worker-b", Mode: "a", After: time.Minute}); err != nil {
				t.Fatalf("reroute of an archived job: %v", err)
			}
		})
	}
}

// TestStickyFallbackSurvivesWait: a pinned job its After fallback handed
// to every worker that then waits on its concurrency key (or its rate
// class) stays handed to every worker when its turn comes: it is not
// pinned again to the worker that did not come, for another delay, while
// it holds the key's turn and the key's other waiters wait behind it.
func TestStickyFallbackSurvivesWait(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			lim := store.Limits{ConcurrencyKey: "k", ConcurrencyLimit: 1}
			f.enqueue(store.NewJob{Local: "a", Limits: lim})
			f.enqueue(store.NewJob{Local: "j", Limits: lim, Sticky: store.Sticky{Worker: "gone", Mode: "a", After: time.Second}})
			a := f.claimOne("w")
			f.clk.Advance(time.Second) // j's fallback hands it to every worker; k is full: j waits
			if got := f.claim(10, "w"); len(got.Jobs) != 0 {
				t.Fatalf("claimed over the limit: %v", locals(got.Jobs))
			}
			f.ack(a, store.Ack{Code: store.CodeOK}) // j's turn
			if got := locals(f.claim(10, "w").Jobs); len(got) != 1 || !got["j"] {
				t.Fatalf("after a finished w claimed %v, want j (its fallback was due before it waited)", got)
			}
		})
	}
}

// TestPinnedWaiterHidesNoTurn: a concurrency waiter pinned to a worker
// that no longer claims does not hold its key's turn: the next waiter goes
// with it, for any worker, when a slot frees.
func TestPinnedWaiterHidesNoTurn(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			lim := store.Limits{ConcurrencyKey: "k", ConcurrencyLimit: 1}
			f.enqueue(store.NewJob{Local: "a", Limits: lim})
			a := f.claimOne("w")
			f.enqueue(store.NewJob{Local: "j", Limits: lim, Sticky: store.Sticky{Worker: "w1", Mode: "w"}})
			if got := f.claim(10, "w1"); len(got.Jobs) != 0 { // j waits on k; then w1 goes away
				t.Fatalf("claimed over the limit: %v", locals(got.Jobs))
			}
			f.enqueue(store.NewJob{Local: "c", Limits: lim})
			if got := f.claim(10, "w"); len(got.Jobs) != 0 { // c waits behind j
				t.Fatalf("claimed over the limit: %v", locals(got.Jobs))
			}
			f.ack(a, store.Ack{Code: store.CodeOK})
			if got := locals(f.claim(10, "w").Jobs); len(got) != 1 || !got["c"] {
				t.Fatalf("after a finished w claimed %v, want c (j waits for w1 alone)", got)
			}
			if got := f.claim(10, "w1"); len(got.Jobs) != 0 { // w1 back: k is full, j waits again
				t.Fatalf("claimed over the limit: %v", locals(got.Jobs))
			}
		})
	}
}
