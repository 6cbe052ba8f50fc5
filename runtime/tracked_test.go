package runtime_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sluicetype"
)

// trackedEnv is a worker with one handler for the tracked-goroutine tests.
func trackedEnv(t *testing.T, work func(ctx context.Context, job *flow.Job[workArgs]) error) *env {
	t.Helper()
	e, _ := trackedEnvClock(t, work)
	return e
}

func trackedEnvClock(t *testing.T, work func(ctx context.Context, job *flow.Job[workArgs]) error) (*env, *testClock) {
	t.Helper()
	clk := newTestClock(fakeStart())
	e := newEnv(t, clk)
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, work))
	e.startWorker(reg, runtime.Options{CrashDelay: noCrashDelay,
		Clock: clk, IdlePoll: time.Hour, MaintenanceInterval: time.Hour, Backoff: func(int) time.Duration { return 0 },
	})
	return e, clk
}

// TestTrackedSuccessWaits: a handler that returns nil while a tracked
// goroutine runs is not acked until that goroutine returns; Go after the
// attempt is over fails.
func TestTrackedSuccessWaits(t *testing.T) {
	t.Parallel()
	started, release := testkit.Chan[*runtime.Attempt](), make(chan struct{})
	states := testkit.Chan[string]()
	var e *env
	e = trackedEnv(t, func(ctx context.Context, job *flow.Job[workArgs]) error {
		a, _ := runtime.AttemptFrom(ctx)
		return a.Go(func(ctx context.Context) error {
			started <- a
			<-release
			j, err := e.Client.Job(ctx, job.ID)
			if err != nil {
				return err
			}
			states <- j.State
			return nil
		})
	})
	id := e.Enqueue(workArgs{N: 1})
	a := testkit.Recv(t, started, "the tracked goroutine to start")
	e.Sig.Tracked.WaitFor(t, func(j testsignal.Job) bool { return j.JobID == id }) // the worker waits for it
	if j := e.Job(id); j.State != flow.StateRunning {
		t.Fatalf("job %s while tracked work runs, want running", j.State)
	}
	close(release)
	if s := testkit.Recv(t, states, "the tracked goroutine's view"); s != flow.StateRunning {
		t.Errorf("the tracked goroutine saw the job %s, want running", s)
	}
	e.WaitState(id, flow.StateCompleted)
	if err := a.Go(func(context.Context) error { return nil }); !errors.Is(err, runtime.ErrAttemptDone) {
		t.Errorf("Go after the attempt: %v, want ErrAttemptDone", err)
	}
}

