package store_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// refused checks that err is a *sluicetype.StateError of RunNow for a job
// in state whose Why contains why.
func refused(t *testing.T, err error, state, why string) {
	t.Helper()
	var se *sluicetype.StateError
	if !errors.As(err, &se) || !errors.Is(err, store.ErrWrongState) || se.Op != "run now" || se.State != state ||
		!strings.Contains(se.Why, why) {
		t.Fatalf("run now: %v (%#v), want a StateError for %s (why %q)", err, se, state, why)
	}
}

// TestRunNow: a scheduled or retryable job becomes available at once,
// keeping its priority, sticky routing, unique key, attempts and errors;
// a second run-now of it, and run-now of an unknown, running or finished
// job, are refused with nothing written.
func TestRunNow(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "fail"})
			f.ack(f.claimOne("w"), store.Ack{Code: store.CodeRetry, Reason: "error", Message: "boom", Delay: time.Hour})
			f.enqueue(
				store.NewJob{Local: "later", Delay: time.Hour, Priority: 5, Unique: store.Unique{Key: "u"}},
				store.NewJob{Local: "pinned", Delay: time.Hour, Sticky: store.Sticky{Worker: "w9", Mode: "w"}},
			)
			for _, c := range []struct{ local, prev string }{{"later", "scheduled"}, {"pinned", "scheduled"}, {"fail", "retryable"}} {
				if prev, err := f.st.RunNow(f.ctx, f.ref(c.local)); err != nil || prev != c.prev {
					t.Fatalf("run now %s: %q %v, want %s", c.local, prev, err, c.prev)
				}
				if j, _ := f.get(c.local); j.State != "available" || !j.RunAt.IsZero() {
					t.Fatalf("%s after run now: %s, run at %v", c.local, j.State, j.RunAt)
				}
				if _, ok := f.due(c.local); ok {
					t.Fatalf("%s still in the scheduled set", c.local)
				}
			}
			if got := f.availableOrder(5); !slices.Equal(got, []string{"later"}) {
				t.Fatalf("priority 5 list %v, want [later]", got)
			}
			if got, _ := f.rdb.LRange(f.ctx, f.p.Pinned("w9"), 0, -1).Result(); !slices.Equal(got, []string{"pinned"}) {
				t.Fatalf("w9's pin list %v, want [pinned]", got)
			}
			if holder, _ := f.rdb.Get(f.ctx, f.p.Unique("u")).Result(); holder != "later" {
				t.Fatalf("unique key held by %q, want later", holder)
			}
			if j, recs := f.get("fail"); j.Attempt != 1 || len(recs) != 1 {
				t.Fatalf("retried job: attempt %d, %d errors; want 1 and 1", j.Attempt, len(recs))
			}
			f.wantStats(map[string]string{"available": "3", "scheduled": "0", "retryable": "0"})

			_, err := f.st.RunNow(f.ctx, f.ref("later"))
			refused(t, err, "available", "")
			if _, err := f.st.RunNow(f.ctx, f.ref("nope")); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("run now of an unknown job: %v, want ErrNotFound", err)
			}
			j := f.claimOne("w") // later: priority 5
			_, err = f.st.RunNow(f.ctx, f.ref(j.Local))
			refused(t, err, "running", "")
			f.ack(j, store.Ack{Code: store.CodeOK})
			_, err = f.st.RunNow(f.ctx, f.ref(j.Local))
			refused(t, err, "completed", "")
			f.wantStats(map[string]string{"available": "2", "completed": "1", "running": "0"})
		})
	}
}

// TestRunNowWaiting: a suspended workflow and a job held behind a
// quarantined twin are refused, saying why, and stay as they were; a
// parent waiting for its children runs, its wait dropped.
func TestRunNowWaiting(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "sleep"})
			f.suspend(f.claimOne("w"), &sluicetype.SuspendedError{Timers: []sluicetype.Timer{{Name: "t", After: time.Hour}}})
			due, _ := f.due("sleep")
			_, err := f.st.RunNow(f.ctx, f.ref("sleep"))
			refused(t, err, "scheduled", "suspended")
			if at, ok := f.due("sleep"); !ok || at != due {
				t.Fatalf("the refused workflow's due time moved: %v %v, want %v", at, ok, due)
			}

			f.enqueue(store.NewJob{Local: "q", Hold: "fp"})
			for range 3 {
				f.ack(f.claimOne("w"), store.Ack{Code: store.CodeCrash, Reason: "panic", Message: "boom"})
				f.clk.Advance(time.Minute)
			}
			res, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{{Local: "twin", Kind: "k", Payload: []byte("x"), MaxAttempts: 3, Hold: "fp"}})
			if err != nil || res[0].HeldBy != "q" {
				t.Fatalf("enqueue twin: %+v %v", res, err)
			}
			_, err = f.st.RunNow(f.ctx, f.ref("twin"))
			refused(t, err, "scheduled", "held behind quarantined job "+f.ref("q").String())

			f.enqueue(store.NewJob{Local: "parent"})
			r := f.ack(f.claimOne("w"), store.Ack{Code: store.CodeWait, Message: "spawn", Data: []byte("2"), Reason: "a", Delay: time.Hour})
			if r.State != "scheduled" {
				t.Fatalf("parent wait: %+v", r)
			}
			if prev, err := f.st.RunNow(f.ctx, f.ref("parent")); err != nil || prev != "scheduled" {
				t.Fatalf("run now of a waiting parent: %q %v", prev, err)
			}
			if j, _ := f.get("parent"); j.State != "available" || j.WaitingFor != "" || j.WaitingCount != 0 {
				t.Fatalf("parent after run now: %s, waiting for %q (%d)", j.State, j.WaitingFor, j.WaitingCount)
			}
			f.wantStats(map[string]string{"scheduled": "2", "available": "1", "quarantined": "1"})
		})
	}
}
