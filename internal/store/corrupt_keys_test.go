package store_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// The tests here overwrite a key a job owns or needs besides its hash (its
// error list, checkpoints, payload body, children, parent, unique key,
// rate bucket, hold list) with a value of another type, or one of its
// counters with one HINCRBY refuses, and check that the script meeting it
// fails that job alone, writes nothing for it before it fails, and does
// not raise: Redis keeps the writes a script made before an error, and a
// call that raised after them had its re-sends apply them again, or left
// jobs popped from their lists on no list. Each failed before its fix.

// overwrite replaces key's value with a string (what an operator's stray
// SET would do).
func (f *fixture) overwrite(key string) {
	f.t.Helper()
	if err := f.rdb.Set(f.ctx, key, "overwritten", 0).Err(); err != nil {
		f.t.Fatal(err)
	}
}

// reason is a job's raw reason field (Get refuses some corrupt jobs).
func (f *fixture) reason(local string) string {
	return f.rdb.HGet(f.ctx, f.p.Job(local), keys.FieldReason).Val()
}

// TestMaintainPassesOverCorruptKeys: a maintenance pass that meets a
// finished job whose key holds no hash (sweep), an expired job whose
// orphan counter is no integer, or one whose error list is no list
// (reap), deals with that job and goes on. Before, it raised there on
// every pass: due jobs it had promoted were on no list, and no lease of
// the partition was reaped again.
func TestMaintainPassesOverCorruptKeys(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name+"/sweep", func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "done"})
			f.ack(f.claimOne("w"), store.Ack{Code: store.CodeOK})
			f.overwrite(f.p.Job("done"))
			f.enqueue(store.NewJob{Local: "later", Delay: time.Second})
			f.clk.Advance(48 * time.Hour) // past every retention
			for pass := range 2 {
				if _, err := f.st.Maintain(f.ctx, f.p, 100, 100, 100); err != nil {
					t.Fatalf("pass %d: %v", pass, err)
				}
			}
			if j := f.claimOne("w"); j == nil || j.Local != "later" {
				t.Fatalf("claimed %+v, want the promoted job", j)
			}
			if v := f.rdb.Get(f.ctx, f.p.Aside(keys.AsideJob, "done", 1)).Val(); v != "overwritten" {
				t.Errorf("the corrupt value was not set aside: %q", v)
			}
			if s := f.stats(); s["completed"] != 0 || s["running"] != 1 {
				t.Errorf("stats %v, want no completed job and one running", s)
			}
		})
		for _, tc := range []struct {
			name    string
			corrupt func(f *fixture)
			want    string // the bad job's state after the reap
		}{
			{"orphan counter", func(f *fixture) { f.rdb.HSet(f.ctx, f.p.Job("bad"), keys.FieldOrphanCount, "x") }, "archived"},
			{"error list", func(f *fixture) { f.overwrite(f.p.Errors("bad")) }, "retryable"},
		} {
			t.Run(b.name+"/reap, "+tc.name, func(t *testing.T) {
				f := newFixture(t, b)
				f.enqueue(store.NewJob{Local: "bad"}, store.NewJob{Local: "good"})
				f.claim(2, "w")
				tc.corrupt(f)
				f.clk.Advance(time.Minute) // past the leases
				reaped, err := f.reap(10)
				if err != nil {
					t.Fatalf("reap: %v", err)
				}
				got := reapedStates(reaped)
				if got["bad"] != tc.want || got["good"] != "retryable" {
					t.Fatalf("reaped %+v, want bad %s and good retryable", reaped, tc.want)
				}
				if tc.want == "archived" && f.reason("bad") != "malformed" {
					t.Errorf("bad archived for %q, want malformed", f.reason("bad"))
				}
				if tc.want == "retryable" {
					if n := f.rdb.LLen(f.ctx, f.p.Errors("bad")).Val(); n != 1 {
						t.Errorf("the error list holds %d entries, want the lease's one", n)
					}
				}
				if s := f.stats(); s["running"] != 0 {
					t.Errorf("stats %v: jobs left running", s)
				}
			})
		}
	}
}

