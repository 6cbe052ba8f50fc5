package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/runtime"
)

// TestClaimReplyLostPastHalfShortestLease: a claim Redis ran whose reply
// the worker learns is lost only after go-redis's retries (each waits a
// read timeout: 3 s by default) is sent again under its ID for as long as
// any lease it may have made lasts, and the job it leased runs, never
// charged. Before, it was sent again only within half the worker's
// shortest lease, whatever the kind of the jobs: a worker serving one
// kind with a 4 s lease never sent a lost claim again, and the job it had
// leased (a 30 s lease) waited for the reaper, which charged it a crash
// it never had (found by an audit).
func TestClaimReplyLostPastHalfShortestLease(t *testing.T) {
	t.Parallel()
	lostClaimCompletesUncharged(t, 3*time.Second, map[string]time.Duration{"slow": 4 * time.Second})
}

// TestClaimReplyLostPastHalfItsLease: a claim whose reply is found lost
// when its lease has run more than half out is sent again, and the job it
// brings back is handed back (a handler would start on a lease about to
// end), then claimed anew and run, never charged. Before, the claim was
// not sent again, and the reaper charged the job a crash.
func TestClaimReplyLostPastHalfItsLease(t *testing.T) {
	t.Parallel()
	lostClaimCompletesUncharged(t, 20*time.Second, nil)
}

// lostClaimCompletesUncharged loses the reply of a worker's first claim,
// found lost after lost (go-redis's read timeouts), and checks that the
// job it leased (a 30 s lease) completes with no crash charged.
func lostClaimCompletesUncharged(t *testing.T, lost time.Duration, kindLease map[string]time.Duration) {
	t.Helper()
	clk := newTestClock(fakeStart())
	e := newEnv(t, clk)
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error { return nil }))
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[slowArgs]) error { return nil }))
	id := e.Enqueue(workArgs{N: 1})
	hook := &testkit.LoseFirstReply{Script: lua.Claim, Meanwhile: func() { clk.Advance(lost) }}
	e.RDB.AddHook(hook)
	e.startWorker(reg, runtime.Options{Clock: clk, Lease: 30 * time.Second, KindLease: kindLease,
		RenewInterval: time.Second, MaintenanceInterval: time.Second, IdlePoll: time.Second})
	var j *flow.JobInfo
	for range 400 {
		time.Sleep(10 * time.Millisecond)
		clk.Advance(200 * time.Millisecond)
		if j = e.Job(id); j.State == flow.StateCompleted {
			break
		}
	}
	if !hook.Lost.Load() {
		t.Fatal("no claim reply was lost")
	}
	if j.State != flow.StateCompleted || j.CrashAttempt != 0 {
		t.Errorf("after a claim reply lost for %v: state %s, crash_attempt %d (orphan %+v), want completed with 0: the job never ran",
			lost, j.State, j.CrashAttempt, j.Orphan)
	}
}

// TestResentClaimRunsNoSecondSuspect: suspect isolation (claim.lua:
// "none for a worker that runs one already"). A claim of queue A, sent
// while the worker ran no suspect, leases A's suspect, and its reply is
// lost. The worker claims queue B meanwhile and starts B's suspect. It
// then sends A's claim again under its ID: the record answers A's
// suspect, which the worker must hand back, not start beside B's. Before,
// two jobs with a crash on record ran side by side: if one killed the
// process, the other was charged again (found by an audit).
func TestResentClaimRunsNoSecondSuspect(t *testing.T) {
	t.Parallel()
	clk := newTestClock(fakeStart())
	e := newEnv(t, clk)
	started := testkit.Chan[string]()
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		if job.CrashAttempt > 0 {
			started <- job.ID
		}
		select {
		case <-done:
		case <-ctx.Done():
		}
		return nil
	}))
	for _, q := range []string{"qa", "qb"} {
		id := e.Enqueue(workArgs{N: 1}, flow.WithQueue(q))
		ref, _ := keys.ParseRef(e.NS, id)
		testkit.Must(t, e.RDB.HSet(context.Background(), ref.Job(ref.Local), "c", 1).Err()) // a crash on record
	}
	hook := &testkit.LoseFirstReply{Script: lua.Claim}
	e.RDB.AddHook(hook)
	e.startWorker(reg, runtime.Options{Clock: clk, Queues: map[string]int{"qa": 1, "qb": 1},
		Lease: 30 * time.Second, RenewInterval: 10 * time.Second, MaintenanceInterval: time.Hour, IdlePoll: time.Hour})
	running := map[string]bool{}
	for range 200 {
		select {
		case id := <-started:
			running[id] = true
		case <-time.After(10 * time.Millisecond):
			clk.Advance(20 * time.Millisecond) // the failed claim's back-off
		}
		if len(running) == 2 {
			break
		}
	}
	if !hook.Lost.Load() {
		t.Fatal("no claim reply was lost")
	}
	if len(running) > 1 {
		t.Errorf("the worker runs %d jobs with a crash on record at once (%v), want at most one", len(running), running)
	}
}
