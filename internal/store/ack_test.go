package store_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestAckOutcomes is the outcome table of docs/state-machine.md: every ack code, its counters
// and the state it leads to, on miniredis, redis-server and a cluster.
func TestAckOutcomes(t *testing.T) {
	t.Parallel()
	type want struct {
		State        string
		Attempt      int
		CrashAttempt int
		Reason       string
		ErrorClasses []string
		DueIn        time.Duration // for scheduled/retryable
		Position     string        // for available: "front" or "back" of the waiting list
		Result       string
	}
	cases := []struct {
		name     string
		ack      store.Ack
		maxAtt   int
		crashes  int  // crash_attempt before this attempt
		deadline bool // the job's deadline passes (store time) while it runs
		// the job has a deadline a minute on, which has not passed when a
		// worker (its clock ahead) reports it
		deadlineAhead bool
		want          want
		terminal      string // zset the job must be in, scored by deletion time
		retain        time.Duration
	}{
		{name: "ok completes with result", ack: store.Ack{Code: store.CodeOK, Data: []byte("res")},
			want: want{State: "completed", Result: "res"}, terminal: "completed", retain: retainCompleted},
		{name: "error retries with backoff", ack: store.Ack{Code: store.CodeRetry, Delay: 5 * time.Second, Message: "boom", Reason: "error"},
			want: want{State: "retryable", Attempt: 1, ErrorClasses: []string{"error"}, DueIn: 5 * time.Second}},
		{name: "timeout retries and names the timeout", ack: store.Ack{Code: store.CodeRetry, Delay: time.Second, Message: "attempt timed out after 1s", Reason: "timeout"},
			want: want{State: "retryable", Attempt: 1, ErrorClasses: []string{"timeout"}, DueIn: time.Second}},
		{name: "last error archives", maxAtt: 1, ack: store.Ack{Code: store.CodeRetry, Message: "boom", Reason: "error"},
			want: want{State: "archived", Attempt: 1, Reason: "attempts_exhausted", ErrorClasses: []string{"error"}}, terminal: "archived", retain: retainArchived},
		{name: "rate limited without delay is available again", ack: store.Ack{Code: store.CodeFree},
			want: want{State: "available", Position: "back"}},
		{name: "rate limited with delay is scheduled", ack: store.Ack{Code: store.CodeFree, Delay: time.Minute},
			want: want{State: "scheduled", DueIn: time.Minute}},
		{name: "snooze schedules without an attempt", ack: store.Ack{Code: store.CodeSnooze, Delay: time.Hour},
			want: want{State: "scheduled", DueIn: time.Hour}},
		{name: "skip archives at once", ack: store.Ack{Code: store.CodeSkip, Message: "not needed"},
			want: want{State: "archived", Reason: "skipped"}, terminal: "archived", retain: retainArchived},
		{name: "revoke cancels for good", ack: store.Ack{Code: store.CodeRevoke, Message: "customer left"},
			want: want{State: "cancelled", Reason: "revoked"}, terminal: "cancelled", retain: retainCancelled},
		{name: "deadline not passed in store time schedules the job at it", ack: store.Ack{Code: store.CodeDeadline, Message: "deadline"},
			deadlineAhead: true, want: want{State: "scheduled", DueIn: 10 * time.Second}},
		{name: "deadline archives", ack: store.Ack{Code: store.CodeDeadline, Message: "deadline"}, deadline: true,
			want: want{State: "archived", Reason: "deadline_exceeded", ErrorClasses: []string{"deadline"}}, terminal: "archived", retain: retainArchived},
		{name: "panic is a crash, retried after the crash delay", ack: store.Ack{Code: store.CodeCrash, Message: "panic: x", Data: []byte("stack"), Reason: "panic"},
			want: want{State: "retryable", CrashAttempt: 1, ErrorClasses: []string{"panic"}, DueIn: time.Second}},
		{name: "crash at the limit quarantines", crashes: 2, ack: store.Ack{Code: store.CodeCrash, Message: "panic: x", Reason: "panic"},
			want: want{State: "quarantined", CrashAttempt: 3, Reason: "crash_limit", ErrorClasses: []string{"panic"}}, terminal: "quarantined", retain: retainArchived},
		{name: "shutdown release goes back to the front", ack: store.Ack{Code: store.CodeRelease},
			want: want{State: "available", Position: "front"}},
		{name: "park archives with its reason", ack: store.Ack{Code: store.CodePark, Message: "no handler", Reason: "unknown_kind"},
			want: want{State: "archived", Reason: "unknown_kind", ErrorClasses: []string{"unknown_kind"}}, terminal: "archived", retain: retainArchived},
	}
	for _, b := range backends(t) {
		for _, tc := range cases {
			t.Run(b.name+"/"+tc.name, func(t *testing.T) {
				f := newFixture(t, b)
				maxAtt := tc.maxAtt
				if maxAtt == 0 {
					maxAtt = 3
				}
				job := store.NewJob{Local: "job", MaxAttempts: maxAtt}
				if tc.deadline || tc.deadlineAhead {
					job.Deadline = f.clk.Now().Add(10 * time.Second) // within the lease
				}
				f.enqueue(job)
				for range tc.crashes {
					j := f.claimOne("w0")
					if r := f.ack(j, store.Ack{Code: store.CodeCrash, Reason: "panic", Message: "earlier"}); r.Err != nil {
						t.Fatal(r.Err)
					}
					f.clk.Advance(time.Minute) // past the crash delay
				}
				j := f.claimOne("w1")
				f.enqueue(store.NewJob{Local: "waiting"}) // healthy work that arrived meanwhile
				if tc.deadline {
					f.clk.Advance(20 * time.Second) // past the deadline, not the lease
				}
				res := f.ack(j, tc.ack)
				if res.Err != nil || res.State != tc.want.State {
					t.Fatalf("ack = %+v, want state %s", res, tc.want.State)
				}
				got, recs := f.get("job")
				g := want{State: got.State, Attempt: got.Attempt, CrashAttempt: got.CrashAttempt, Reason: got.Reason, Result: string(got.Result)}
				for i, r := range recs {
					if i < len(recs)-tc.crashes {
						g.ErrorClasses = append(g.ErrorClasses, r.Class)
					}
				}
				if tc.want.DueIn > 0 {
					s, ok := f.due("job")
					if !ok {
						t.Fatal("job is not in the schedule")
					}
					g.DueIn = time.UnixMilli(int64(s)).Sub(epoch)
				}
				if tc.want.Position != "" {
					order := f.availableOrder(0)
					switch {
					case len(order) == 2 && order[0] == "job":
						g.Position = "front"
					case len(order) == 2 && order[1] == "job":
						g.Position = "back"
					default:
						t.Fatalf("available list %v", order)
					}
				}
				if diff := cmp.Diff(tc.want, g); diff != "" {
					t.Errorf("job after ack (-want +got):\n%s", diff)
				}
				if _, running := f.score(f.p.Running(), "job"); running {
					t.Error("job still in the running set")
				}
				if got.LeaseID != "" || got.Worker != "" {
					t.Errorf("lease not cleared: %q %q", got.LeaseID, got.Worker)
				}
				if tc.terminal != "" {
					s, ok := f.score(f.p.Terminal(tc.terminal), "job")
					if !ok || time.UnixMilli(int64(s)).Sub(f.clk.Now()) != tc.retain {
						t.Errorf("terminal set %s: score %v (present %v), want now+%s", tc.terminal, s, ok, tc.retain)
					}
				}
			})
		}
	}
}