// TestAckCorruptErrorList: a retry whose job's error list is no list
// charges its attempt once and applies with the call's other outcomes,
// however often the call is sent. Before, the LPUSH raised after the
// completion's writes: every send failed, and each charged an attempt.
func TestAckCorruptErrorList(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "x"}, store.NewJob{Local: "y", MaxAttempts: 10}, store.NewJob{Local: "z"})
			held := f.claimLeases(3, "w")
			f.overwrite(f.p.Errors("y"))
			bal := f.key("bal")
			acks := []store.Ack{
				{Lease: held["x"], Code: store.CodeOK, Commit: "cx", Effects: []sluicetype.Effect{fx("INCRBY", bal, "100")}},
				{Lease: held["y"], Code: store.CodeRetry, Delay: time.Second, Reason: "error", Message: "boom"},
				{Lease: held["z"], Code: store.CodeOK},
			}
			for send := range 3 {
				res, _, err := f.st.Ack(f.ctx, f.p, acks)
				if err != nil {
					t.Fatalf("send %d: %v", send, err)
				}
				if got := fmt.Sprintln(res[0].State, res[1].State, res[2].State); got != "completed retryable completed\n" {
					t.Fatalf("send %d: %s", send, got)
				}
			}
			if a := f.rdb.HGet(f.ctx, f.p.Job("y"), keys.FieldAttempt).Val(); a != "1" {
				t.Errorf("attempt %s, want 1", a)
			}
			f.wantValue("bal", "100")
		})
	}
}

// TestClaimCorruptJobData: a claim that meets a job whose payload body or
// checkpoints key holds another type, or whose fence is no integer,
// archives that job (malformed) and leases the others. Before, the GET or
// HGETALL raised after the claim had popped and leased jobs, which were
// then running on no run index (never reaped) or on no list; a fence of
// '1.5' was leased and sent as a float, which failed the whole reply.
func TestClaimCorruptJobData(t *testing.T) {
	t.Parallel()
	big := []byte(strings.Repeat("p", 64<<10)) // kept in a body key of its own
	cases := []struct {
		name    string
		job     store.NewJob
		corrupt func(f *fixture)
	}{
		{"body key", store.NewJob{Local: "bad", Payload: big}, func(f *fixture) {
			f.rdb.Del(f.ctx, f.p.Body("bad"))
			f.rdb.HSet(f.ctx, f.p.Body("bad"), "a", "b")
		}},
		{"steps key", store.NewJob{Local: "bad"}, func(f *fixture) {
			f.rdb.HSet(f.ctx, f.p.Job("bad"), keys.FieldHasSteps, "1")
			f.overwrite(f.p.Steps("bad"))
		}},
		{"fractional fence", store.NewJob{Local: "bad"}, func(f *fixture) { f.rdb.HSet(f.ctx, f.p.Job("bad"), keys.FieldFence, "1.5") }},
	}
	for _, b := range backends(t) {
		for _, tc := range cases {
			t.Run(b.name+"/"+tc.name, func(t *testing.T) {
				f := newFixture(t, b)
				f.enqueue(store.NewJob{Local: "x"}, tc.job, store.NewJob{Local: "z"})
				tc.corrupt(f)
				res := f.claim(3, "w")
				var leased []string
				for _, j := range res.Jobs {
					leased = append(leased, j.Local)
				}
				if fmt.Sprint(leased) != "[x z]" {
					t.Fatalf("leased %v, want [x z]", leased)
				}
				for _, id := range leased {
					if _, ok := f.score(f.p.Running(), id); !ok {
						t.Errorf("%s is not on the run index", id)
					}
				}
				if f.reason("bad") != "malformed" {
					t.Errorf("bad: reason %q, want archived malformed", f.reason("bad"))
				}
				if s := f.stats(); s["running"] != 2 || s["available"] != 0 || s["archived"] != 1 {
					t.Errorf("stats %v, want 2 running and 1 archived", s)
				}
			})
		}
	}
}

