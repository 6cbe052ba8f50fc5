package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestSuspendCorruptStepsKeyIsItsJobsAlone: a suspend outcome (a signal
// wait, or a timer of a job with checkpoints) reads the job's checkpoints
// key. One that holds another type raised after the call's earlier
// outcomes had written (Redis keeps them): the whole ack failed, a job
// completed before it was on no retention set, and the worker's retry
// failed the same way, its batch-mates reaped as crashes they never had.
// Now that job alone is archived 'malformed' and the others apply.
func TestSuspendCorruptStepsKeyIsItsJobsAlone(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		for _, wait := range []string{"signal", "timer"} {
			t.Run(b.name+"/"+wait, func(t *testing.T) {
				f := newFixture(t, b)
				f.enqueue(store.NewJob{Local: "x"}, store.NewJob{Local: "bad"}, store.NewJob{Local: "z"})
				held := f.claimLeases(3, "w")
				// bad ran a step, then its checkpoints key was overwritten
				f.rdb.HSet(f.ctx, f.p.Job("bad"), keys.FieldHasSteps, "1")
				f.overwrite(f.p.Steps("bad"))
				e := &sluicetype.SuspendedError{Signals: []string{"approve"}}
				if wait == "timer" {
					e = &sluicetype.SuspendedError{Timers: []sluicetype.Timer{{Name: "nap", After: time.Hour}}}
				}
				spec, err := store.SuspendSpec(e)
				if err != nil {
					t.Fatal(err)
				}
				res, _, err := f.st.Ack(f.ctx, f.p, []store.Ack{
					{Lease: held["x"], Code: store.CodeOK},
					{Lease: held["bad"], Code: store.CodeSuspend, Data: []byte(spec)},
					{Lease: held["z"], Code: store.CodeOK},
				})
				if err != nil {
					t.Fatalf("the call failed for every job in it: %v", err)
				}
				want := []string{"completed", "archived", "completed"}
				for i, r := range res {
					if r.State != want[i] || r.Err != nil {
						t.Errorf("outcome %d: %+v, want %s", i, r, want[i])
					}
				}
				if _, kept := f.score(f.p.Terminal("completed"), "x"); !kept {
					t.Errorf("x is on no retention set: stats %v", f.stats())
				}
				if j, _ := f.get("bad"); j.State != "archived" || j.Reason != "malformed" {
					t.Errorf("bad: %s (%q), want archived (malformed)", j.State, j.Reason)
				}
			})
		}
	}
}

// TestCorruptSignalFieldIsNoSignal: a checkpoints field that starts like
// a kept signal but holds no sequence number of ten digits (corrupt data:
// signal.lua writes none such) is no signal to any part of Sluice. The
// wait in Go skips it (checkpoint.Signal); the suspension took it for a
// signal there and made the job available again at once, whose wait
// suspended again: a job that ran for ever without a worker's pause.
// Discarding the signal's name deleted the field, then failed on the
// reply it made of it (no number): an error, with the write done.
func TestCorruptSignalFieldIsNoSignal(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "w"})
			j := f.claimOne("w1")
			const field = "!s:00000000x2:approve"
			f.rdb.HSet(f.ctx, f.p.Steps("w"), field, "p")
			f.rdb.HSet(f.ctx, f.p.Job("w"), keys.FieldHasSteps, "1")
			if s := f.suspend(j, &sluicetype.SuspendedError{Signals: []string{"approve"}}); s != "scheduled" {
				t.Fatalf("suspended on approve with only a corrupt field of its name: %s, want scheduled", s)
			}
			seq, _, _, err := f.st.Unsignal(f.ctx, f.ref("w"), "approve", 0)
			if err != nil || seq != 0 {
				t.Fatalf("discard: seq %d, %v; want none kept (seq 0)", seq, err)
			}
			if !f.rdb.HExists(f.ctx, f.p.Steps("w"), field).Val() {
				t.Fatal("the discard deleted the corrupt field")
			}
			// a signal sent now wakes the job, and is the one kept
			if s, err := f.signal("w", "approve", "ok"); err != nil || s != "available" {
				t.Fatalf("signal: %s, %v; want available", s, err)
			}
		})
	}
}
