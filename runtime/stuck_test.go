package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/step"
)

// ignoreStop blocks until release, whatever its context says.
func ignoreStop(release <-chan struct{}) { <-release }

// deadlockedTracked is a tracked goroutine that deadlocks with its handler.
func deadlockedTracked(release <-chan struct{}) error {
	<-release
	return nil
}

// TestStuckIgnoredStop: a handler that ignores its timeout's cancellation
// is settled without it after CancelGrace, and reported stuck
// StuckAfterStop after it was told to stop, with the evidence: the cause,
// how long, its step and cursor, its stack. The job shows the evidence.
func TestStuckIgnoredStop(t *testing.T) {
	t.Parallel()
	const (
		timeout = 5 * time.Second
		after   = 30 * time.Second // the default StuckAfterStop
		grace   = time.Second      // the default CancelGrace
	)
	start := fakeStart()
	clk := newTestClock(start)
	e := newEnv(t, clk)
	started := testkit.Chan[string]()
	release := make(chan struct{})
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		cur, err := step.NewCursor[int](ctx, "rows", 1)
		if err != nil {
			return err
		}
		for i := 1; i <= 3; i++ {
			if err := cur.Advance(ctx, i); err != nil {
				return err
			}
		}
		started <- job.ID
		ignoreStop(release)
		return nil
	}))
	stuck := testkit.Chan[runtime.Stuck]()
	e.startWorker(reg, runtime.Options{
		Clock: clk, IdlePoll: time.Hour, MaintenanceInterval: time.Hour,
		Backoff: func(int) time.Duration { return time.Hour },
		OnStuck: func(_ context.Context, s runtime.Stuck) { stuck <- s },
	})
	t.Cleanup(func() { close(release) })
	id := e.Enqueue(workArgs{N: 1}, flow.WithTimeout(timeout))
	testkit.Recv(t, started, "the handler to start")
	clk.waitTimers(t, timeout, 1)
	clk.Advance(timeout)
	clk.waitTimers(t, grace, 1)
	clk.waitTimers(t, after, 1)
	clk.Advance(grace)
	settled := e.WaitState(id, flow.StateRetryable) // without the handler
	clk.Advance(after - grace - time.Millisecond)
	testkit.NoRecv(t, stuck, "a stuck report before StuckAfterStop")
	clk.Advance(time.Millisecond)

	s := testkit.Recv(t, stuck, "the stuck report")
	if s.Case != runtime.IgnoredStop || !errors.Is(s.Cause, runtime.ErrTimeout) {
		t.Errorf("case %s cause %v, want %s with ErrTimeout", s.Case, s.Cause, runtime.IgnoredStop)
	}
	if s.Job.ID != id || s.Job.Fence != 1 || s.LeaseID == "" || s.Job.Kind != "work" {
		t.Errorf("job %+v lease %q", s.Job, s.LeaseID)
	}
	if !s.Since.Equal(start.Add(timeout)) || s.For != after {
		t.Errorf("since %v for %s, want %v for %s", s.Since, s.For, start.Add(timeout), after)
	}
	if s.Step != "rows" || fmt.Sprint(s.Cursor) != "3" {
		t.Errorf("step %q cursor %v, want rows at 3", s.Step, s.Cursor)
	}
	if !strings.Contains(string(s.Stack), "runtime_test.ignoreStop") {
		t.Errorf("stack does not show the handler:\n%s", s.Stack)
	}
	j := e.Job(id)
	got := j.Stuck
	if got == nil {
		t.Fatal("no stuck evidence on the job")
	}
	if got.Case != "ignored_stop" || got.Fence != 1 || got.LeaseID != s.LeaseID || got.Step != "rows" ||
		got.Cursor != "3" || !got.Since.Equal(s.Since) || !strings.Contains(got.Why, "timed out") ||
		!strings.Contains(got.Stack, "runtime_test.ignoreStop") {
		t.Errorf("job's stuck evidence: %+v", got)
	}
	if j.State != settled.State || j.Attempt != settled.Attempt {
		t.Errorf("the evidence changed the job: %+v, was %+v", summarize(j), summarize(settled))
	}
}