// TestChildCompletionWithCorruptParent: a child's completion whose parent
// key or children key holds another type completes the child, applies
// its effects once however often the ack is sent, and does not fail the
// call; so does the relay of a notification to such a parent in another
// partition, which drains its outbox. Before, delivering to the parent
// raised after the child's effects: each re-send applied them again, and
// the relay failed on every pass.
func TestChildCompletionWithCorruptParent(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		for _, which := range []string{"parent key", "children key"} {
			t.Run(b.name+"/"+which, func(t *testing.T) {
				f := newFixture(t, b)
				f.enqueue(store.NewJob{Local: "P"})
				f.enqueue(store.NewJob{Local: "c", Parent: &store.ParentRef{Ref: f.ref("P"), Step: "s"}})
				held := f.claimLeases(2, "w")
				if which == "parent key" {
					f.overwrite(f.p.Job("P"))
				} else {
					f.overwrite(f.p.Kids("P"))
				}
				bal := f.key("bal")
				acks := []store.Ack{{Lease: held["c"], Code: store.CodeOK, Commit: "c1", Effects: []sluicetype.Effect{fx("INCRBY", bal, "100")}}}
				for send := range 3 {
					res, _, err := f.st.Ack(f.ctx, f.p, acks)
					if err != nil || res[0].State != "completed" {
						t.Fatalf("send %d: %+v %v", send, res, err)
					}
				}
				f.wantValue("bal", "100")
			})
		}
		t.Run(b.name+"/relay", func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "P"})
			g := *f
			g.p = f.st.Partition("q", 1)
			g.enqueue(store.NewJob{Local: "c", Parent: &store.ParentRef{Ref: f.ref("P"), Step: "s"}})
			f.overwrite(f.p.Kids("P"))
			held := g.claimLeases(1, "w")
			if _, _, err := f.st.Ack(f.ctx, g.p, []store.Ack{{Lease: held["c"], Code: store.CodeOK}}); err != nil {
				t.Fatal(err)
			}
			if _, err := f.st.RelayOutbox(f.ctx, g.p, "", 100); err != nil {
				t.Fatalf("relay: %v", err)
			}
			if n := f.rdb.XLen(f.ctx, g.p.Outbox()).Val(); n != 0 {
				t.Errorf("%d entries left in the outbox", n)
			}
		})
	}
}

// TestRedriveSelectCorruptJob: a redrive by selector that meets an
// archived job whose key holds no hash skips it, names it, and revives
// the others.
// Before, its HMGET raised after the jobs before it were revived (left
// available on no list), on every step.
func TestRedriveSelectCorruptJob(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.archive("a")
			f.clk.Advance(time.Second)
			f.archive("b")
			f.overwrite(f.p.Job("b"))
			step, err := f.st.RedriveStep(f.ctx, f.p, store.Selector{State: "archived"}, store.ScanCursor{}, 10, false)
			if err != nil {
				t.Fatalf("redrive: %v", err)
			}
			if step.Matched != 1 || !slices.Equal(step.Unreadable, []string{"b"}) {
				t.Errorf("matched %d, unreadable %q; want 1 and b, named as a delete by selector names it", step.Matched, step.Unreadable)
			}
			if j := f.claimOne("w"); j == nil || j.Local != "a" {
				t.Fatalf("claimed %+v, want a, revived", j)
			}
		})
	}
}

// TestEnqueueCorruptOptionKeys: a job whose unique key, rate bucket or
// quarantine hold list holds another type is refused alone (ErrMalformed,
// nothing written for it); the call's other jobs are added. Before, the
// script raised after adding the jobs before it, and all were reported
// failed: sent again as the docs advise, those were added twice.
func TestEnqueueCorruptOptionKeys(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		job     store.NewJob
		corrupt func(f *fixture)
	}{
		{"unique key", store.NewJob{Local: "bad", Unique: store.Unique{Key: "u"}}, func(f *fixture) { f.rdb.HSet(f.ctx, f.p.Unique("u"), "a", "b") }},
		{"rate bucket", store.NewJob{Local: "bad", Limits: store.Limits{RateClass: "r", RateJobs: 1, RatePer: time.Second, RateBurst: 1}},
			func(f *fixture) { f.overwrite(f.p.RateBucket("r")) }},
		{"hold list", store.NewJob{Local: "bad", Hold: "fp"}, func(f *fixture) { f.overwrite(f.p.HeldOn("fp")) }},
	}
	for _, b := range backends(t) {
		for _, tc := range cases {
			t.Run(b.name+"/"+tc.name, func(t *testing.T) {
				f := newFixture(t, b)
				tc.corrupt(f)
				jobs := []store.NewJob{{Local: "a"}, tc.job, {Local: "c"}}
				for i := range jobs {
					jobs[i].Kind, jobs[i].Payload, jobs[i].MaxAttempts = "k", []byte("x"), 3
				}
				res, err := f.st.Enqueue(f.ctx, f.p, jobs)
				if err != nil {
					t.Fatalf("enqueue: %v", err)
				}
				if res[0].Status != store.Added || res[2].Status != store.Added {
					t.Errorf("the other jobs: %+v, want added", res)
				}
				if !errors.Is(res[1].Err, store.ErrMalformed) {
					t.Errorf("bad: %+v, want ErrMalformed", res[1])
				}
				if n := f.rdb.Exists(f.ctx, f.p.Job("bad")).Val(); n != 0 {
					t.Errorf("the refused job was written")
				}
				if s := f.stats(); s["available"] != 2 {
					t.Errorf("stats %v, want 2 available", s)
				}
			})
		}
	}
}

