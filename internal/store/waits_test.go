package store_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/checkpoint"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/sluicetype"
)

func (f *fixture) suspend(j *store.Job, e *sluicetype.SuspendedError) string {
	f.t.Helper()
	spec, err := store.SuspendSpec(e)
	if err != nil {
		f.t.Fatal(err)
	}
	r := f.ack(j, store.Ack{Code: store.CodeSuspend, Data: []byte(spec)})
	if r.Err != nil {
		f.t.Fatalf("suspend: %v", r.Err)
	}
	return r.State
}

func (f *fixture) signal(local, name, payload string) (string, error) {
	r, err := f.st.Signal(f.ctx, keys.Ref{Partition: f.p, Local: local}, name, []byte(payload), "")
	return r.State, err
}

// TestSuspendPastDeadline: a job with a deadline that suspends on a
// signal alone, or on a timer past its deadline, wakes at the deadline and
// is archived (deadline_exceeded) by the claim that finds it: not left
// waiting for ever on a signal that never comes.
func TestSuspendPastDeadline(t *testing.T) {
	for _, b := range backends(t) {
		for _, wait := range []*sluicetype.SuspendedError{
			{Signals: []string{"approve"}},
			{Timers: []sluicetype.Timer{{Name: "t", After: 3 * time.Hour}}},
		} {
			t.Run(b.name, func(t *testing.T) {
				f := newFixture(t, b)
				f.enqueue(store.NewJob{Local: "w", Deadline: epoch.Add(time.Hour)})
				j := f.claimOne("w1")
				if s := f.suspend(j, wait); s != "scheduled" {
					t.Fatalf("state %s, want scheduled", s)
				}
				if got, _ := f.get("w"); !got.RunAt.Equal(epoch.Add(time.Hour)) {
					t.Fatalf("suspended until %v, want the deadline %v", got.RunAt, epoch.Add(time.Hour))
				}
				f.clk.Advance(time.Hour)
				if _, err := f.promote(10); err != nil {
					t.Fatal(err)
				}
				if res := f.claim(10, "w1"); len(res.Jobs) != 0 {
					t.Fatalf("claimed %d jobs past the deadline", len(res.Jobs))
				}
				if got, _ := f.get("w"); got.State != "archived" || got.Reason != "deadline_exceeded" {
					t.Fatalf("past the deadline: %s (%s), want archived (deadline_exceeded)", got.State, got.Reason)
				}
			})
		}
	}
}

// TestJoinWaitPastDeadline: a parent with a deadline that waits for its
// children (an ack 'wait', rechecked in an hour) wakes at its deadline
// and is archived (deadline_exceeded) by the claim that finds it. Before,
// the wait ignored the deadline, and a parent whose children stalled was
// archived only at its recheck, up to JoinRecheck late.
func TestJoinWaitPastDeadline(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "p", Deadline: epoch.Add(time.Minute)})
			r := f.ack(f.claimOne("w1"), store.Ack{Code: store.CodeWait, Message: "kids", Data: []byte("2"), Reason: "a", Delay: time.Hour})
			if r.State != "scheduled" {
				t.Fatalf("wait: %+v, want scheduled", r)
			}
			if got, _ := f.get("p"); !got.RunAt.Equal(epoch.Add(time.Minute)) {
				t.Fatalf("waiting until %v, want the deadline %v", got.RunAt, epoch.Add(time.Minute))
			}
			f.clk.Advance(time.Minute)
			if _, err := f.promote(10); err != nil {
				t.Fatal(err)
			}
			if res := f.claim(10, "w1"); len(res.Jobs) != 0 {
				t.Fatalf("claimed %d jobs past the deadline", len(res.Jobs))
			}
			if got, _ := f.get("p"); got.State != "archived" || got.Reason != "deadline_exceeded" {
				t.Fatalf("past the deadline: %s (%s), want archived (deadline_exceeded)", got.State, got.Reason)
			}
		})
	}
}