// TestStuckNoProgress: a handler that deadlocks (with a tracked goroutine)
// while its lease is renewed is reported once StuckNoProgress passed
// without a checkpoint or progress report, with both goroutines' stacks.
func TestStuckNoProgress(t *testing.T) {
	t.Parallel()
	const (
		lease = 30 * time.Second
		renew = 9 * time.Second
		limit = 20 * time.Second
		tick  = limit / 4
	)
	start := fakeStart()
	clk := newTestClock(start)
	e := newEnv(t, clk)
	started := testkit.Chan[string]()
	release := make(chan struct{})
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		if err := step.Do(ctx, "load", func(context.Context) error { return nil }); err != nil {
			return err
		}
		return step.Do(ctx, "wait", func(ctx context.Context) error {
			if err := runtime.Go(ctx, func(context.Context) error { return deadlockedTracked(release) }); err != nil {
				return err
			}
			started <- job.ID
			ignoreStop(release)
			return nil
		})
	}))
	stuck := testkit.Chan[runtime.Stuck]()
	e.startWorker(reg, runtime.Options{
		Clock: clk, Lease: lease, RenewInterval: renew, StuckNoProgress: limit,
		IdlePoll: time.Hour, MaintenanceInterval: time.Hour,
		OnStuck: func(_ context.Context, s runtime.Stuck) { stuck <- s },
	})
	t.Cleanup(func() { close(release) })
	id := e.Enqueue(workArgs{N: 1})
	testkit.Recv(t, started, "the handler to start")
	clk.waitTimers(t, tick, 1)
	clk.waitTimers(t, renew, 1)
	clk.Advance(limit - tick)
	clk.waitTimers(t, tick, 2)
	clk.waitTimers(t, renew, 2) // renewed at limit-tick
	testkit.NoRecv(t, stuck, "a stuck report before StuckNoProgress")
	clk.Advance(tick)

	s := testkit.Recv(t, stuck, "the stuck report")
	if s.Case != runtime.NoProgress || s.Cause != nil || s.Job.ID != id || s.Job.Fence != 1 {
		t.Errorf("case %s cause %v job %+v", s.Case, s.Cause, s.Job)
	}
	if !s.Since.Equal(start) || s.For != limit || s.Step != "wait" || s.Cursor != nil {
		t.Errorf("since %v for %s step %q cursor %v, want since the claim, %s, step wait", s.Since, s.For, s.Step, s.Cursor, limit)
	}
	for _, fn := range []string{"runtime_test.ignoreStop", "runtime_test.deadlockedTracked"} {
		if !strings.Contains(string(s.Stack), fn) {
			t.Errorf("stack does not show %s:\n%s", fn, s.Stack)
		}
	}
	j := e.Job(id)
	if want := start.Add(limit - tick + lease); j.State != flow.StateRunning || !j.LeaseExpiry.Equal(want) {
		t.Errorf("job %s lease expiry %v, want running and renewed to %v", j.State, j.LeaseExpiry, want)
	}
	if got := j.Stuck; got == nil || got.Case != "no_progress" || got.Step != "wait" || got.Fence != 1 ||
		!strings.Contains(got.Stack, "runtime_test.deadlockedTracked") {
		t.Errorf("job's stuck evidence: %+v", got)
	}
	clk.Advance(2 * limit)
	clk.waitTimers(t, tick, 4) // the watch checked again
	testkit.NoRecv(t, stuck, "a second report of the same case")
}