// TestEnqueueHugeRateLimit: a rate class whose idle bucket would be kept
// for longer than Lua writes as an integer (a burst of 1e8 per 1,000 h)
// is enqueued. Before, PEXPIRE refused '7.2e+17' after the call's earlier
// jobs were written.
func TestEnqueueHugeRateLimit(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "a"}, store.NewJob{Local: "b",
				Limits: store.Limits{RateClass: "r", RateJobs: 1, RatePer: 1000 * time.Hour, RateBurst: 100_000_000}})
			if s := f.stats(); s["available"] != 2 {
				t.Errorf("stats %v, want 2 available", s)
			}
		})
	}
}

// TestCheckpointCorruptStepsKey: a checkpoint whose job's checkpoints key
// holds another type fails alone (ErrMalformed); the call's others are
// written and answered. Before, the whole call failed.
func TestCheckpointCorruptStepsKey(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "good"}, store.NewJob{Local: "bad"})
			held := f.claimLeases(2, "w")
			f.overwrite(f.p.Steps("bad"))
			rs, _ := f.st.Checkpoints(f.ctx, f.p, []store.Checkpoint{
				{Lease: held["good"], Field: "s", Record: []byte("r"), Mode: store.ModeOnce},
				{Lease: held["bad"], Field: "s", Record: []byte("r"), Mode: store.ModeOnce},
			})
			if rs[0].Err != nil || !errors.Is(rs[1].Err, store.ErrMalformed) {
				t.Fatalf("results %+v, want good ok and bad ErrMalformed", rs)
			}
			if v := f.rdb.Get(f.ctx, f.p.Steps("bad")).Val(); v != "overwritten" {
				t.Errorf("the corrupt checkpoints key holds %q now", v)
			}
		})
	}
}

// TestSignalCorruptCounter: a signal to a job whose signal counter is no
// integer HINCRBY takes is refused (ErrMalformed) before its idempotency
// key is marked: once the counter is repaired, the same signal is kept.
// Before, the mark was written first, and every later send answered
// Duplicate while the signal was never stored: for 'x' until one fix,
// and for what Lua reads as a whole number but HINCRBY refuses ('1.0',
// '01', '+1', ' 1', '1e0') until another.
func TestSignalCorruptCounter(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		for _, v := range []string{"x", "1.0", "01", "+1", " 1", "1e0"} {
			t.Run(b.name+"/"+v, func(t *testing.T) {
				f := newFixture(t, b)
				f.enqueue(store.NewJob{Local: "a"})
				f.rdb.HSet(f.ctx, f.p.Job("a"), keys.FieldSignalSeq, v)
				if _, err := f.st.Signal(f.ctx, f.ref("a"), "go", []byte("x"), "k1"); !errors.Is(err, store.ErrMalformed) {
					t.Fatalf("signal: %v, want ErrMalformed", err)
				}
				f.rdb.HDel(f.ctx, f.p.Job("a"), keys.FieldSignalSeq)
				r, err := f.st.Signal(f.ctx, f.ref("a"), "go", []byte("x"), "k1")
				if err != nil || r.Duplicate {
					t.Fatalf("signal after the repair: %+v %v, want it kept", r, err)
				}
			})
		}
	}
}
