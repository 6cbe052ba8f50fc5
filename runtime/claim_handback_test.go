package runtime_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/runtime"
)

// TestStopWhileClaimReplyLost: a worker stops while a claim that Redis
// ran, whose reply was lost, waits to be sent again. The worker sends it
// once more as it stops and hands back the job its first run leased:
// available at once, run by the next worker with no crash charged. Before,
// the job stayed leased to no attempt until reaped, and was charged a
// crash it never had (found by an audit).
func TestStopWhileClaimReplyLost(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[lostClaimArgs]) error { return nil }))
	id := e.Enqueue(lostClaimArgs{})
	var w atomic.Pointer[testkit.Worker]
	ready := make(chan struct{})
	hook := &testkit.LoseFirstReply{Script: lua.Claim, Meanwhile: func() {
		<-ready
		w.Load().Cancel() // the worker stops before it learns of the loss
	}}
	e.RDB.AddHook(hook)
	w.Store(e.StartWorker(reg, runtime.Options{Lease: time.Minute}))
	close(ready)
	testkit.Recv(t, w.Load().Done(), "the worker to stop")
	if !hook.Lost.Load() {
		t.Fatal("no claim reply was lost")
	}
	if j := e.Job(id); j.State != flow.StateAvailable {
		t.Fatalf("after the worker stopped: %s, want available (handed back), not leased to no attempt for a minute", j.State)
	}
	e.StartWorker(reg, runtime.Options{Lease: time.Minute})
	if j := e.PollState(id, flow.StateCompleted); j.CrashAttempt != 0 {
		t.Errorf("crash_attempt %d, want 0: the job never crashed", j.CrashAttempt)
	}
}

type busyArgs struct{}

func (busyArgs) Kind() string { return "busy" }

// TestClaimResentWithSlotsTaken: a claim whose reply was lost is sent
// again even when fewer slots are free than it asked for (taken
// meanwhile by a claim on another queue, whose job outlasts half the
// lease): the job it leased runs at once or is handed back, nothing
// charged. Before, the resend waited for all its slots, gave up at half
// the lease, and the job was reaped and charged a crash (found by an
// audit).
func TestClaimResentWithSlotsTaken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	reg := flow.NewRegistry()
	release := make(chan struct{}) // closed when the test is done: the worker then stops at once
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[lostClaimArgs]) error { return nil }))
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[busyArgs]) error {
		select { // outlasts half the lease
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}))
	a := e.Enqueue(lostClaimArgs{}, flow.WithQueue("a"))
	hook := &testkit.LoseFirstReply{Script: lua.Claim, Meanwhile: func() {
		e.Enqueue(busyArgs{}, flow.WithQueue("b")) // takes a slot while the claim on a waits to be resent
		time.Sleep(50 * time.Millisecond)
	}}
	e.RDB.AddHook(hook)
	e.StartWorker(reg, runtime.Options{Queues: map[string]int{"a": 1, "b": 1}, Concurrency: 2, ClaimBatch: 2,
		Lease: 2 * time.Second, MaintenanceInterval: 100 * time.Millisecond, CrashDelay: -1})
	j := e.PollState(a, flow.StateCompleted)
	close(release)
	if !hook.Lost.Load() {
		t.Fatal("no claim reply was lost")
	}
	if j.CrashAttempt != 0 {
		t.Errorf("crash_attempt %d, want 0: the job never crashed", j.CrashAttempt)
	}
}
