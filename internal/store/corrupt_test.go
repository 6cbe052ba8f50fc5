package store_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestAckCorruptCounterIsItsJobsAlone: an outcome that finds its job's
// counter corrupt (a retry's attempt field, a crash's crash field, a
// max-attempts field that is no number, or nan) archives that job as malformed;
// the call's other outcomes, before and after it, apply, and the call
// does not fail. Its result says why (Reason malformed), on every send. Before, the counter's HINCRBY raised after the earlier
// outcomes' writes (Redis keeps them), failing every job of the call, and
// each re-send of it applied the earlier completion's effects again.
func TestAckCorruptCounterIsItsJobsAlone(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		field string
		value string // what the field is set to ("not a number" when empty)
		ack   store.Ack
	}{
		{"retry, attempt", keys.FieldAttempt, "", store.Ack{Code: store.CodeRetry, Delay: time.Second, Message: "boom", Reason: "error"}},
		{"retry, max attempts", keys.FieldMaxAttempts, "", store.Ack{Code: store.CodeRetry, Delay: time.Second, Message: "boom", Reason: "error"}},
		{"crash", keys.FieldCrashAttempt, "", store.Ack{Code: store.CodeCrash, Delay: time.Second, Message: "panic", Reason: "panic"}},
		// tonumber reads 'nan' as a number no attempt count reaches: the
		// job retried for ever
		{"retry, max attempts nan", keys.FieldMaxAttempts, "nan", store.Ack{Code: store.CodeRetry, Delay: time.Second, Message: "boom", Reason: "error"}},
	}
	for _, b := range backends(t) {
		for _, tc := range cases {
			t.Run(b.name+"/"+tc.name, func(t *testing.T) {
				f := newFixture(t, b)
				f.enqueue(store.NewJob{Local: "x"}, store.NewJob{Local: "y"}, store.NewJob{Local: "z"})
				held := f.claimLeases(3, "w")
				v := tc.value
				if v == "" {
					v = "not a number"
				}
				f.rdb.HSet(f.ctx, f.p.Job("y"), tc.field, v)
				bal := f.key("bal")
				bad := tc.ack
				bad.Lease = held["y"]
				acks := []store.Ack{
					{Lease: held["x"], Code: store.CodeOK, Commit: "cx", Effects: []sluicetype.Effect{fx("INCRBY", bal, "100")}},
					bad,
					{Lease: held["z"], Code: store.CodeOK},
				}
				for send := range 3 { // the first call, then two re-sends of it (a lost reply)
					res, _, err := f.st.Ack(f.ctx, f.p, acks)
					if err != nil {
						t.Fatalf("send %d: %v", send, err)
					}
					got := fmt.Sprintln(res[0].State, res[1].State, res[2].State)
					if got != "completed archived completed\n" {
						t.Fatalf("send %d: states %q, want completed archived completed", send, got)
					}
					if res[1].Reason != "malformed" || res[0].Reason != "" {
						t.Fatalf("send %d: reasons %q, %q; want the corrupt job's malformed (what the store wrote), none for a completion", send, res[0].Reason, res[1].Reason)
					}
					if v := f.rdb.Get(f.ctx, bal).Val(); v != "100" {
						t.Fatalf("send %d: the completion's effect applied to %s, want once (100)", send, v)
					}
				}
				// read raw: Get refuses the job's corrupt field (ErrMalformed)
				h := f.rdb.HMGet(f.ctx, f.p.Job("y"), keys.FieldState, keys.FieldReason).Val()
				if store.StateName(fmt.Sprint(h[0])) != "archived" || h[1] != "malformed" {
					t.Fatalf("the corrupt job: state %v, reason %v; want archived, malformed", h[0], h[1])
				}
			})
		}
	}
}

// TestAckDiscardsArchivedWithErrors: a job archived by an outcome that
// records an error (retries exhausted, a deadline, a park) while archived
// jobs are deleted at once leaves nothing behind, its error list included.
func TestAckDiscardsArchivedWithErrors(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			st := store.New(b.rdb, store.Config{NS: redistest.NewNamespace(t), RetainCompleted: -1, RetainArchived: -1,
				RetainCancelled: time.Hour, CrashLimit: 3})
			f := &fixture{t: t, ctx: t.Context(), rdb: b.rdb, st: st, clk: &testClock{now: epoch}, p: st.Partition("q", 0)}
			f.enqueue(store.NewJob{Local: "r", MaxAttempts: 1}, store.NewJob{Local: "d"}, store.NewJob{Local: "p"})
			for _, j := range f.claim(3, "w").Jobs {
				a := map[string]store.Ack{
					"r": {Code: store.CodeRetry, Message: "boom", Reason: "error"},
					"d": {Code: store.CodeDeadline, Message: "late"},
					"p": {Code: store.CodePark, Message: "bad", Reason: "unknown_kind"},
				}[j.Local]
				if r := f.ack(j, a); r.State != "archived" {
					t.Fatalf("%s: %+v, want archived", j.Local, r)
				}
				if n := exists(t, f, f.p.Job(j.Local), f.p.Errors(j.Local), f.p.Body(j.Local)); n != 0 {
					t.Fatalf("%s: %d of its keys left", j.Local, n)
				}
			}
		})
	}
}

