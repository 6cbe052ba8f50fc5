package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

// TestGracefulShutdown cancels Run's context with two jobs in flight: the
// worker claims nothing more, keeps renewing the leases during the
// shutdown window, lets the job that finishes inside the window complete,
// then cancels the other with cause ErrShutdown and hands it back
// (available, at the head of its list, no attempt or crash charged). Run
// returns nil.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	const (
		lease  = 30 * time.Second
		renew  = 9 * time.Second
		window = 20 * time.Second
	)
	start := fakeStart()
	clk := newTestClock(start)
	e := newEnv(t, clk)

	started := testkit.Chan[string]()
	releaseQuick := make(chan struct{})
	stubbornCause := testkit.Chan[error]()
	reg := flow.NewRegistry()
	// quick (workArgs) finishes when told to, inside the window.
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		started <- job.ID
		select {
		case <-releaseQuick:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}))
	// stubborn (slowArgs) runs until its context is cancelled.
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[slowArgs]) error {
		started <- job.ID
		<-ctx.Done()
		stubbornCause <- context.Cause(ctx)
		return ctx.Err()
	}))
	res, err := e.Client.EnqueueMany(context.Background(), flow.Item{Args: workArgs{N: 1}}, flow.Item{Args: slowArgs{N: 1}})
	testkit.Must(t, err)
	quick, stubborn := res[0].ID, res[1].ID

	w := e.startWorker(reg, runtime.Options{
		Clock: clk, Lease: lease, RenewInterval: renew, ShutdownWindow: window,
		Concurrency: 4, MaintenanceInterval: time.Hour, IdlePoll: time.Hour,
	})
	testkit.Recv(t, started, "a job to start")
	testkit.Recv(t, started, "both jobs to start")
	clk.waitTimers(t, renew, 1)

	w.Cancel()
	late := e.Enqueue(workArgs{N: 2}) // after shutdown began: must not be claimed
	clk.waitTimers(t, window, 1)      // the fetcher has stopped; the window is open

	// Leases are still renewed during the window.
	clk.Advance(renew)
	clk.waitTimers(t, renew, 2)
	for _, id := range []string{quick, stubborn} {
		j := e.Job(id)
		checkSummary(t, id+" in the window", j, summary{State: flow.StateRunning, Fence: 1, Holder: w.ID()})
		if want := start.Add(renew + lease); !j.LeaseExpiry.Equal(want) {
			t.Errorf("%s in the window: lease expires %v, want %v (renewed)", id, j.LeaseExpiry, want)
		}
	}

	close(releaseQuick)
	checkSummary(t, "quick job", e.WaitState(quick, flow.StateCompleted), summary{State: flow.StateCompleted, Fence: 1})
	testkit.NoRecv(t, stubbornCause, "stubborn job cancelled inside the window")

	clk.Advance(window - renew) // the window ends
	if cause := testkit.Recv(t, stubbornCause, "the stubborn job to be cancelled"); !errors.Is(cause, runtime.ErrShutdown) {
		t.Errorf("stubborn job cancelled with %v, want ErrShutdown", cause)
	}
	if err := w.wait(t); err != nil {
		t.Errorf("Run returned %v, want nil", err)
	}

	j := e.Job(stubborn)
	checkSummary(t, "stubborn job after shutdown", j, summary{State: flow.StateAvailable, Fence: 1})
	if len(j.Errors) != 0 {
		t.Errorf("stubborn job has errors %+v, want none", j.Errors)
	}
	// pushed to the worker's offer before it withdrew it, it was handed
	// back (its fence moved on, nothing charged); after, only listed
	lj := summarize(e.Job(late))
	if lj.Fence == 1 {
		lj.Fence = 0
	}
	if want := (summary{State: flow.StateAvailable}); lj != want {
		t.Errorf("job enqueued after shutdown began: got %+v, want %+v (fence 0 or 1)", lj, want)
	}
	if got, want := e.available(), []string{stubborn, late}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("available list %v, want the handed-back job first: %v", got, want)
	}
	testkit.NoRecv(t, started, "a job started after shutdown began")
}
