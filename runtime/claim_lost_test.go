package runtime_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/step"
)

type lostClaimArgs struct{}

func (lostClaimArgs) Kind() string { return "lost_claim" }

// TestClaimReplyLostChargesNoCrash: a claim that Redis ran but whose reply
// the worker never got (lost past go-redis's retries: a network blip)
// leased the job to an attempt that never runs. The worker must get the
// job back (a claim retried under the same call ID is answered from its
// call record, lua/claim.lua) rather than leave it leased to nobody until
// the lease runs out and the reaper charges it a crash it never had
// (crash_attempt+1, a suspect, quarantined at the crash limit).
func TestClaimReplyLostChargesNoCrash(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	reg := flow.NewRegistry()
	if err := flow.Register(reg, func(ctx context.Context, job *flow.Job[lostClaimArgs]) error { return nil }); err != nil {
		t.Fatal(err)
	}
	id := e.Enqueue(lostClaimArgs{})
	hook := &testkit.LoseFirstReply{Script: lua.Claim}
	e.RDB.AddHook(hook)
	start := time.Now()
	e.StartWorker(reg, runtime.Options{Lease: 3 * time.Second, MaintenanceInterval: 200 * time.Millisecond})
	j := e.WaitState(id, flow.StateCompleted)
	if !hook.Lost.Load() {
		t.Fatal("no claim reply was lost")
	}
	if j.CrashAttempt != 0 {
		t.Errorf("crash_attempt %d after a lost claim reply (completed after %s), want 0: the job never crashed",
			j.CrashAttempt, time.Since(start).Round(time.Millisecond))
	}
}

type lostCommitArgs struct{}

func (lostCommitArgs) Kind() string { return "lost_commit" }

// TestStepCommitReplyLostCostsNoAttempt: a step commit that Redis ran
// (its checkpoint and effects are written) but whose reply was lost past
// go-redis's retries is not a failed step. Its call ID comes from its
// content (job, lease, fence, step, record), so sending the same commit
// again is answered from its call record, as the worker does for an ack
// (flushAcks); but the worker sends a commit once, the step returns the
// network error, and the job is charged an attempt (and a retry backoff,
// or archived when it had one attempt) for a step that succeeded.
func TestStepCommitReplyLostCostsNoAttempt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	reg := flow.NewRegistry()
	var runs atomic.Int64
	if err := flow.Register(reg, func(ctx context.Context, job *flow.Job[lostCommitArgs]) error {
		return step.Do(ctx, "charge", func(context.Context) error { runs.Add(1); return nil })
	}); err != nil {
		t.Fatal(err)
	}
	id := e.Enqueue(lostCommitArgs{})
	hook := &testkit.LoseFirstReply{Script: lua.Step}
	e.RDB.AddHook(hook)
	e.StartWorker(reg, runtime.Options{})
	j := e.PollState(id, flow.StateCompleted)
	if !hook.Lost.Load() {
		t.Fatal("no commit reply was lost")
	}
	if j.Attempt != 0 || runs.Load() != 1 {
		t.Errorf("attempt %d, step run %d times; want 0 and once: the commit went through", j.Attempt, runs.Load())
	}
}

// failingClaims is a go-redis hook that, while on, fails every call of
// the claim script before it reaches Redis, and counts them on failed.
type failingClaims struct {
	on     atomic.Bool
	failed chan struct{}
}

func (h *failingClaims) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *failingClaims) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		if !h.on.Load() || len(args) < 2 || !lua.Claim.Is(cmd.Name(), fmt.Sprint(args[1])) {
			return next(ctx, cmd)
		}
		select {
		case h.failed <- struct{}{}:
		default:
		}
		cmd.SetErr(testkit.ErrInjected)
		return testkit.ErrInjected
	}
}

func (h *failingClaims) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestRunAgainAfterStopDuringClaimRetry: a Run stopped while a failed
// claim waits to be sent again leaves the worker all of its slots, so
// that a later Run of the same worker has all of its Concurrency: with
// one slot, a slot kept would leave it claiming nothing for ever.
func TestRunAgainAfterStopDuringClaimRetry(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	reg := flow.NewRegistry()
	if err := flow.Register(reg, func(ctx context.Context, job *flow.Job[lostClaimArgs]) error { return nil }); err != nil {
		t.Fatal(err)
	}
	hook := &failingClaims{failed: make(chan struct{}, 1)}
	hook.on.Store(true)
	e.RDB.AddHook(hook)
	w, err := runtime.NewWorker(e.RDB, reg, runtime.Options{Namespace: e.NS, Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	for range 2 { // the first claim failed, and the worker sent it again
		testkit.Recv(t, hook.failed, "a claim to fail")
	}
	cancel()
	if err := testkit.Recv(t, done, "the worker to stop"); err != nil {
		t.Fatal(err)
	}
	hook.on.Store(false)
	id := e.Enqueue(lostClaimArgs{})
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	go func() { done <- w.Run(ctx) }()
	e.PollState(id, flow.StateCompleted) // this worker sends no test signals
	cancel()
	testkit.Recv(t, done, "the worker to stop")
}