// TestReapCorruptCrashCounter: a maintenance pass that finds an expired
// job with a corrupt crash counter archives it as malformed and reaps the
// other expired jobs as usual. Before, its HINCRBY raised: every pass
// failed at the same job, and no lease of the partition was reaped again.
func TestReapCorruptCrashCounter(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "bad"}, store.NewJob{Local: "good"})
			f.claim(2, "w")
			f.rdb.HSet(f.ctx, f.p.Job("bad"), keys.FieldCrashAttempt, "not a number")
			f.clk.Advance(time.Minute) // past the 30 s leases
			reaped, err := f.reap(10)
			if err != nil {
				t.Fatalf("reap: %v", err)
			}
			got := reapedStates(reaped)
			if got["bad"] != "archived" || got["good"] != "retryable" {
				t.Fatalf("reaped %+v, want bad archived and good retryable", reaped)
			}
			if h := f.rdb.HGet(f.ctx, f.p.Job("bad"), keys.FieldReason).Val(); h != "malformed" {
				t.Fatalf("the corrupt job's reason: %q, want malformed", h)
			}
		})
	}
}

// TestCorruptJobKeyIsItsJobAlone: a running job whose key was overwritten
// with something that is not a hash fails alone in the batched calls of a
// worker (renewals, a step's checkpoints, acks): it answers lost or
// stale, and the other job of each call goes through; the reaper archives
// it once its lease expires. Before, the
// read of its fields raised and failed the whole call, every time.
func TestCorruptJobKeyIsItsJobAlone(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "bad"}, store.NewJob{Local: "good"})
			held := f.claimLeases(2, "w")
			f.rdb.Set(f.ctx, f.p.Job("bad"), "overwritten", 0)

			lost, _, err := f.st.Renew(f.ctx, f.p, []store.Renewal{{Lease: held["bad"], Duration: time.Minute},
				{Lease: held["good"], Duration: time.Minute}})
			if err != nil || len(lost) != 1 || lost[0].LeaseID != held["bad"].LeaseID {
				t.Fatalf("renew: lost %+v, %v; want the corrupt job's lease alone", lost, err)
			}
			rs, _ := f.st.Checkpoints(f.ctx, f.p, []store.Checkpoint{
				{Lease: held["bad"], Field: "s", Record: []byte("r"), Mode: store.ModeOnce},
				{Lease: held["good"], Field: "s", Record: []byte("r"), Mode: store.ModeOnce},
			})
			if !errors.Is(rs[0].Err, store.ErrStale) || rs[1].Err != nil {
				t.Fatalf("checkpoints: %v, %v; want stale, then written", rs[0].Err, rs[1].Err)
			}
			res, _, err := f.st.Ack(f.ctx, f.p, []store.Ack{{Lease: held["bad"], Code: store.CodeOK}, {Lease: held["good"], Code: store.CodeOK}})
			if err != nil || !errors.Is(res[0].Err, store.ErrStale) || res[1].State != "completed" {
				t.Fatalf("ack: %+v, %v; want stale, then completed", res, err)
			}

			// the reaper meets the corrupt job's lease among expired ones:
			// it sets the value aside and archives that job, out of the
			// running count (before, the job stayed counted as running)
			f.enqueue(store.NewJob{Local: "late"})
			f.claim(1, "w")
			f.clk.Advance(2 * time.Minute)
			reaped, err := f.reap(10)
			got := reapedStates(reaped)
			if err != nil || len(reaped) != 2 || got["late"] != "retryable" || got["bad"] != "archived" {
				t.Fatalf("reap: %+v, %v; want the corrupt job archived and the other retryable", reaped, err)
			}
			if s := f.stats(); s["running"] != 0 || s["archived"] != 1 {
				t.Fatalf("state counts %v, want running 0, archived 1", s)
			}
			if j, _ := f.get("bad"); j == nil || j.State != "archived" || j.Reason != "malformed" {
				t.Fatalf("the corrupt job reads as %+v, want archived, malformed", j)
			}
			if v := f.rdb.Get(f.ctx, f.p.Aside(keys.AsideJob, "bad", 1)).Val(); v != "overwritten" {
				t.Fatalf("the value set aside is %q, want the key's (overwritten)", v)
			}
		})
	}
}