// TestTrackedFailure: the first tracked failure fails the attempt and
// cancels the handler and the other tracked goroutines with
// ErrTrackedFailed; a failure after the handler returned nil fails it
// too; a tracked panic is a crash.
func TestTrackedFailure(t *testing.T) {
	t.Parallel()
	t.Run("first error cancels", func(t *testing.T) {
		t.Parallel()
		causes := testkit.Chan[error]()
		e := trackedEnv(t, func(ctx context.Context, job *flow.Job[workArgs]) error {
			if err := runtime.Go(ctx, func(ctx context.Context) error {
				<-ctx.Done()
				causes <- context.Cause(ctx)
				return errors.New("sibling cancelled")
			}); err != nil {
				return err
			}
			if err := runtime.Go(ctx, func(context.Context) error { return errors.New("tracked boom") }); err != nil {
				return err
			}
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return ctx.Err()
		})
		id := e.Enqueue(workArgs{N: 1}, flow.WithMaxAttempts(1))
		for range 2 {
			if c := testkit.Recv(t, causes, "a cancellation"); !errors.Is(c, runtime.ErrTrackedFailed) || !strings.Contains(c.Error(), "tracked boom") {
				t.Errorf("cancelled with %v, want ErrTrackedFailed wrapping tracked boom", c)
			}
		}
		j := e.WaitState(id, flow.StateArchived)
		if j.Reason != "attempts_exhausted" || j.LastError != "tracked boom" {
			t.Errorf("archived with %q, last error %q; want attempts_exhausted, tracked boom", j.Reason, j.LastError)
		}
	})
	t.Run("handler ignores the cancellation", func(t *testing.T) {
		t.Parallel()
		release := make(chan struct{})
		e, clk := trackedEnvClock(t, func(ctx context.Context, job *flow.Job[workArgs]) error {
			if err := runtime.Go(ctx, func(context.Context) error { return errors.New("tracked boom") }); err != nil {
				return err
			}
			<-release
			return nil
		})
		t.Cleanup(func() { close(release) })
		id := e.Enqueue(workArgs{N: 1}, flow.WithMaxAttempts(1))
		clk.waitTimers(t, time.Second, 1) // the CancelGrace of the cancelled handler
		clk.Advance(time.Second)
		j := e.WaitState(id, flow.StateArchived) // settled without the handler
		if !strings.Contains(j.LastError, "tracked boom") {
			t.Errorf("last error %q, want the tracked failure", j.LastError)
		}
	})
	t.Run("panic while the handler ignores the cancellation", func(t *testing.T) {
		// still a crash, with its stack: it was counted an error when the
		// grace watch settled the job (found by an audit), so a panicking
		// job spent its attempts, not its crashes, and escaped quarantine
		t.Parallel()
		release := make(chan struct{})
		e, clk := trackedEnvClock(t, func(ctx context.Context, job *flow.Job[workArgs]) error {
			if job.CrashAttempt > 0 {
				return nil
			}
			if err := runtime.Go(ctx, func(context.Context) error { panic("tracked panic") }); err != nil {
				return err
			}
			<-release
			return nil
		})
		t.Cleanup(func() { close(release) })
		id := e.Enqueue(workArgs{N: 1})
		clk.waitTimers(t, time.Second, 1) // the CancelGrace of the cancelled handler
		clk.Advance(time.Second)
		j := e.WaitState(id, flow.StateCompleted)
		if j.CrashAttempt != 1 || j.Attempt != 0 || len(j.Errors) != 1 || j.Errors[0].Class != "panic" ||
			!strings.Contains(j.Errors[0].Message, "tracked panic") || j.Errors[0].Stack == "" {
			t.Errorf("after a tracked panic the handler ignored: %+v errors %+v, want one crash with its stack", summarize(j), j.Errors)
		}
	})
	t.Run("error after success", func(t *testing.T) {
		t.Parallel()
		e := trackedEnv(t, func(ctx context.Context, job *flow.Job[workArgs]) error {
			return runtime.Go(ctx, func(context.Context) error { return errors.New("late failure") })
		})
		id := e.Enqueue(workArgs{N: 1}, flow.WithMaxAttempts(1))
		if j := e.WaitState(id, flow.StateArchived); j.LastError != "late failure" {
			t.Errorf("last error %q, want late failure", j.LastError)
		}
	})
	t.Run("panic is a crash", func(t *testing.T) {
		t.Parallel()
		e := trackedEnv(t, func(ctx context.Context, job *flow.Job[workArgs]) error {
			if job.CrashAttempt > 0 {
				return nil
			}
			return runtime.Go(ctx, func(context.Context) error { panic("tracked panic") })
		})
		id := e.Enqueue(workArgs{N: 1})
		j := e.WaitState(id, flow.StateCompleted)
		if j.CrashAttempt != 1 || j.Attempt != 0 || len(j.Errors) != 1 || j.Errors[0].Class != "panic" ||
			!strings.Contains(j.Errors[0].Message, "tracked panic") {
			t.Errorf("after a tracked panic: %+v errors %+v, want one crash", summarize(j), j.Errors)
		}
	})
}

// TestProgressVisible: progress reports show on the job while it runs;
// reports closer than a second apart are coalesced and written a second
// after the last write.
func TestProgressVisible(t *testing.T) {
	t.Parallel()
	start := fakeStart()
	clk := newTestClock(start)
	e := newEnv(t, clk)
	errs, next := testkit.Chan[error](), make(chan struct{})
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		errs <- runtime.ReportProgress(ctx, 10, "loading rows")
		<-next
		errs <- runtime.ReportProgress(ctx, 101, "")
		errs <- runtime.ReportProgress(ctx, 50, "halfway")
		<-next
		return nil
	}))
	e.startWorker(reg, runtime.Options{Clock: clk, IdlePoll: time.Hour, MaintenanceInterval: time.Hour})
	id := e.Enqueue(workArgs{N: 1})
	testkit.Must(t, testkit.Recv(t, errs, "the first report"))
	e.Sig.Progress.Wait(t) // written before ReportProgress returned
	want := sluicetype.Tracking{Percent: 10, State: "loading rows", At: start, Fence: 1}
	if j := e.Job(id); j.State != flow.StateRunning || j.Tracking == nil || *j.Tracking != want {
		t.Fatalf("job %s tracking %+v, want running with %+v", j.State, j.Tracking, want)
	}
	next <- struct{}{}
	if err := testkit.Recv(t, errs, "the bad report"); !errors.Is(err, runtime.ErrInvalidArgument) {
		t.Errorf("reporting 101%%: %v, want ErrInvalidArgument", err)
	}
	testkit.Must(t, testkit.Recv(t, errs, "the second report"))
	if j := e.Job(id); *j.Tracking != want {
		t.Errorf("a report within a second of the last was written at once: %+v", j.Tracking)
	}
	clk.Advance(time.Second)
	e.Sig.Progress.Wait(t) // the coalesced report
	want = sluicetype.Tracking{Percent: 50, State: "halfway", At: start.Add(time.Second), Fence: 1}
	if j := e.Job(id); j.Tracking == nil || *j.Tracking != want {
		t.Errorf("job %s tracking %+v, want %+v", j.State, j.Tracking, want)
	}
	next <- struct{}{}
	e.WaitState(id, flow.StateCompleted)
}