// TestSuspendTimers: a suspended job is scheduled at its earliest timer,
// holds no lease, keeps each timer's first wake time across suspensions,
// and comes back at once when a timer is due already.
func TestSuspendTimers(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "w"})
			j := f.claimOne("w1")
			if s := f.suspend(j, &sluicetype.SuspendedError{Timers: []sluicetype.Timer{
				{Name: "remind", After: time.Hour}, {Name: "give-up", After: 3 * time.Hour},
			}}); s != "scheduled" {
				t.Fatalf("state %s, want scheduled", s)
			}
			got, _ := f.get("w")
			if got.State != "scheduled" || !got.RunAt.Equal(epoch.Add(time.Hour)) || got.LeaseID != "" {
				t.Fatalf("suspended job: state %s, due %v, lease %q", got.State, got.RunAt, got.LeaseID)
			}
			if _, ok := f.score(f.p.Running(), "w"); ok {
				t.Fatal("a suspended job is still in the running set")
			}
			// woken by its first timer; suspending again on both keeps
			// "give-up" where it was
			f.clk.Advance(time.Hour)
			j = f.claimOne("w1")
			f.clk.Advance(20 * time.Second) // within its lease
			f.suspend(j, &sluicetype.SuspendedError{Timers: []sluicetype.Timer{{Name: "give-up", After: 3 * time.Hour}}})
			if got, _ := f.get("w"); !got.RunAt.Equal(epoch.Add(3 * time.Hour)) {
				t.Fatalf("give-up moved to %v, want %v", got.RunAt, epoch.Add(3*time.Hour))
			}
			// the timers are in the job hash, which needs no steps hash
			// and holds no lease while suspended but its ID (a late
			// re-send of the suspend ack is answered by it)
			h, err := f.rdb.HGetAll(f.ctx, f.p.Job("w")).Result()
			if err != nil {
				t.Fatal(err)
			}
			if _, at, ok := checkpoint.Timer(checkpoint.TimerPrefix+"give-up", []byte(h["!t:give-up"])); !ok || !at.Equal(epoch.Add(3*time.Hour)) {
				t.Fatalf("timer field: %v", h)
			}
			if h[keys.FieldLeaseID] != j.LeaseID {
				t.Errorf("suspended job holds lease ID %q, want %q", h[keys.FieldLeaseID], j.LeaseID)
			}
			for _, f := range []string{keys.FieldWorker, keys.FieldLeaseStart, keys.FieldHasSteps} {
				if v, ok := h[f]; ok {
					t.Errorf("suspended job holds %s=%q", f, v)
				}
			}
			if n, err := f.rdb.Exists(f.ctx, f.p.Steps("w")).Result(); err != nil || n != 0 {
				t.Errorf("a steps hash for timers alone: %d %v", n, err)
			}
			// the claim hands the timers out with the job
			f.clk.Advance(3 * time.Hour)
			j = f.claimOne("w1")
			if _, at, ok := checkpoint.Timer(checkpoint.TimerPrefix+"remind", j.Steps["!t:remind"]); !ok || !at.Equal(epoch.Add(time.Hour)) {
				t.Fatalf("claimed timers: %v", j.Steps)
			}
			// a due timer makes the job available again at once
			if s := f.suspend(j, &sluicetype.SuspendedError{Timers: []sluicetype.Timer{{Name: "give-up"}}}); s != "available" {
				t.Fatalf("suspending on a due timer: %s, want available", s)
			}
		})
	}
}

// TestSignals: a signal to a job suspended for it wakes it at once; one
// sent before is kept and makes the suspension return available; each is
// taken once, with a step's checkpoint; signals to finished and unknown
// jobs are refused and keep nothing.
func TestSignals(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "w"})
			j := f.claimOne("w1")
			if s := f.suspend(j, &sluicetype.SuspendedError{Signals: []string{"approve"}}); s != "scheduled" {
				t.Fatalf("state %s", s)
			}
			got, _ := f.get("w")
			if !got.RunAt.IsZero() || strings.Join(got.AwaitingSignals, ",") != "approve" {
				t.Fatalf("suspended on a signal: due %v, awaiting %v", got.RunAt, got.AwaitingSignals)
			}
			if s, err := f.signal("w", "other", "x"); err != nil || s != "scheduled" {
				t.Fatalf("a signal it does not wait for: %s %v", s, err)
			}
			if s, err := f.signal("w", "approve", "yes"); err != nil || s != "available" {
				t.Fatalf("the awaited signal: %s %v, want available", s, err)
			}
			j = f.claimOne("w1")
			var field string
			for k := range j.Steps {
				if _, name, ok := checkpoint.Signal(k); ok && name == "approve" {
					field = k
				}
			}
			if field == "" || string(j.Steps[field]) != "yes" {
				t.Fatalf("claim did not hand out the signal: %v", j.Steps)
			}
			take := store.Checkpoint{Lease: lease(j), Field: "decide", Record: []byte("r1"), Mode: store.ModeTake(field), Commit: "c1"}
			if _, err := f.checkpoint(take); err != nil {
				t.Fatal(err)
			}
			if _, err := f.checkpoint(take); err != nil { // the same commit again: ok, nothing written
				t.Fatalf("the same take again: %v", err)
			}
			again := take
			again.Field, again.Record, again.Commit = "decide2", []byte("r2"), "c2"
			var fx *sluicetype.EffectError
			if _, err := f.checkpoint(again); !errors.As(err, &fx) {
				t.Fatalf("taking a taken signal: %v, want an EffectError", err)
			}
			if ok, _ := f.rdb.HExists(f.ctx, f.p.Steps("w"), field).Result(); ok {
				t.Fatal("the taken signal is still kept")
			}
			// only a signal may be taken: not a step's checkpoint
			notSignal := take
			notSignal.Field, notSignal.Record, notSignal.Commit, notSignal.Mode = "decide3", []byte("r3"), "c3", store.ModeTake("decide")
			if _, err := f.checkpoint(notSignal); !errors.As(err, &fx) {
				t.Fatalf("taking a step's checkpoint: %v, want an EffectError", err)
			}
			if rec, _ := f.rdb.HGet(f.ctx, f.p.Steps("w"), "decide").Result(); rec != "r1" {
				t.Fatalf("step decide's checkpoint after a take of it: %q, want r1 kept", rec)
			}
			// sent before the wait: the suspension does not stick
			if _, err := f.signal("w", "again", "1"); err != nil {
				t.Fatal(err)
			}
			if s := f.suspend(j, &sluicetype.SuspendedError{Signals: []string{"again"}}); s != "available" {
				t.Fatalf("a kept signal: %s, want available", s)
			}
			// finished and unknown jobs
			f.claimOne("w1") // w, back from its kept signal
			f.enqueue(store.NewJob{Local: "done"})
			d := f.claimOne("w1")
			f.ack(d, store.Ack{Code: store.CodeOK})
			var se *sluicetype.StateError
			if _, err := f.signal("done", "approve", "x"); !errors.As(err, &se) || se.State != "completed" {
				t.Fatalf("signal to a finished job: %v", err)
			}
			if _, err := f.signal("nope", "approve", "x"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("signal to an unknown job: %v", err)
			}
			if n, _ := f.rdb.Exists(f.ctx, f.p.Steps("done"), f.p.Steps("nope")).Result(); n != 0 {
				t.Fatal("a refused signal was kept")
			}
		})
	}
}

