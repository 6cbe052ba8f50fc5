package runtime_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/runtime"
)

// TestExtendLease: ExtendLease renews the lease at once to the new length,
// which later renewals keep; a too short lease is refused. The worker
// numbers the renewals of the attempt in the order it sends them,
// ExtendLease's and its loop's alike (Redis applies none older than one
// it applied: lua/renew.lua).
func TestExtendLease(t *testing.T) {
	t.Parallel()
	const (
		lease    = 30 * time.Second
		renew    = 9 * time.Second
		extended = 2 * time.Minute
	)
	start := fakeStart()
	clk := newTestClock(start)
	e := newEnv(t, clk)
	errs := testkit.Chan[error]()
	release := make(chan struct{})
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		errs <- runtime.ExtendLease(ctx, renew)
		errs <- runtime.ExtendLease(ctx, extended)
		<-release
		return nil
	}))
	e.startWorker(reg, runtime.Options{
		Clock: clk, Lease: lease, RenewInterval: renew, IdlePoll: time.Hour, MaintenanceInterval: time.Hour,
	})
	id := e.Enqueue(workArgs{N: 1})
	if err := testkit.Recv(t, errs, "the short extension"); !errors.Is(err, runtime.ErrInvalidArgument) {
		t.Errorf("extending to the renewal interval: %v, want ErrInvalidArgument", err)
	}
	if err := testkit.Recv(t, errs, "the extension"); err != nil {
		t.Fatalf("ExtendLease: %v", err)
	}
	if j := e.Job(id); !j.LeaseExpiry.Equal(start.Add(extended)) {
		t.Errorf("lease expires %v, want %v", j.LeaseExpiry, start.Add(extended))
	}
	clk.waitTimers(t, renew, 1)
	clk.Advance(renew)
	clk.waitTimers(t, renew, 2)
	j := e.Job(id)
	if !j.LeaseExpiry.Equal(start.Add(renew + extended)) {
		t.Errorf("after a renewal the lease expires %v, want %v (the extended length)", j.LeaseExpiry, start.Add(renew+extended))
	}
	if got, want := e.rawJob(id)[keys.FieldRenewal], j.LeaseID+" 2"; got != want {
		t.Errorf("the last renewal applied is %q, want %q (ExtendLease's was 1, the loop's next 2)", got, want)
	}
	close(release)
	e.WaitState(id, flow.StateCompleted)
}

// takeOver starts worker B with its clock past lease, which reaps the
// job A holds and runs it (blocking until the test ends); it returns
// B's fence once B runs the job.
func takeOver(t *testing.T, e *env, start time.Time, lease time.Duration) int64 {
	t.Helper()
	started := testkit.Chan[int64]()
	release := make(chan struct{})
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		started <- job.Fence
		<-release
		return nil
	}))
	e.startWorker(reg, runtime.Options{CrashDelay: noCrashDelay,
		Clock: newTestClock(start.Add(lease + time.Second)), Lease: lease, MaintenanceInterval: time.Hour, IdlePoll: time.Hour,
	})
	t.Cleanup(func() { close(release) })
	// the job has a crash on record now (its lease ran out): a suspect,
	// which a worker hands back when another of the process runs one
	// (the count is the process's, and tests of this package run in
	// parallel), to claim it again with the next fence
	f := testkit.Recv(t, started, "B to take the job over")
	if f < 2 {
		t.Fatalf("B runs fence %d, want 2 or more", f)
	}
	return f
}

// TestLeaseLost: after another worker took the job over, ExtendLease
// reports ErrLeaseLost (and cancels the attempt), as does ReportProgress;
// a background renewal that finds the lease lost closes LeaseLost and
// cancels the handler and its tracked goroutines. The stale attempt's
// return is not acked.
func TestLeaseLost(t *testing.T) {
	t.Parallel()
	const (
		lease = 30 * time.Second
		renew = 9 * time.Second
	)
	for _, via := range []string{"ExtendLease", "renewal"} {
		t.Run(via, func(t *testing.T) {
			t.Parallel()
			start := fakeStart()
			clk := newTestClock(start)
			e := newEnv(t, clk)
			started, check := testkit.Chan[int64](), make(chan struct{})
			type seen struct {
				extend, progress, handler, tracked error
				closed                             bool
			}
			saw := testkit.Chan[seen]()
			reg := flow.NewRegistry()
			testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
				if job.Fence != 1 {
					// A's later attempt (B's, handed back as B stops at the
					// test's end): not what this test watches
					return nil
				}
				tracked := make(chan error, 1)
				if err := runtime.Go(ctx, func(ctx context.Context) error {
					<-ctx.Done()
					tracked <- context.Cause(ctx)
					return ctx.Err()
				}); err != nil {
					return err
				}
				started <- job.Fence
				var s seen
				if via == "ExtendLease" {
					<-check
					s.extend = runtime.ExtendLease(ctx, 0)
				} else {
					<-runtime.LeaseLost(ctx)
					s.extend = runtime.ExtendLease(ctx, 0)
				}
				select {
				case <-runtime.LeaseLost(ctx):
					s.closed = true
				default:
				}
				s.progress = runtime.ReportProgress(ctx, 50, "late")
				s.handler, s.tracked = context.Cause(ctx), <-tracked
				saw <- s
				return nil // not acked: the lease is gone
			}))
			a := e.startWorker(reg, runtime.Options{CrashDelay: noCrashDelay,
				Clock: clk, Lease: lease, RenewInterval: renew, Concurrency: 1,
				MaintenanceInterval: time.Hour, IdlePoll: time.Hour,
			})
			id := e.Enqueue(workArgs{N: 1})
			testkit.Recv(t, started, "A to start the job")
			fence := takeOver(t, e, start, lease)
			if via == "ExtendLease" {
				close(check)
			} else {
				clk.waitTimers(t, renew, 1)
				clk.Advance(renew)
			}
			s := testkit.Recv(t, saw, "A's handler to see the loss")
			want := seen{extend: runtime.ErrLeaseLost, progress: runtime.ErrLeaseLost, handler: runtime.ErrLeaseLost, tracked: runtime.ErrLeaseLost, closed: true}
			if s != want {
				t.Errorf("A's handler saw %+v, want %+v", s, want)
			}
			if s := e.Sig.Settled.WaitFor(t, func(s testsignal.Settled) bool { return s.JobID == id && s.Worker == a.ID() }); s.State != "" || !errors.Is(s.Err, runtime.ErrLeaseLost) {
				t.Errorf("A settled its attempt %+v, want nothing written: lease lost", s)
			}
			if n := a.InflightCount(); n != 0 {
				t.Errorf("%d attempts of A still in flight after it settled its only one", n)
			}
			checkSummary(t, "job after A's attempt", e.Job(id), summary{
				State: flow.StateRunning, CrashAttempt: 1, Fence: fence, Holder: e.Job(id).LeaseHolder, OrphanHolder: a.ID(), OrphanCount: 1,
			})
			if j := e.Job(id); j.Tracking != nil {
				t.Errorf("the stale attempt's progress was written: %+v", j.Tracking)
			}
		})
	}
}