// TestStuckNotReported: a handler that returns when told to stop, and one
// that keeps reporting progress, are never reported stuck.
func TestStuckNotReported(t *testing.T) {
	t.Parallel()
	t.Run("returns when stopped", func(t *testing.T) {
		t.Parallel()
		const timeout = 5 * time.Second
		clk := newTestClock(fakeStart())
		e := newEnv(t, clk)
		reg := flow.NewRegistry()
		testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
			<-ctx.Done()
			return ctx.Err()
		}))
		stuck := testkit.Chan[runtime.Stuck]()
		o := runtime.Options{
			Clock: clk, IdlePoll: time.Hour, MaintenanceInterval: time.Hour,
			Backoff: func(int) time.Duration { return time.Hour },
			OnStuck: func(_ context.Context, s runtime.Stuck) { stuck <- s },
		}
		w := e.startWorker(reg, o)
		id := e.Enqueue(workArgs{N: 1}, flow.WithTimeout(timeout))
		clk.waitTimers(t, timeout, 1)
		clk.Advance(timeout)
		e.WaitState(id, flow.StateRetryable)
		clk.waitTimers(t, 30*time.Second, 1)
		clk.Advance(time.Minute)
		if !w.stop(clk, o) {
			t.Fatal("worker did not stop")
		}
		testkit.NoRecv(t, stuck, "stuck report")
		if j := e.Job(id); j.Stuck != nil {
			t.Errorf("stuck evidence on the job: %+v", j.Stuck)
		}
	})
	t.Run("keeps progressing", func(t *testing.T) {
		t.Parallel()
		const (
			limit = 20 * time.Second
			tick  = limit / 4
			steps = 10 // 50s
		)
		clk := newTestClock(fakeStart())
		e := newEnv(t, clk)
		report, reported := make(chan int), testkit.Chan[error]()
		reg := flow.NewRegistry()
		testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
			for {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case i := <-report:
					reported <- runtime.ReportProgress(ctx, float64(i*10), fmt.Sprintf("step %d", i))
				}
			}
		}))
		stuck := testkit.Chan[runtime.Stuck]()
		o := runtime.Options{
			Clock: clk, StuckNoProgress: limit, Lease: time.Hour, IdlePoll: time.Hour, MaintenanceInterval: time.Hour,
			OnStuck: func(_ context.Context, s runtime.Stuck) { stuck <- s },
		}
		w := e.startWorker(reg, o)
		id := e.Enqueue(workArgs{N: 1})
		for i := 1; i <= steps; i++ {
			clk.waitTimers(t, tick, i)
			clk.Advance(tick)
			report <- i
			if err := testkit.Recv(t, reported, "a progress report"); err != nil {
				t.Fatalf("report %d: %v", i, err)
			}
		}
		clk.waitTimers(t, tick, steps+1)
		if j := e.Job(id); j.State != flow.StateRunning || j.Tracking == nil || j.Tracking.Percent != steps*10 {
			t.Errorf("job %s tracking %+v", j.State, j.Tracking)
		}
		if !w.stop(clk, o) {
			t.Fatal("worker did not stop")
		}
		testkit.NoRecv(t, stuck, "stuck report")
	})
}

// TestStuckIgnoredShutdown: a handler that ignores the shutdown window's
// cancellation, with the default StuckAfterStop (30 s), is reported stuck
// with cause ErrShutdown as Run returns, which is the last the worker can
// tell of it. Before, the stuck watch was dropped when Run returned,
// seconds after the stop: OnStuck, documented to see every attempt that
// ignores a stop (shutdown among the causes), saw none.
func TestStuckIgnoredShutdown(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	started := testkit.Chan[string]()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		started <- job.ID
		ignoreStop(release)
		return nil
	}))
	stuck := testkit.Chan[runtime.Stuck]()
	w := e.StartWorker(reg, runtime.Options{
		ShutdownWindow: 100 * time.Millisecond, CancelGrace: 100 * time.Millisecond, Logger: testkit.Quiet,
		OnStuck: func(_ context.Context, s runtime.Stuck) { stuck <- s },
	})
	id := e.Enqueue(workArgs{N: 1})
	testkit.Recv(t, started, "the handler to start")
	w.Cancel()
	select {
	case <-w.Done():
	case <-time.After(waitTimeout):
		t.Fatal("Run did not return")
	}
	select {
	case s := <-stuck:
		if s.Case != runtime.IgnoredStop || !errors.Is(s.Cause, runtime.ErrShutdown) || s.Job.ID != id {
			t.Errorf("stuck report: case %s cause %v job %s, want %s with ErrShutdown for %s", s.Case, s.Cause, s.Job.ID, runtime.IgnoredStop, id)
		}
		if !strings.Contains(string(s.Stack), "runtime_test.ignoreStop") {
			t.Errorf("stack does not show the handler:\n%s", s.Stack)
		}
	default:
		t.Error("a handler that ignored the shutdown's cancellation was not reported stuck by the time Run returned")
	}
}