// TestPromoteSkipsCorruptJobKey: a due scheduled entry whose job key holds
// something that is not a hash is dropped by the claim that promotes due
// jobs, and the other due job is promoted and claimed. Before, the read
// raised and every claim of the partition failed.
func TestPromoteSkipsCorruptJobKey(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "bad", Delay: time.Second}, store.NewJob{Local: "good", Delay: time.Second})
			f.rdb.Set(f.ctx, f.p.Job("bad"), "overwritten", 0)
			f.clk.Advance(time.Minute)
			if j := f.claimOne("w"); j.Local != "good" {
				t.Fatalf("claimed %s, want good", j.Local)
			}
		})
	}
}

// TestEnqueueOverNonJobKey: a job whose chosen ID names a key that holds
// something other than a job hash conflicts, alone; the jobs before and
// after it in the same call are added, and that key is left as it was.
// Before, reading it raised after the earlier jobs were written, and the
// call failed for every job in it.
func TestEnqueueOverNonJobKey(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.rdb.Set(f.ctx, f.p.Job("b"), "not a job", 0)
			res, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{{Local: "a", Kind: "k"}, {Local: "b", Kind: "k"}, {Local: "c", Kind: "k"}})
			if err != nil {
				t.Fatalf("enqueue: %v", err)
			}
			if res[0].Status != store.Added || res[1].Status != store.Conflicted || !errors.Is(res[1].Err, store.ErrConflict) ||
				res[2].Status != store.Added {
				t.Fatalf("results %+v, want added, conflicted, added", res)
			}
			if v := f.rdb.Get(f.ctx, f.p.Job("b")).Val(); v != "not a job" {
				t.Fatalf("the other key now holds %q", v)
			}
		})
	}
}

// TestSingleJobCallsOnCorruptKey: an operator's call on one job whose key
// holds something that is not a hash fails with ErrMalformed, not
// Redis's bare WRONGTYPE, and writes nothing: the key keeps its value.
func TestSingleJobCallsOnCorruptKey(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "bad"})
			f.rdb.Set(f.ctx, f.p.Job("bad"), "overwritten", 0)
			ref := f.ref("bad")
			calls := map[string]func() error{
				"cancel":  func() error { _, err := f.st.Cancel(f.ctx, ref, retainCancelled); return err },
				"delete":  func() error { _, err := f.st.Delete(f.ctx, ref); return err },
				"run now": func() error { _, err := f.st.RunNow(f.ctx, ref); return err },
				"signal":  func() error { _, err := f.st.Signal(f.ctx, ref, "go", nil, ""); return err },
				"watch":   func() error { _, _, err := f.st.Watch(f.ctx, ref); return err },
				"reroute": func() error {
					_, err := f.st.Reroute(f.ctx, ref, store.Sticky{})
					return err
				},
				"discard a signal": func() error { _, _, _, err := f.st.Unsignal(f.ctx, ref, "go", 0); return err },
			}
			for name, call := range calls {
				if err := call(); !errors.Is(err, store.ErrMalformed) {
					t.Errorf("%s: %v, want ErrMalformed", name, err)
				}
				if v := f.rdb.Get(f.ctx, f.p.Job("bad")).Val(); v != "overwritten" {
					t.Fatalf("after %s the key holds %q, want its value (overwritten)", name, v)
				}
			}
		})
	}
}

// TestCorruptConcurrencyLimitIsOne: a concurrency limit that is no whole
// number of at least 1 (corrupt data; enqueue writes none) is read as 1,
// as a missing one is. Before, tonumber took 'nan' for a limit no count
// reaches: every job of the key ran at once.
func TestCorruptConcurrencyLimitIsOne(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		for _, v := range []string{"nan", "0", "-1", "x"} {
			t.Run(b.name+"/"+v, func(t *testing.T) {
				f := newFixture(t, b)
				lim := store.Limits{ConcurrencyKey: "k", ConcurrencyLimit: 1}
				f.enqueue(store.NewJob{Local: "a", Limits: lim}, store.NewJob{Local: "b", Limits: lim})
				for _, id := range []string{"a", "b"} {
					f.rdb.HSet(f.ctx, f.p.Job(id), keys.FieldConcurrencyLimit, v)
				}
				if held := f.claimLeases(10, "w"); len(held) != 1 {
					t.Fatalf("%d jobs of the key run at once, want 1", len(held))
				}
			})
		}
	}
}
