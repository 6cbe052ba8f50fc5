package runtime_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/runtime"
)

// blockingHandler registers a handler that reports its job's start, waits
// for its context to end and reports the cause; N=0 jobs return at once.
func blockingHandler(t *testing.T) (*flow.Registry, chan string, chan error) {
	started, causes := testkit.Chan[string](), testkit.Chan[error]()
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		if job.Args.N == 0 {
			return nil
		}
		started <- job.ID
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return ctx.Err()
	}))
	return reg, started, causes
}

// TestOperatorCancel: cancelling a running job cancels its handler's
// context at once (pub/sub) with cause ErrCancelled, its outcome is not
// written, and its slot runs the next job. The worker shows in the
// registry with the job it runs.
func TestOperatorCancel(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	reg, started, causes := blockingHandler(t)
	w := e.startWorker(reg, runtime.Options{Concurrency: 1, Lease: 3 * time.Second})
	id := e.Enqueue(workArgs{N: 1})
	testkit.Recv(t, started, "the handler to start")
	ctx := context.Background()
	// The registry lists the jobs of each renewal round's heartbeat: a
	// round in progress when the job started may not, the next one must.
	e.Sig.Renewed.Drain()
	for range 2 {
		e.Sig.Renewed.WaitFor(t, func(p testsignal.Pass) bool { return p.Worker == w.ID() })
	}
	ws, err := admin.New(e.Client).Workers(ctx)
	if err != nil || len(ws) != 1 || ws[0].ID != w.ID() || !slices.Equal(ws[0].Jobs, []string{id}) || ws[0].Concurrency != 1 {
		t.Fatalf("workers %+v (%v), want %s running %s", ws, err, w.ID(), id)
	}
	_, err = admin.New(e.Client).CancelJob(ctx, id)
	testkit.Must(t, err)
	if c := testkit.Recv(t, causes, "the handler's context to end"); !errors.Is(c, runtime.ErrCancelled) || !errors.Is(c, runtime.ErrLeaseLost) {
		t.Fatalf("cause %v, want ErrCancelled", c)
	}
	next := e.Enqueue(workArgs{N: 0})
	e.WaitState(next, flow.StateCompleted)
	checkSummary(t, "cancelled job", e.Job(id), summary{State: flow.StateCancelled, Reason: "operator", Fence: 2})
	if _, err := admin.New(e.Client).CancelJob(ctx, id); !errors.Is(err, admin.ErrWrongState) {
		t.Fatalf("cancel twice: %v", err)
	}
	if !w.stop(nil, runtime.Options{}) {
		t.Fatal("the worker did not stop")
	}
	if ws, err := admin.New(e.Client).Workers(ctx); err != nil || len(ws) != 0 {
		t.Fatalf("a stopped worker is still registered: %v, %v", ws, err)
	}
}

// TestCancelSeenAtRenewal: when the pub/sub message is missed, the next
// lease renewal reports the job cancelled and the handler's context ends
// with cause ErrCancelled.
func TestCancelSeenAtRenewal(t *testing.T) {
	t.Parallel()
	const renew = 7 * time.Second
	tc := newTestClock(fakeStart())
	e := newEnv(t, tc)
	reg, started, causes := blockingHandler(t)
	e.startWorker(reg, runtime.Options{Clock: tc, Concurrency: 1, RenewInterval: renew, IdlePoll: time.Hour})
	id := e.Enqueue(workArgs{N: 1})
	testkit.Recv(t, started, "the handler to start")
	// cancel.lua as the store runs it, but publishing where no one listens
	ref, _ := keys.ParseRef(e.NS, id)
	p := ref.Partition
	argv := []any{strconv.FormatInt(tc.Now().UnixMilli(), 10), p.Prefix(), keys.WakeChannel(e.NS, p.Queue), p.Index,
		3600000, 3600000, 3600000, 3, ref.Local, "nowhere"}
	if err := lua.Cancel.Run(context.Background(), e.RDB, p.Script(), argv...).Err(); err != nil {
		t.Fatal(err)
	}
	tc.waitTimers(t, renew, 1)
	tc.Advance(renew)
	if c := testkit.Recv(t, causes, "the handler's context to end"); !errors.Is(c, runtime.ErrCancelled) {
		t.Fatalf("cause %v, want ErrCancelled", c)
	}
	checkSummary(t, "cancelled job", e.Job(id), summary{State: flow.StateCancelled, Reason: "operator", Fence: 2})
}

// TestPausedQueue: a paused queue runs nothing until resumed; resuming
// wakes the idle worker.
func TestPausedQueue(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	id := e.Enqueue(workArgs{N: 0}) // registers the queue
	testkit.Must(t, admin.New(e.Client).PauseQueue(ctx, "default"))
	reg, _, _ := blockingHandler(t)
	w := e.startWorker(reg, runtime.Options{IdlePoll: time.Hour})
	// Idle after a claim that found the job's partition paused: that
	// claim set the idle flag, which makes the resume wake the worker.
	e.Sig.Idle.WaitFor(t, func(i testsignal.Idle) bool { return i.Worker == w.ID() })
	if n, err := e.RDB.Exists(ctx, e.partition().Idle()).Result(); err != nil || n != 1 {
		t.Fatalf("idle flag: %d (%v), want set", n, err)
	}
	if j := e.Job(id); j.State != flow.StateAvailable {
		t.Fatalf("paused queue ran job: %s", j.State)
	}
	st, err := admin.New(e.Client).QueueStats(ctx, "default", 0)
	if err != nil || st.Paused != 1 || st.Depth[flow.StateAvailable] != 1 {
		t.Fatalf("stats of the paused queue: %+v, %v", st, err)
	}
	testkit.Must(t, admin.New(e.Client).ResumeQueue(ctx, "default"))
	e.WaitState(id, flow.StateCompleted)
}