// TestCrashErrorsDoNotMix: returned errors never count as crashes and
// crashes never as attempts.
func TestCrashErrorsDoNotMix(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "job", MaxAttempts: 10})
			seq := []store.Code{store.CodeRetry, store.CodeCrash, store.CodeRetry, store.CodeCrash}
			for _, c := range seq {
				j := f.claimOne("w")
				if r := f.ack(j, store.Ack{Code: c, Reason: "x"}); r.Err != nil {
					t.Fatal(r.Err)
				}
				f.clk.Advance(time.Minute) // past any backoff
			}
			got, _ := f.get("job")
			if got.Attempt != 2 || got.CrashAttempt != 2 {
				t.Fatalf("attempt %d crash_attempt %d, want 2 and 2", got.Attempt, got.CrashAttempt)
			}
		})
	}
}

// TestAckSameAttemptTwiceInOneCall: two outcomes of one attempt in the
// same call (a caller that batched an ack it had already queued) apply
// once: the second answers the state the first left, the effects and the
// counters move once. Before, both passed the identity check on fields
// read before the first ended the attempt, so the effects applied twice
// and the running count fell by two.
func TestAckSameAttemptTwiceInOneCall(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "x"}, store.NewJob{Local: "y"})
			held := f.claimLeases(2, "w")
			bal := f.key("bal")
			done := store.Ack{Lease: held["x"], Code: store.CodeOK, Commit: "cx", Effects: []sluicetype.Effect{fx("INCRBY", bal, "100")}}
			failed := store.Ack{Lease: held["y"], Code: store.CodeRetry, Delay: time.Minute, Message: "boom", Reason: "error"}
			res, _, err := f.st.Ack(f.ctx, f.p, []store.Ack{done, failed, done, failed})
			if err != nil {
				t.Fatal(err)
			}
			got := fmt.Sprintln(res[0].State, res[1].State, res[2].State, res[3].State)
			if got != "completed retryable completed retryable\n" {
				t.Fatalf("states %q, want completed retryable completed retryable", got)
			}
			if v := f.rdb.Get(f.ctx, bal).Val(); v != "100" {
				t.Fatalf("the completion's effect applied to %s, want once (100)", v)
			}
			if s := f.stats(); s["running"] != 0 || s["retryable"] != 1 {
				t.Fatalf("state counts %v, want running 0, retryable 1", s)
			}
			if j, _ := f.get("y"); j.Attempt != 1 {
				t.Fatalf("the failed job's attempt is %d, want 1", j.Attempt)
			}
		})
	}
}

// TestAckUnknownCode: an outcome whose code no release knows fails the
// call before anything is written, the outcomes before it in the call
// included: every job is still running under its lease.
func TestAckUnknownCode(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "x"}, store.NewJob{Local: "y"}, store.NewJob{Local: "z"})
			held := f.claimLeases(3, "w")
			_, _, err := f.st.Ack(f.ctx, f.p, []store.Ack{
				{Lease: held["x"], Code: store.CodeOK},
				{Lease: held["y"], Code: store.CodeRetry, Delay: time.Minute, Message: "boom", Reason: "error"},
				{Lease: held["z"], Code: store.Code("vanish")},
			})
			if err == nil || !strings.Contains(err.Error(), "unknown ack code vanish") {
				t.Fatalf("ack with an unknown code: %v, want the code refused", err)
			}
			for _, id := range []string{"x", "y", "z"} {
				if j, _ := f.get(id); j.State != "running" || j.Attempt != 0 {
					t.Errorf("%s: %s, attempt %d after a refused call; want running, attempt 0", id, j.State, j.Attempt)
				}
			}
			if s := f.stats(); s["running"] != 3 {
				t.Errorf("state counts %v, want running 3", s)
			}
		})
	}
}