// TestSignalKey: a signal with the key of one sent before keeps nothing
// and says so; another key, or none, keeps another.
func TestSignalKey(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "w"})
			ref := keys.Ref{Partition: f.p, Local: "w"}
			for i, c := range []struct {
				key string
				dup bool
			}{{"k1", false}, {"k1", true}, {"k2", false}, {"", false}, {"", false}} {
				r, err := f.st.Signal(f.ctx, ref, "go", []byte("x"), c.key)
				if err != nil || r.Duplicate != c.dup || r.State != "available" {
					t.Fatalf("send %d (key %q): %+v %v, want duplicate %v", i, c.key, r, err, c.dup)
				}
			}
			steps, _ := f.rdb.HGetAll(f.ctx, f.p.Steps("w")).Result()
			kept := 0
			for k := range steps {
				if _, _, ok := checkpoint.Signal(k); ok {
					kept++
				}
			}
			if kept != 4 {
				t.Fatalf("%d signals kept, want 4: %v", kept, steps)
			}
		})
	}
}

// TestSuspendSpec: names and durations are checked before anything is
// sent, and the never-due time agrees with the script's.
func TestSuspendSpec(t *testing.T) {
	for _, e := range []*sluicetype.SuspendedError{
		{},
		{Signals: []string{"has space"}},
		{Timers: []sluicetype.Timer{{Name: "t", After: -time.Second}}},
		{Timers: []sluicetype.Timer{{Name: "", After: time.Second}}},
	} {
		if _, err := store.SuspendSpec(e); !errors.Is(err, store.ErrInvalidWait) {
			t.Errorf("%+v: %v", e, err)
		}
	}
	if !strings.Contains(lua.Source("ack"), "local FAR = 4503599627370496") || store.NeverDue != 4503599627370496 {
		t.Error("store.NeverDue and lib_waits.lua's FAR differ")
	}
	if !strings.Contains(lua.Source("enqueue"), fmt.Sprintf("local HOLD_AT = %d", store.HeldDue)) {
		t.Error("store.HeldDue and lib_ready.lua's HOLD_AT differ")
	}
}

// TestTimerInStepsHashKept: a workflow that went to sleep under an earlier
// version has its timer in its steps hash; suspending again on it keeps
// that wake time rather than starting the clock over.
func TestTimerInStepsHashKept(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "old"})
			j := f.claimOne("w1")
			wake := epoch.Add(2 * time.Hour).UnixMilli()
			if err := f.rdb.HSet(f.ctx, f.p.Steps("old"), checkpoint.TimerPrefix+"nap", wake).Err(); err != nil {
				t.Fatal(err)
			}
			if err := f.rdb.HSet(f.ctx, f.p.Job("old"), keys.FieldHasSteps, 1).Err(); err != nil {
				t.Fatal(err)
			}
			f.suspend(j, &sluicetype.SuspendedError{Timers: []sluicetype.Timer{{Name: "nap", After: time.Hour}}})
			if got, _ := f.get("old"); got.RunAt.UnixMilli() != wake {
				t.Fatalf("due at %v, want the earlier version's wake time %v", got.RunAt, time.UnixMilli(wake))
			}
		})
	}
}
